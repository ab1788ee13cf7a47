"""The known label errors of a split, reported for information (never a finding).

Reads the label-vote columns that ``load(..., with_metadata=True)`` joins to MNIST test and QMNIST test
(:mod:`mnistforge.loaders.label_issues`): which images the study of Northcutt et al. (2021) flagged, with
their given and suggested labels and the votes.  The published labels are what they are: ``verify`` says where
humans disagree with them, it does not fail on it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..io.label_votes import MISSING
from .result import INFO, CheckResult

__all__ = ["check_label_issues", "has_votes"]


def has_votes(metadata: Any) -> bool:
    """Whether ``metadata`` holds label-vote columns with at least one examined row."""
    names = getattr(getattr(metadata, "dtype", None), "names", None) or ()
    return "label_issue" in names and bool((metadata["label_votes_given"] != MISSING).any())


def check_label_issues(labels: np.ndarray, metadata: np.ndarray, split: str = "test") -> CheckResult:
    """An ``info`` result listing every row with a known label issue (0-based rows).

    >>> from mnistforge.io.label_votes import parse_mturk_json, dense_columns
    >>> from mnistforge.loaders.label_issues import join_columns
    >>> t = parse_mturk_json('[{"id": 1, "given_original_label": 4, "our_guessed_label": 9,'
    ...                      ' "mturk": {"given": 1, "guessed": 4, "neither": 0}}]')
    >>> r = check_label_issues(np.array([0, 4, 2]), join_columns(None, dense_columns(t, 3)))
    >>> r.status, r.message
    ('info', '1 known label error among 1 images humans examined (rows 1; given -> suggested: 4 -> 9)')
    """
    issue = np.asarray(metadata["label_issue"], dtype=bool)
    examined = np.asarray(metadata["label_votes_given"]) != MISSING
    rows = np.flatnonzero(issue)
    listed = []
    for i in rows.tolist():
        sug = int(metadata["suggested_label"][i])
        listed.append({"index": i, "given": int(labels[i]), "suggested": None if sug == MISSING else sug,
                       "votes": {k: int(metadata[f"label_votes_{k}"][i]) for k in ("given", "guessed", "neither")}})
    pairs = ", ".join(f"{d['given']} -> {'?' if d['suggested'] is None else d['suggested']}" for d in listed)
    noun = "error" if rows.size == 1 else "errors"
    msg = (f"{rows.size} known label {noun} among {int(examined.sum())} images humans examined "
           f"(rows {', '.join(map(str, rows.tolist()))}; given -> suggested: {pairs})")
    return CheckResult(f"label_issues[{split}]", INFO, {
        "study": "Northcutt, Athalye & Mueller (2021), label-errors/mnist_mturk.json",
        "rule": "label error when fewer than 3 of the 5 workers chose the given label",
        "examined": int(examined.sum()), "label_issues": listed,
        "index_base": 0, "suggested_missing": "no label got a majority of the 5 workers"}, msg)
