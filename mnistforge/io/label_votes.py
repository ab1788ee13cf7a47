"""Human label votes: the Mechanical Turk files of Northcutt et al. (2021), as arrays.

The study "Pervasive Label Errors in Test Sets Destabilize Machine Learning Benchmarks" (NeurIPS 2021 Datasets and
Benchmarks) published one JSON file per dataset (``cleanlab/label-errors``, ``mturk/<dataset>_mturk.json``): a list of
the images its algorithm found suspicious, each with ``id`` (the 0-based index into the test set),
``given_original_label``, ``our_guessed_label`` and ``mturk``: how many of five workers chose the ``given`` label, the
``guessed`` label, or ``neither``.  This module parses that format and turns it into dense per-row columns; it knows no
dataset (which split the ids index is the registry's business, see :mod:`mnistforge.loaders.label_issues`).

A row has a **label issue** when fewer than ``min_given`` (3) of the 5 workers chose the given label
(:func:`issue_mask`); its **suggested label** is the one a majority chose, else :data:`MISSING` (-1), as are
the votes of rows the study did not examine.  The rules and the file's quirks: ``docs/label-errors.md``.

>>> text = '[{"id": 2, "given_original_label": 4, "our_guessed_label": 9,' \\
...        ' "mturk": {"given": 1, "guessed": 4, "neither": 0}}]'
>>> t = parse_mturk_json(text)
>>> t.ids.tolist(), issue_mask(t).tolist(), suggested_labels(t).tolist()
([2], [True], [9])
>>> cols = dense_columns(t, 4)
>>> cols["label_votes_guessed"].tolist(), cols["label_issue"].tolist()
([-1, -1, 4, -1], [False, False, True, False])
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import FormatError
from .types import StrPath


__all__ = ["MISSING", "VOTE_KINDS", "FIELDS", "LabelVotes", "parse_mturk_json", "read_mturk_json", "issue_mask",
           "suggested_labels", "dense_columns", "given_mismatches", "columns_to_table", "table_to_columns"]

#: Votes and suggested label of a row the study did not examine.
MISSING = -1
#: The three answers a worker could give, in the order of the ``label_votes_*`` columns.
VOTE_KINDS = ("given", "guessed", "neither")
#: The metadata fields :func:`dense_columns` returns, in order.
FIELDS = ("label_votes_given", "label_votes_guessed", "label_votes_neither", "suggested_label", "label_issue")
WORKERS = 5
MIN_GIVEN = 3


@dataclass(frozen=True)
class LabelVotes:
    """The examined rows of one study file, sorted by ``ids`` (each array one entry per row). ``votes`` is ``K x 3``
    (given, guessed, neither)."""

    ids: np.ndarray
    given: np.ndarray
    guessed: np.ndarray
    votes: np.ndarray
    workers: int = WORKERS
    source: str = "<text>"

    def __len__(self) -> int:
        return int(self.ids.size)


def _int(rec: object, key: str, where: str) -> int:
    v = rec.get(key) if isinstance(rec, dict) else None
    if isinstance(v, bool) or not isinstance(v, int):
        raise FormatError("malformed label-vote record", path=where, expected=f"an integer {key!r}", found=repr(v)[:60])
    return v


def parse_mturk_json(text: str | bytes, source: str = "<text>", *, workers: int = WORKERS) -> LabelVotes:
    """Parse one ``*_mturk.json`` file of the study (see the module doc). Every record needs an integer ``id`` (unique,
    >= 0), ``given_original_label``, ``our_guessed_label`` and ``mturk`` counts between 0 and ``workers``; where the
    two labels differ the three counts add up to ``workers``.  Anything else raises
    :class:`~mnistforge.errors.FormatError` naming the record."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise FormatError("not a JSON document", path=source, expected="the study's JSON list", found=str(e)) from None
    if not isinstance(doc, list) or not doc:
        raise FormatError("not a label-vote file", path=source,
                          expected="a non-empty JSON list of records", found=type(doc).__name__)
    rows = []
    for i, rec in enumerate(doc):
        where = f"{source}[{i}]"
        idx, given, guessed = (_int(rec, k, where) for k in ("id", "given_original_label", "our_guessed_label"))
        m = rec.get("mturk")
        if not isinstance(m, dict):
            raise FormatError("malformed label-vote record", path=where,
                              expected="an 'mturk' object", found=repr(m)[:60])
        votes = [_int(m, k, where + ".mturk") for k in VOTE_KINDS]
        if idx < 0 or min(given, guessed) < 0 or min(votes) < 0 or max(votes) > workers or (
                given != guessed and sum(votes) != workers):
            raise FormatError("impossible label-vote record", path=where,
                              expected=f"id, labels >= 0 and {workers} votes in all",
                              found=f"id {idx}, labels {given}/{guessed}, votes {votes}")
        rows.append((idx, given, guessed, *votes))
    table = np.array(sorted(rows), dtype=np.int64)
    dup = table[1:, 0][table[1:, 0] == table[:-1, 0]]
    if dup.size:
        raise FormatError("an image is listed twice", path=source, expected="unique ids",
                          found=f"id {int(dup[0])} repeated")
    return LabelVotes(table[:, 0], table[:, 1], table[:, 2], table[:, 3:6].copy(), workers=workers, source=str(source))


