"""Join SD19 hierarchies by exact image content.

When by_write carries no ``.cls`` (the 2nd edition may not ship them), the class of each by_write character is recovered
from a tree that carries classes (by_field: partition + field + class; by_class: partition + class) by matching the
exact content hash within the partition (and the field, when the other tree knows it).  Identical images inside one key
(SD19 has three duplicated digits) are fine when they share a class; when they do not, they are paired in walk order and
reported as ambiguous.  Nothing is dropped silently: every by_write row left without a class and every other-tree
character left without a partner is listed in the :class:`JoinReport`, and ``strict`` callers turn it into a
:class:`~mnistforge.errors.JoinError`.

>>> import numpy as np
>>> h = np.array([b"a" * 16, b"b" * 16], "S16")
>>> asc, rep = join_classes(np.array([0, 0]), np.array([b"d", b"d"]), h,
...                         np.array([0]), None, np.array([0x31]), h[:1], ["x.png"])
>>> asc.tolist(), rep.unjoined_rows.tolist(), rep.ok
([49, 0], [1], False)
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import JoinError

logger = logging.getLogger(__name__)

__all__ = ["JoinReport", "join_classes"]


@dataclasses.dataclass
class JoinReport:
    """What a content join could and could not do."""

    other: str = ""                                   # hierarchy the classes came from
    rows: int = 0                                     # by_write rows that needed a class
    joined: int = 0
    unjoined_rows: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    ambiguous_rows: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    unmatched_other: list[str] = dataclasses.field(default_factory=list)   # names of unpaired characters
    count_mismatches: int = 0                         # keys with different copy counts on each side

    @property
    def ok(self) -> bool:
        return not len(self.unjoined_rows) and not len(self.ambiguous_rows) and not self.unmatched_other

    def summary(self) -> str:
        s = (f"joined {self.joined}/{self.rows} by_write characters to {self.other or '(nothing)'} by "
             f"content; {len(self.unjoined_rows)} unjoined, {len(self.ambiguous_rows)} ambiguous, "
             f"{len(self.unmatched_other)} {self.other or 'other'} characters without a partner")
        if self.count_mismatches:
            s += f", {self.count_mismatches} duplicate groups with different copy counts"
        return s

    def to_dict(self, limit: int = 50) -> dict[str, Any]:
        return {"other": self.other, "rows": self.rows, "joined": self.joined,
                "unjoined_rows": self.unjoined_rows[:limit].tolist(), "n_unjoined": int(len(self.unjoined_rows)),
                "ambiguous_rows": self.ambiguous_rows[:limit].tolist(), "n_ambiguous": int(len(self.ambiguous_rows)),
                "unmatched_other": list(self.unmatched_other[:limit]), "n_unmatched_other": len(self.unmatched_other),
                "count_mismatches": self.count_mismatches}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JoinReport":
        # The cache keeps only the first rows of each list (counts are exact).
        r = cls(other=d.get("other", ""), rows=d.get("rows", 0), joined=d.get("joined", 0),
                count_mismatches=d.get("count_mismatches", 0))
        r.unjoined_rows = np.asarray(d.get("unjoined_rows", []), np.int64)
        r.ambiguous_rows = np.asarray(d.get("ambiguous_rows", []), np.int64)
        r.unmatched_other = list(d.get("unmatched_other", []))
        # an attribute outside the fields (to_dict and eq stay as they are): the exact count
        setattr(r, "n_unjoined", d.get("n_unjoined", len(r.unjoined_rows)))
        return r

    def raise_if_failed(self, path: str | os.PathLike[str] | None = None) -> None:
        """Raise :class:`JoinError` listing the first failures unless the join is complete."""
        if self.ok:
            return
        first = self.unjoined_rows[:10].tolist()
        raise JoinError("SD19 by_write characters could not all be given a class",
                        path=path, expected="every character joined exactly once",
                        found=self.summary() + (f"; first unjoined rows {first}" if first else "")
                        + (f"; first unpaired {self.unmatched_other[:5]}" if self.unmatched_other else ""),
                        hint="add by_class.zip or by_field.zip (or the .cls files) to the source, "
                             "or build non-strictly to leave these characters out")


def _keys(hsf: npt.ArrayLike, field: npt.ArrayLike | None, hashes: npt.ArrayLike) -> np.ndarray:
    hsf = np.asarray(hsf, np.uint8)
    n = len(hsf)
    k = np.zeros((n, 18), np.uint8)
    k[:, 0] = hsf
    if field is not None:
        k[:, 1] = np.frombuffer(np.asarray(field, "S1").tobytes(), np.uint8)
    k[:, 2:] = np.frombuffer(np.asarray(hashes, "S16").tobytes(), np.uint8).reshape(n, 16)
    return k.view("S18").ravel()


def join_classes(hsf: npt.ArrayLike, field: npt.ArrayLike | None, hashes: np.ndarray,
                 other_hsf: npt.ArrayLike, other_field: npt.ArrayLike | None, other_ascii: npt.ArrayLike,
                 other_hashes: npt.ArrayLike, other_names: Sequence[str], *, other: str = "",
                 rows: npt.ArrayLike | None = None) -> tuple[npt.NDArray[np.uint8], JoinReport]:
    """Give each (partition, field, hash) a class from the other tree's characters.

    ``hsf``, ``field``, ``hashes``: arrays for the by_write rows to join.
    ``other_hsf``, ``other_field``, ``other_ascii``, ``other_hashes``: the other tree's
        characters (``other_field`` None when that tree does not know fields, e.g. by_class).
    ``other_names``: names of the other tree's characters, for the report.
    ``rows``: index row numbers of the by_write rows (default ``arange``), for the report.

    Returns the ascii codes (uint8, 0 where unjoined) and the report.
    """
    n = len(hashes)
    rows = np.arange(n) if rows is None else np.asarray(rows, np.int64)
    a_key = _keys(hsf, field if other_field is not None else None, hashes)
    b_key = _keys(other_hsf, other_field, other_hashes)
    other_ascii = np.asarray(other_ascii, np.uint8)
    out = np.zeros(n, np.uint8)

    b_order = np.argsort(b_key, kind="stable")
    b_sorted = b_key[b_order]
    a_order = np.argsort(a_key, kind="stable")
    a_sorted = a_key[a_order]
    # group boundaries on both sides
    b_lo = np.searchsorted(b_sorted, a_sorted, "left")
    b_hi = np.searchsorted(b_sorted, a_sorted, "right")
    found = b_hi > b_lo
    unjoined = a_order[~found]

    # Fast path: keys present once on each side (all but a handful of characters).
    a_new = np.ones(n, bool)
    a_new[1:] = a_sorted[1:] != a_sorted[:-1]
    a_grp_start = np.maximum.accumulate(np.where(a_new, np.arange(n), 0))
    a_grp_end = np.r_[np.flatnonzero(a_new)[1:], n][np.cumsum(a_new) - 1]
    a_count = a_grp_end - a_grp_start
    single = found & (a_count == 1) & (b_hi - b_lo == 1)
    out[a_order[single]] = other_ascii[b_order[b_lo[single]]]

    ambiguous: list[int] = []
    mismatches = 0
    multi = np.flatnonzero(found & ~single)
    done_groups: set[int] = set()
    for p in multi:
        g = int(a_grp_start[p])
        if g in done_groups:
            continue
        done_groups.add(g)
        a_rows = np.sort(a_order[g:int(a_grp_end[p])])      # walk order
        b_items = np.sort(b_order[b_lo[p]:b_hi[p]])         # the other tree's order
        classes = other_ascii[b_items]
        if len(a_rows) != len(b_items):
            mismatches += 1
        if (classes == classes[0]).all():
            out[a_rows] = classes[0]
        else:
            m = min(len(a_rows), len(b_items))
            out[a_rows[:m]] = classes[:m]
            ambiguous.extend(a_rows.tolist())
    # other-tree characters whose key has no by_write partner
    a_lo = np.searchsorted(a_sorted, b_sorted, "left")
    a_hi = np.searchsorted(a_sorted, b_sorted, "right")
    lonely = np.sort(b_order[a_hi == a_lo])
    report = JoinReport(other=other, rows=n, joined=int((out > 0).sum()), unjoined_rows=np.sort(rows[unjoined]),
                        ambiguous_rows=np.sort(rows[np.asarray(ambiguous, np.int64)]),
                        unmatched_other=[other_names[i] for i in lonely], count_mismatches=mismatches)
    if not report.ok:
        logger.warning("SD19 join: %s", report.summary())
    return out, report
