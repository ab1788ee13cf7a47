"""Match a rebuilt split against a reference, the way QMNIST measured its reconstruction.

Each rebuilt image is paired with its counterpart in the reference (by known order, else by
assignment) and compared under the nine one-pixel placements; the report is the QMNIST paper's
(pairs without and with a shift, quartiles of L2 and of the largest pixel difference).  The
pairing and the published figures: ``docs/verify.md`` (matching a reference).

>>> rng = np.random.default_rng(0)
>>> ref = np.zeros((4, 28, 28), np.uint8); ref[:, 8:20, 8:20] = rng.integers(1, 255, (4, 12, 12))
>>> m = match_reference(ref[::-1], ref)
>>> m.order, m.index.tolist(), m.unshifted
('assignment', [3, 2, 1, 0], 4)
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import linear_sum_assignment

from ..io.similar import SHIFTS, shift_images  # noqa: F401 - part of this API
from .result import FAIL, PASS, WARN, CheckResult

logger = logging.getLogger(__name__)

DEFAULT_MATCH_L2 = 128.0
"""A pair farther than this (L2, after the best shift) is not the same drawing
(two different MNIST test digits are never closer than 273)."""

BATCH = 4096


def paired_distances(a: npt.ArrayLike, b: npt.ArrayLike, *,
                     shifts: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best-shift distances of the pairs ``(a[i], b[i])``. Returns ``(l2, maxdiff, shift)``: float L2 distance, largest
    absolute pixel difference, and the index into :data:`SHIFTS` of the placement used."""
    a, b = np.asarray(a), np.asarray(b)
    n = len(a)
    l2 = np.empty(n)
    mx = np.empty(n, np.int64)
    sh = np.zeros(n, np.int64)
    cand = SHIFTS if shifts else SHIFTS[:1]
    for s in range(0, n, BATCH):
        aa = a[s:s + BATCH]
        bb = b[s:s + BATCH].astype(np.int32)
        best = np.full(len(aa), np.inf)
        bmx = np.zeros(len(aa), np.int64)
        bsh = np.zeros(len(aa), np.int64)
        for k, (dy, dx) in enumerate(cand):
            d = shift_images(aa, dy, dx).astype(np.int32) - bb
            d2 = np.einsum("ijk,ijk->i", d, d).astype(np.float64)
            better = d2 < best  # strict: ties keep the earlier (unshifted) placement
            best[better] = d2[better]
            if better.any():
                bmx[better] = np.abs(d[better]).reshape(int(better.sum()), -1).max(axis=1)
            bsh[better] = k
        l2[s:s + len(aa)] = np.sqrt(best)
        mx[s:s + len(aa)] = bmx
        sh[s:s + len(aa)] = bsh
    return l2, mx, sh


