"""How much of a classifier's error sits on known label problems of MNIST's test set.

Two lists of 0-based positions in the official 10,000-image test set (QMNIST's first 10,000 test rows are the same
images in the same order): the **known label issues** of Northcutt, Athalye & Mueller (2021), 15 images where fewer than
3 of 5 human workers chose the given label (:mod:`mnistforge.loaders.label_issues`), and **Keysers' common errors**, the
8 images all four systems of Keysers (2006) misclassify (``mnistforge/data/keysers2006.tsv``).  :func:`known_problems`
finds them for a test set (checking, when the labels are at hand, that it is the one the study examined);
:func:`account` says how many of each system's errors fall on them and what the error rates and paired comparisons
become without them.
"""
from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MnistforgeError, OfflineError
from ..io.label_votes import LabelVotes, dense_columns, issue_mask
from ..io.types import StrPath
from ..loaders import resolve_target
from ..loaders.label_issues import study_votes
from ..loaders.names import parse_split, rows_of
from ..loaders.origins import FolderOrigin
from ..registry import get_dataset
from . import significance as sg
from .errorlists import load_example

logger = logging.getLogger(__name__)

__all__ = ["KnownProblems", "keysers_common_errors", "known_problems", "account",
           "format_account", "evaluation_account"]


@dataclass
class KnownProblems:
    """Flags over the rows of one test set (``n`` rows)."""

    test: str
    label_issue: np.ndarray
    keysers_common: np.ndarray
    #: the label most workers chose (-1: not examined, or no majority)
    suggested: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.label_issue.size)

    @property
    def either(self) -> np.ndarray:
        both: np.ndarray = self.label_issue | self.keysers_common
        return both


def keysers_common_errors() -> np.ndarray:
    """0-based MNIST test indices that SC, SVM, IDM and CNN of Keysers (2006) all miss.

    >>> keysers_common_errors().tolist()
    [947, 1901, 2130, 2182, 3422, 5937, 9729, 9850]
    """
    base = [s.wrong for s in load_example("keysers2006") if s.name != "CC"]
    return np.flatnonzero(np.logical_and.reduce(base))


