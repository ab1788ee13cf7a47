"""The dataset card's section on the human label votes (Northcutt et al. 2021) and its citation."""
from __future__ import annotations

from collections.abc import Container

from ..registry import bibtex, get_dataset, get_file, label_annotations

__all__ = ["has_label_votes", "card_section", "study_bibtex"]

#: The column that marks an export as carrying the study's votes.
MARKER = "label_issue"


def has_label_votes(features: Container[str]) -> bool:
    """Whether an exported config has the label-vote columns."""
    return MARKER in features


def study_bibtex() -> list[str]:
    """BibTeX of every study whose votes an export can carry."""
    return [bibtex(s) for s in dict.fromkeys(a.study for a in label_annotations()) if bibtex(s)]


def card_section(config_name: str) -> list[str]:
    """Markdown lines: what the columns mean, which rows the study examined, how to cite it."""
    anns = label_annotations()
    if not anns:
        return []
    a = anns[0]
    info, remote = get_dataset(a.study), get_file(a.file)
    return [
        "### Known label errors (human label votes)", "",
        f"{info.citation} {info.description}",
        "",
        "Columns: `label_votes_given`, `label_votes_guessed`, `label_votes_neither` (how many of the "
        "5 workers chose the given label, the study's guessed label, or neither), `suggested_label` "
        "(the label at least 3 of 5 chose; -1 where no label got a majority), `label_issue` "
        f"(the paper's rule: {a.rule}). Rows the study did not examine (every row outside MNIST's "
        "test set, and 9,900 of its 10,000) have votes and `suggested_label` -1 and `label_issue` "
        "false: they were not checked, which is not the same as correct.",
        "",
        f"Source: `{remote.urls[0]}` (sha256 `{remote.sha256}`), licence {info.licence} "
        f"`mnistforge.load({config_name!r}, 'test', label_issues='exclude')` drops the flagged rows; "
        "`label_issues='relabel'` uses the majority label where there is one and drops the rest.",
        "",
    ]