def read_mturk_json(path: StrPath, *, workers: int = WORKERS) -> LabelVotes:
    """:func:`parse_mturk_json` of a file (UTF-8 JSON)."""
    return parse_mturk_json(Path(path).read_bytes(), str(path), workers=workers)


def issue_mask(t: LabelVotes, min_given: int = MIN_GIVEN) -> np.ndarray:
    """One bool per examined row: fewer than ``min_given`` workers chose the given label."""
    return t.votes[:, 0] < min_given


def suggested_labels(t: LabelVotes, majority: int = MIN_GIVEN) -> np.ndarray:
    """The majority label of each examined row (given, else guessed), or :data:`MISSING`."""
    out = np.full(len(t), MISSING, dtype=np.int64)
    guessed_wins = t.votes[:, 1] >= majority
    out[guessed_wins] = t.guessed[guessed_wins]
    given_wins = t.votes[:, 0] >= majority
    out[given_wins] = t.given[given_wins]
    return out


def dense_columns(t: LabelVotes, n: int, offset: int = 0, min_given: int = MIN_GIVEN) -> dict[str, np.ndarray]:
    """Columns :data:`FIELDS` for ``n`` rows where study id ``i`` is row ``i + offset``. Votes and suggested labels are
    int32 (:data:`MISSING` where not examined), ``label_issue`` is bool.  Ids that fall outside ``[0, n)`` after the
    offset are left out."""
    rows = t.ids + offset
    inside = (rows >= 0) & (rows < n)
    rows = rows[inside]
    cols: dict[str, np.ndarray] = {}
    for k, kind in enumerate(VOTE_KINDS):
        c = np.full(n, MISSING, dtype=np.int32)
        c[rows] = t.votes[inside, k]
        cols[f"label_votes_{kind}"] = c
    sug = np.full(n, MISSING, dtype=np.int32)
    sug[rows] = suggested_labels(t)[inside]
    cols["suggested_label"] = sug
    issue = np.zeros(n, dtype=bool)
    issue[rows] = issue_mask(t, min_given)[inside]
    cols["label_issue"] = issue
    return cols


def given_mismatches(t: LabelVotes, labels: np.ndarray, offset: int = 0) -> int:
    """How many study rows inside ``labels`` (id ``i`` at row ``i + offset``) disagree with it. Zero means the labels
    are the ones the study saw (its ``given_original_label``)."""
    rows = t.ids + offset
    inside = (rows >= 0) & (rows < len(labels))
    got = np.asarray(labels[rows[inside]], dtype=np.int64)
    return int((got != t.given[inside]).sum())


def columns_to_table(cols: dict[str, np.ndarray]) -> np.ndarray:
    """The columns as one int32 ``N x 5`` table (``label_issue`` as 0/1): an idx side file."""
    return np.stack([np.asarray(cols[f]).astype(np.int32) for f in FIELDS], axis=1)


def table_to_columns(table: np.ndarray, where: str = "<table>") -> dict[str, np.ndarray]:
    """Inverse of :func:`columns_to_table` (checks the shape and the 0/1 issue column)."""
    table = np.asarray(table)
    if table.ndim != 2 or table.shape[1] != len(FIELDS) or table.dtype.kind not in "iu":
        raise FormatError("not a label-vote table", path=where,
                          expected=f"integers, N x {len(FIELDS)} ({', '.join(FIELDS)})",
                          found=f"{table.dtype} {table.shape}")
    issue = table[:, 4]
    if issue.size and not np.isin(issue, (0, 1)).all():
        raise FormatError("label_issue column is not 0/1", path=where, expected="0 or 1",
                          found=str(sorted(set(np.unique(issue).tolist()) - {0, 1})[:5]))
    cols = {f: table[:, i].astype(np.int32) for i, f in enumerate(FIELDS[:4])}
    cols["label_issue"] = issue.astype(bool)
    return cols