def _flags(votes: LabelVotes, offset: int, n: int,
           rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(label issue, Keysers common, suggested) over ``n`` rows, from study/MNIST positions + ``offset``."""
    total = n if rows is None else int(rows.max(initial=-1)) + 1
    issue = np.zeros(max(total, 1), dtype=bool)
    keys = np.zeros_like(issue)
    for mask, ids in ((issue, votes.ids[issue_mask(votes)]), (keys, keysers_common_errors())):
        at = ids + offset
        at = at[(at >= 0) & (at < total)]
        mask[at] = True
    sug = dense_columns(votes, max(total, 1), offset)["suggested_label"].astype(np.int64)
    pick = rows if rows is not None else slice(0, n)
    return issue[pick], keys[pick], sug[pick]


def known_problems(test: str, n: int, labels: npt.ArrayLike | None = None, *, download: bool | None = None,
                   why: list[str] | None = None) -> KnownProblems | None:
    """The known problems of test target ``test`` (``mnist:test``, ``qmnist:test10k``...).

    ``n`` is the number of rows used (the first ``n`` after any slice, e.g. ``--limit-test``).  Returns None when the
    target is not (a part of) MNIST's test set, when the study's file cannot be had (offline and not cached), or when
    ``labels`` (if given) disagree with the study's given labels (a rebuilt or other test set under the same name);
    ``why`` (a list) then receives the reason.  A folder target never downloads the study's file, and counts only when
    its ``labels`` identify it as the study's test set and its build was not from a synthetic SD19 (then ``why`` says
    the test set is not the study's; no warning).
    """
    why = [] if why is None else why
    try:
        name, split, root = resolve_target(test, default_split="test")
        base, rows = parse_split(split)
        if root is not None and _built_from_synthetic(name, root):
            # said once by the caller, never warned: a synthetic build is simply another test set
            why.append(f"the test set is not the study's ({test} was built from a synthetic SD19)")
            return None
        if root is not None and labels is None:
            # a folder is the study's test set only by its content: here, its labels
            why.append(f"the labels of {test} are not at hand to identify it as the study's test set")
            return None
        hit = study_votes(name, base, download=False if root is not None else download)
    except OfflineError:
        msg = ("the study's file label-errors/mnist_mturk.json is not in the cache "
               "(`mnistforge fetch label-errors` gets it)")
        logger.info("known label problems not counted: %s", msg)
        why.append(msg)
        return None
    except MnistforgeError:
        return None
    if hit is None:
        return None
    votes, offset = hit
    sel = None
    if rows is not None:
        sl = rows_of(rows, get_dataset(name).split(base).count)
        sel = np.arange(sl.start, sl.stop)[:n]
    pos = np.arange(n) if sel is None else sel
    if not np.isin(votes.ids + offset, pos).any():
        return None  # no row the study examined (QMNIST's test50k)
    issue, keys, sug = _flags(votes, offset, n, sel)
    if labels is not None and n:  # pos: ascending rows of the study's index space
        lab = np.asarray(labels)[:n]
        at = votes.ids + offset
        where = np.minimum(np.searchsorted(pos, at), pos.size - 1)
        seen = pos[where] == at
        if bad := int((lab[where[seen]] != votes.given[seen]).sum()):
            msg = (f"the test set is not the study's ({bad} of the study's given labels differ "
                   f"from the labels of {test})")
            logger.info("known label problems not counted: %s", msg)  # the caller says it, once
            why.append(msg)
            return None
    return KnownProblems(test, issue, keys, sug)


def _built_from_synthetic(name: str, root: StrPath) -> bool:
    """Whether the folder's build of ``name`` says it came from a synthetic SD19."""
    try:
        manifest = FolderOrigin(get_dataset(name), root).manifest
    except MnistforgeError:
        return False
    return bool(manifest is not None and manifest.from_synthetic_sd19)


def account(wrong: Mapping[str, npt.ArrayLike], problems: KnownProblems, confidence: float = 0.95,
            predictions: Mapping[str, npt.ArrayLike] | None = None) -> dict[str, Any]:
    """Errors on the known problems, and rates and paired tests without them.

    ``wrong`` maps system names to wrong-vectors over ``problems``' rows; ``predictions`` (same keys, where known) adds
    how many errors on a label issue predicted the label most workers chose (``on_label_issues_majority``).

    >>> p = KnownProblems("toy", np.array([1, 0, 0, 0], bool), np.array([0, 1, 0, 0], bool))
    >>> a = account({"A": np.array([1, 1, 0, 0], bool), "B": np.array([1, 0, 0, 0], bool)}, p)
    >>> a["systems"]["A"]["on_label_issues"], a["systems"]["A"]["without_label_issues"]["errors"]
    (1, 1)
    """
    keep = {"label_issues": ~problems.label_issue, "both": ~problems.either}
    out: dict[str, Any] = {"test": problems.test, "n": problems.n, "label_issues": int(problems.label_issue.sum()),
                 "keysers_common": int(problems.keysers_common.sum()),
                 "excluded": {"label_issues": int(problems.label_issue.sum()), "both": int(problems.either.sum())},
                 "systems": {}, "pairs": []}
    for name, w in wrong.items():
        w = np.asarray(w, dtype=bool)
        out["systems"][name] = {
            "errors": int(w.sum()), "on_label_issues": int((w & problems.label_issue).sum()),
            "on_keysers_common": int((w & problems.keysers_common).sum()),
            **_majority(w, problems, (predictions or {}).get(name)),
            "rate": sg.error_rate(w, confidence=confidence).to_dict(),
            "without_label_issues": sg.error_rate(w[keep["label_issues"]], confidence=confidence).to_dict(),
            "without_both": sg.error_rate(w[keep["both"]], confidence=confidence).to_dict()}
    for a, b in itertools.combinations(wrong, 2):
        wa, wb = np.asarray(wrong[a], bool), np.asarray(wrong[b], bool)
        row: dict[str, Any] = {"a": a, "b": b}
        for tag, k in (("all", slice(None)), ("without_label_issues", keep["label_issues"]),
                       ("without_both", keep["both"])):
            t = sg.paired_test(wa[k], wb[k], confidence)
            row[tag] = {"n12": t.counts.n12, "n21": t.counts.n21, "a_worse": t.a_worse,
                        "b_worse": t.b_worse, "mcnemar_p": t.mcnemar_p}
        out["pairs"].append(row)
    return out


def _majority(w: np.ndarray, problems: KnownProblems, pred: npt.ArrayLike | None) -> dict[str, int]:
    if pred is None or problems.suggested is None:
        return {}
    agree = w & problems.label_issue & (np.asarray(pred) == problems.suggested)
    return {"on_label_issues_majority": int(agree.sum())}


def _verdict(d: dict[str, Any]) -> str:
    return "A worse" if d["a_worse"] else "B worse" if d["b_worse"] else "no significant difference"


def format_account(acc: dict[str, Any]) -> list[str]:
    """Printable lines for :func:`account`'s result (what ``evaluate``/``significance`` print)."""
    lines = [f"known label problems of {acc['test']} ({acc['n']} rows): "
             f"{acc['label_issues']} known label issues (Northcutt et al. 2021), "
             f"{acc['keysers_common']} common errors of Keysers (2006)"]
    width = max(6, *(len(s) for s in acc["systems"]))
    if majority := any("on_label_issues_majority" in s for s in acc["systems"].values()):
        lines.append("  (on issues: errors on the 15 images; in brackets those where the system "
                     "predicted the label most workers chose)")
    lines.append(f"  {'system':<{width}}  errors  on issues{' ' * 5 if majority else ''}  on Keysers'  "
                 f"without issues ({acc['n'] - acc['excluded']['label_issues']})  "
                 f"without both ({acc['n'] - acc['excluded']['both']})")
    for name, s in acc["systems"].items():
        wi, wb = s["without_label_issues"], s["without_both"]
        maj = f" ({s['on_label_issues_majority']})" if "on_label_issues_majority" in s else ""
        maj = f"{maj:<5}" if majority else ""
        lines.append(f"  {name:<{width}}  {s['errors']:6d}  {s['on_label_issues']:9d}{maj}  "
                     f"{s['on_keysers_common']:11d}  {wi['errors']:5d} = {100 * wi['rate']:.2f} %"
                     f"{'':9}{wb['errors']:5d} = {100 * wb['rate']:.2f} %")
    for p in acc["pairs"]:
        a, w, b = p["all"], p["without_label_issues"], p["without_both"]
        lines.append(f"  {p['a']} vs {p['b']}: n12/n21 {a['n12']}/{a['n21']} ({_verdict(a)}); "
                     f"without issues {w['n12']}/{w['n21']} ({_verdict(w)}); "
                     f"without both {b['n12']}/{b['n21']} ({_verdict(b)})")
    return lines


def evaluation_account(test: str, wrong: npt.ArrayLike, labels: npt.ArrayLike | None, confidence: float = 0.95,
                       name: str = "classifier", predictions: npt.ArrayLike | None = None
                       ) -> tuple[dict[str, Any] | None, list[str]] | None:
    """``(account, lines)`` for one evaluated classifier on ``test``, or None where nothing applies.

    ``account`` is None (and ``lines`` says why) when the test set is MNIST's but the study's file is not at hand.
    """
    wrong = np.asarray(wrong, dtype=bool)
    why: list[str] = []
    if (problems := known_problems(test, wrong.size, labels, why=why)) is None:
        return (None, [f"known label problems not counted: {why[0]}"]) if why else None
    acc = account({name: wrong}, problems, confidence, None if predictions is None else {name: predictions})
    return acc, format_account(acc)