def quartiles(x: npt.ArrayLike) -> list[float | None]:
    """min, 25%, median, 75%, max (linear interpolation), rounded to 0.01."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return [None] * 5
    return [round(float(v), 2) for v in np.percentile(x, [0, 25, 50, 75, 100])]


@dataclasses.dataclass
class Matching:
    """Result of :func:`match_reference`. ``index[i]`` is the reference image paired with rebuilt image ``i`` (-1:
    none); ``l2``, ``maxdiff`` and ``shift`` are per rebuilt image (NaN / -1 where unpaired)."""

    index: np.ndarray
    l2: np.ndarray
    maxdiff: np.ndarray
    shift: np.ndarray
    order: str
    n_reference: int

    @property
    def matched(self) -> np.ndarray:
        return self.index >= 0

    @property
    def unshifted(self) -> int:
        return int(((self.shift == 0) & self.matched).sum())

    @property
    def shifted(self) -> int:
        return int(((self.shift > 0) & self.matched).sum())

    def summary(self) -> dict[str, Any]:
        m = self.matched
        return {"order": self.order, "rebuilt": len(self.index), "reference": self.n_reference,
                "matched": int(m.sum()), "unshifted": self.unshifted, "shifted": self.shifted,
                "exact": int((self.l2[m] == 0).sum()), "l2_quartiles": quartiles(self.l2[m]),
                "maxdiff_quartiles": quartiles(self.maxdiff[m])}


def _shares_order(a: np.ndarray, b: np.ndarray, la: npt.ArrayLike | None, lb: npt.ArrayLike | None,
                  match_l2: float, sample: int = 256) -> bool:
    n = min(len(a), len(b))
    if n == 0:
        return False
    idx = np.unique(np.linspace(0, n - 1, min(n, sample)).astype(np.int64))
    l2, _, _ = paired_distances(a[idx], b[idx])
    close = l2 <= match_l2
    if la is not None and lb is not None:
        close &= np.asarray(la)[idx] == np.asarray(lb)[idx]
    return bool(close.mean() >= 0.9)


def _mutual_nearest(a: np.ndarray, b: np.ndarray, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Mutual nearest-neighbour pairs between flat float32 arrays (rows of a, rows of b)."""
    an = np.einsum("ij,ij->i", a, a)
    bn = np.einsum("ij,ij->i", b, b)
    row_best = np.empty(len(a), np.int64)
    col_best = np.zeros(len(b), np.int64)
    col_val = np.full(len(b), np.inf, np.float32)
    for s in range(0, len(a), block):
        d = a[s:s + block] @ b.T
        d *= -2
        d += an[s:s + block, None]
        d += bn[None, :]
        row_best[s:s + block] = d.argmin(axis=1)
        r = d.argmin(axis=0)
        v = d[r, np.arange(len(b))]
        upd = v < col_val
        col_val[upd] = v[upd]
        col_best[upd] = r[upd] + s
    rows = np.flatnonzero(col_best[row_best] == np.arange(len(a)))
    return rows, row_best[rows]


def _shift_aware_cost(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``len(a) x len(b)`` matrix of the smallest squared L2 over the nine placements."""
    bf = b.reshape(len(b), -1).astype(np.float64)
    bn = np.einsum("ij,ij->i", bf, bf)
    cost = np.full((len(a), len(b)), np.inf)
    for dy, dx in SHIFTS:
        af = shift_images(a, dy, dx).reshape(len(a), -1).astype(np.float64)
        an = np.einsum("ij,ij->i", af, af)
        np.minimum(cost, an[:, None] + bn[None, :] - 2 * (af @ bf.T), out=cost)
    clipped: np.ndarray = np.maximum(cost, 0)  # a ufunc: typed Any by NumPy's stubs
    return clipped


def _assign_block(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pair rebuilt images ``a`` with reference images ``b``: local index arrays."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    af = a.reshape(len(a), -1).astype(np.float32)
    bf = b.reshape(len(b), -1).astype(np.float32)
    ra, rb = _mutual_nearest(af, bf)
    left_a = np.setdiff1d(np.arange(len(a)), ra)
    left_b = np.setdiff1d(np.arange(len(b)), rb)
    if left_a.size and left_b.size:
        if left_a.size * left_b.size > 5e7:
            logger.warning("assignment on a %d x %d block: this may take a while", left_a.size, left_b.size)
        cost = _shift_aware_cost(a[left_a], b[left_b])
        i, j = linear_sum_assignment(cost)
        ra = np.concatenate([ra, left_a[i]])
        rb = np.concatenate([rb, left_b[j]])
    return ra, rb


def match_reference(images: npt.ArrayLike, ref_images: npt.ArrayLike, labels: npt.ArrayLike | None = None,
                    ref_labels: npt.ArrayLike | None = None, *, order: str = "auto",
                    match_l2: float = DEFAULT_MATCH_L2) -> Matching:
    """Pair each rebuilt image (uint8 ``N x H x W``) with its reference counterpart (``M x H x W``; see the module
    docstring).  With labels the assignment runs per label.  ``order``: "known", "assignment" or "auto" (a shared order
    detected on a sample of 256 pairs, a pair within ``match_l2`` counting as the same drawing)."""
    a, b = np.asarray(images), np.asarray(ref_images)
    n, m = len(a), len(b)
    if order == "auto":
        order = "known" if _shares_order(a, b, labels, ref_labels, match_l2) else "assignment"
    index = np.full(n, -1, np.int64)
    if order == "known":
        k = min(n, m)
        index[:k] = np.arange(k)
    elif order == "assignment":
        if labels is not None and ref_labels is not None:
            la, lb = np.asarray(labels), np.asarray(ref_labels)
            for c in np.union1d(np.unique(la), np.unique(lb)):
                ia, ib = np.flatnonzero(la == c), np.flatnonzero(lb == c)
                ra, rb = _assign_block(a[ia], b[ib])
                index[ia[ra]] = ib[rb]
        else:
            ra, rb = _assign_block(a, b)
            index[ra] = rb
    else:
        raise ValueError(f"order must be auto, known or assignment, found {order!r}")
    l2 = np.full(n, np.nan)
    mx = np.full(n, -1, np.int64)
    sh = np.full(n, -1, np.int64)
    ok = np.flatnonzero(index >= 0)
    if ok.size:
        l2[ok], mx[ok], sh[ok] = paired_distances(a[ok], b[index[ok]])
    return Matching(index, l2, mx, sh, order, m)


def check_reference(images: np.ndarray, ref_images: np.ndarray, labels: npt.ArrayLike | None = None,
                    ref_labels: npt.ArrayLike | None = None, *, split: str = "", reference_name: str = "reference",
                    order: str = "auto", match_l2: float = DEFAULT_MATCH_L2, max_examples: int = 8,
                    name: str | None = None) -> CheckResult:
    """Match against a reference and report the QMNIST statistics. Fails when paired images carry different labels or a
    reference image has no counterpart; warns when some pairs are farther apart than ``match_l2`` (a different drawing,
    or a different preprocessing)."""
    name = name or f"reference[{split}]"
    mt = match_reference(images, ref_images, labels, ref_labels, order=order, match_l2=match_l2)
    values = mt.summary()
    values["reference_name"] = reference_name
    ok = np.flatnonzero(mt.matched)
    far = ok[mt.l2[ok] > match_l2]
    values["far_pairs"] = int(far.size)
    values["match_l2"] = match_l2
    label_bad = np.zeros(0, np.int64)
    if labels is not None and ref_labels is not None and ok.size:
        lab = np.asarray(labels)[ok]
        rlab = np.asarray(ref_labels)[mt.index[ok]]
        label_bad = ok[lab != rlab]
    values["label_mismatches"] = int(label_bad.size)
    if label_bad.size:
        values["label_mismatch_examples"] = label_bad[:max_examples].tolist()
    # Reference images left without a counterpart (only meaningful when the
    # rebuilt split should cover the reference: same size or known prefix).
    m_missing = mt.n_reference - int(mt.matched.sum())
    values["reference_unmatched"] = int(m_missing)
    worst = ok[np.argsort(-np.nan_to_num(mt.l2[ok]), kind="stable")][:max_examples]
    values["worst"] = [[int(i), int(mt.index[i]), round(float(mt.l2[i]), 2), int(mt.maxdiff[i]),
                        list(SHIFTS[mt.shift[i]])] for i in worst]
    q = values["l2_quartiles"]
    msg = (f"{values['matched']} pairs ({mt.order} order) vs {reference_name}: "
           f"{mt.unshifted} unshifted / {mt.shifted} shifted; L2 quartiles "
           f"{' / '.join('-' if v is None else f'{v:g}' for v in q)}; largest-pixel quartiles "
           f"{' / '.join('-' if v is None else f'{v:g}' for v in values['maxdiff_quartiles'])}")
    status = PASS
    if label_bad.size:
        status = FAIL
        msg = f"{label_bad.size} paired images carry different labels; " + msg
    elif m_missing > 0 and len(images) >= mt.n_reference:
        status = FAIL
        msg = f"{m_missing} reference images have no counterpart; " + msg
    elif m_missing > 0:
        status = FAIL
        msg = f"rebuilt split is {m_missing} images short of the reference; " + msg
    elif far.size:
        status = WARN
        msg = f"{far.size} pairs farther than L2 {match_l2:g}; " + msg
    r = CheckResult(name, status, values, msg)
    r.artifacts["worst"] = np.array([[w[0], w[1]] for w in values["worst"]], np.int64).reshape(-1, 2)
    r.artifacts["images"] = [(np.asarray(images[w[0]]), np.asarray(ref_images[w[1]]),
                              f"#{w[0]} vs ref #{w[1]}: L2 {w[2]:g}, "
                              f"max {w[3]}, shift {tuple(w[4])}") for w in values["worst"]]
    return r
