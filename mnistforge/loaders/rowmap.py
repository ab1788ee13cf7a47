"""Row maps: each row of a third-party copy joined to its official ``(dataset, split, index)``.

By image content, against the official splits this machine holds: **exact** (digests, then
bytes), then **near** (L2 within :data:`NEAR_L2`, best of nine placements); a row matching several
is **ambiguous**, one of another split than claimed **leakage** (``docs/verify.md``, row maps).

>>> rng = np.random.default_rng(0)
>>> train = rng.integers(0, 256, (6, 28, 28), dtype=np.uint8)
>>> test = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
>>> officials = [Official("toy", "train", train, np.arange(6) % 3),
...              Official("toy", "test", test, np.arange(5) % 3)]
>>> copy = np.concatenate([test[[4, 1]], train[[2]]])
>>> rm = map_rows(copy, np.array([1, 1, 2]), officials, dataset="toy", claimed="test")
>>> rm.official_index.tolist(), rm.official_split.tolist(), rm.leakage_rows.tolist()
([4, 1, 2], ['test', 'test', 'train'], [2])
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import PathArg
from ..gate.content import RowFacts
from ..io.similar import SHIFTS, find_near_duplicates, shift_images, xorshift_image_digests
from ..log import get_logger
from ..registry import get_dataset, list_datasets
from .label_issues import add_label_votes
from .split import AMBIGUOUS, EXACT, FIRST, HOW, NEAR, NEAR_L2, NONE, DatasetSplit, RowMap

#: :func:`mnistforge.load` (passed in: this module sits below it)
Loader = Callable[..., DatasetSplit]
#: the per-row columns a map is built in (``code``, ``index``, ``how``, ``l2``, ``candidates``)
Columns = dict[str, npt.NDArray[Any]]

logger = get_logger(__name__)

__all__ = ["HOW", "NEAR_L2", "Official", "RowMap", "copy_map", "identity_map", "join_metadata", "map_rows",
           "official_metadata", "official_splits", "row_facts"]

#: at most this many (row, official image, placement) comparisons in the near step (a second or
#: two); beyond it the near step is skipped for those rows and the map says so
NEAR_BUDGET = 2e8


@dataclass
class Official:
    """One official split as its files store it (EMNIST: transposed), seen on this machine."""
    dataset: str
    split: str
    images: npt.NDArray[np.uint8]
    labels: npt.NDArray[np.int64]
    where: str = ""
    _digests: npt.NDArray[Any] | None = field(default=None, repr=False)

    def digests(self) -> npt.NDArray[Any]:
        if self._digests is None:
            self._digests = xorshift_image_digests(self.images)
        return self._digests


class _Index:
    """One dataset's official digests, sorted once: exact lookups by searchsorted."""

    def __init__(self, codes: list[int], officials: list[Official]) -> None:
        d = np.concatenate([officials[k].digests() for k in codes])
        self.code = np.concatenate([np.full(len(officials[k].images), k, np.int32) for k in codes])
        self.row = np.concatenate([np.arange(len(officials[k].images)) for k in codes])
        self.order = np.argsort(d, kind="stable")
        self.sorted = d[self.order]
        self.size = int(d.size)

    def ranges(self, digests: npt.NDArray[Any]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        return (np.searchsorted(self.sorted, digests, "left"), np.searchsorted(self.sorted, digests, "right"))


def _equal_rows(copy: npt.NDArray[np.uint8], rows: npt.NDArray[np.integer[Any]], officials: list[Official],
                code: npt.NDArray[np.integer[Any]], index: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.bool_]:
    """Whether ``copy[rows[j]]`` equals official ``(code[j], index[j])`` byte for byte."""
    ok = np.zeros(rows.size, bool)
    for k in np.unique(code).tolist():
        sel = np.flatnonzero(code == k)
        a = copy[rows[sel]].reshape(sel.size, -1)
        b = np.asarray(officials[k].images)[index[sel]].reshape(sel.size, -1)
        ok[sel] = (a == b).all(axis=1)
    return ok


def _exact(copy: npt.NDArray[np.uint8], idx: _Index, officials: list[Official], todo: npt.NDArray[np.intp],
           out: Columns) -> None:
    """Map the rows ``todo`` of ``copy`` (oriented) exactly through ``idx``."""
    if not todo.size or not idx.size:
        return
    d = xorshift_image_digests(copy[todo])
    lo, hi = idx.ranges(d)
    one = np.flatnonzero(hi - lo == 1)
    if one.size:
        j = idx.order[lo[one]]
        code, row = idx.code[j], idx.row[j]
        eq = _equal_rows(copy, todo[one], officials, code, row)
        r = todo[one[eq]]
        out["code"][r], out["index"][r], out["how"][r], out["l2"][r] = code[eq], row[eq], EXACT, 0.0
        out["candidates"][r] = 1
    many = np.flatnonzero(hi - lo > 1)
    if many.size:  # a digest several official rows share: grouped by digest, compared once each
        uniq, first, inv = np.unique(d[many], return_index=True, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        for g in range(uniq.size):
            i = many[first[g]]
            js = idx.order[lo[i]:hi[i]]
            eq = _equal_rows(copy, np.full(js.size, todo[i]), officials, idx.code[js], idx.row[js])
            js = js[eq]
            rows = todo[many[inv == g]]
            if js.size == 0:
                continue
            out["candidates"][rows] = js.size
            if js.size == 1:
                out["code"][rows], out["index"][rows] = idx.code[js[0]], idx.row[js[0]]
                out["how"][rows], out["l2"][rows] = EXACT, 0.0
            else:
                codes = np.unique(idx.code[js])
                out["code"][rows] = codes[0] if codes.size == 1 else -1
                out["how"][rows], out["l2"][rows] = AMBIGUOUS, 0.0


def _near(copy: npt.NDArray[np.uint8], officials: list[Official], codes: list[int], todo: npt.NDArray[np.intp],
          out: Columns, threshold: float, notes: list[str]) -> None:
    """Map the rows ``todo`` within ``threshold`` (best of nine placements) of one official row."""
    base = sum(len(officials[k].images) for k in codes)
    if not todo.size or not base:
        return
    found: list[npt.NDArray[np.int64]] = []  # rows of (row, code, index, l2 * 1000)
    left = todo
    # unshifted first; the eight shifted placements, stacked into one query, only for the rows
    # no unshifted official image is near
    for placements in (SHIFTS[:1], SHIFTS[1:]):
        if not left.size:
            break
        if left.size * base * len(placements) > NEAR_BUDGET:
            notes.append(f"near matching skipped for {left.size:,} rows ({left.size:,} rows x "
                         f"{base:,} official images x {len(placements)} placements is over the "
                         "budget; give a reference of the one split, or fewer rows)")
            break
        q = np.concatenate([shift_images(copy[left], dy, dx) if (dy, dx) != (0, 0)
                            else copy[left] for dy, dx in placements])
        for k in codes:
            nd = find_near_duplicates(q, officials[k].images, threshold, progress_bar=False)
            if len(nd):
                found.append(np.stack([left[nd.pairs[:, 0] % left.size], np.full(len(nd), k),
                                       nd.pairs[:, 1], np.rint(nd.l2 * 1000)], axis=1) .astype(np.int64))
        hit = np.unique(np.concatenate(found)[:, 0]) if found else np.zeros(0, np.int64)
        left = np.setdiff1d(left, hit)
    if not found:
        return
    f = np.concatenate(found)
    f = f[np.lexsort((f[:, 3], f[:, 2], f[:, 1], f[:, 0]))]
    # one candidate per (row, official row): its best placement
    keep = np.r_[True, (f[1:, 0] != f[:-1, 0]) | (f[1:, 1] != f[:-1, 1]) | (f[1:, 2] != f[:-1, 2])]
    f = f[keep]
    rows, start, count = np.unique(f[:, 0], return_index=True, return_counts=True)
    single = count == 1
    r, j = rows[single], start[single]
    out["code"][r], out["index"][r], out["how"][r] = f[j, 1], f[j, 2], NEAR
    out["l2"][r], out["candidates"][r] = f[j, 3] / 1000.0, 1
    for r, s0, c in zip(rows[~single].tolist(), start[~single].tolist(), count[~single].tolist()):
        codes_r = np.unique(f[s0:s0 + c, 1])
        out["code"][r] = codes_r[0] if codes_r.size == 1 else -1
        out["how"][r], out["candidates"][r] = AMBIGUOUS, c
        out["l2"][r] = f[s0:s0 + c, 3].min() / 1000.0


def map_rows(images: npt.ArrayLike, labels: npt.ArrayLike, officials: list[Official], *, dataset: str | None = None,
             claimed: str | None = None, near: bool = True, threshold: float = NEAR_L2) -> RowMap:
    """The :class:`RowMap` of a copy's ``images`` and ``labels`` against ``officials``: the claimed
    ``dataset`` first, the others (exactly only) for the rows left; ``claimed``: its split."""
    images = np.ascontiguousarray(np.asarray(images))
    labels = np.asarray(labels, dtype=np.int64)
    n = len(images)
    keys = tuple((o.dataset, o.split) for o in officials)
    out: Columns = {"code": np.full(n, -1, np.int32), "index": np.full(n, -1, np.int64),
           "how": np.zeros(n, np.uint8), "l2": np.full(n, np.nan), "candidates": np.zeros(n, np.int32)}
    names = list(dict.fromkeys(o.dataset for o in officials))
    groups = {d: [k for k, o in enumerate(officials) if o.dataset == d
                  and o.images.shape[1:] == images.shape[1:]] for d in names}
    indexes = {d: _Index(c, officials) for d, c in groups.items() if c}
    # the orientation and first dataset: the claimed one, else where most rows are found
    sample = np.unique(np.linspace(0, n - 1, min(n, 2000)).astype(np.int64)) if n else np.zeros(0, int)
    views = {False: images[sample], True: np.ascontiguousarray(images[sample].transpose(0, 2, 1))}

    def hits(d: str, t: bool) -> int:
        lo, hi = indexes[d].ranges(xorshift_image_digests(views[t]))
        return int(np.count_nonzero(hi > lo))

    score = {(d, t): hits(d, t) for d in indexes for t in (False, True)}
    # the transposed copy of every row only where some dataset is found that way
    square = images.shape[1] == images.shape[2]
    want_t = square and any(score[d, True] > score[d, False] for d in indexes)
    copies = {False: images, **({True: np.ascontiguousarray(images.transpose(0, 2, 1))} if want_t else {})}
    score = {k: v for k, v in score.items() if k[1] in copies}
    order: list[str] = sorted(indexes, key=lambda d: (d != dataset, -max(score[d, t] for t in copies)))
    primary = dataset or (order[0] if order and max(score[order[0], t] for t in copies) != 0 else None)
    notes: list[str] = []
    transposed = False
    best = {d: max(copies, key=lambda t: (score[d, t], not t)) for d in order}
    for d in order:  # exact first, every dataset: a row of another dataset is no near candidate
        _exact(copies[best[d]], indexes[d], officials, np.flatnonzero(out["how"] == NONE), out)
    if primary in indexes:
        transposed = best[primary]
        if near:
            _near(copies[transposed], officials, groups[primary],
                  np.flatnonzero(out["how"] == NONE), out, threshold, notes)
    if dataset is not None and dataset not in indexes:
        notes.append(f"no official {dataset} images on this machine to map to")
    rm = RowMap(keys, out["code"], out["index"], out["how"], out["l2"], dataset=primary,
                claimed=claimed, transposed=bool(transposed), candidates=out["candidates"],
                sources=[f"{o.dataset} {o.split}: {o.where}" for o in officials], notes=notes)
    _labels(rm, labels, officials)
    return rm


def _labels(rm: RowMap, labels: npt.NDArray[np.int64], officials: list[Official]) -> None:
    """The label offset (most agreement over the mapped rows) and the rows whose label differs."""
    ok = np.flatnonzero(rm.mapped)
    official = np.zeros(ok.size, np.int64)
    for k in np.unique(rm.code[ok]).tolist():
        sel = rm.code[ok] == k
        official[sel] = np.asarray(officials[k].labels)[rm.index[ok[sel]]]
    rm.shift = max((0, 1, -1), key=lambda s: int(np.count_nonzero(labels[ok] + s == official)))
    differs = np.zeros(len(rm), bool)
    differs[ok] = labels[ok] + rm.shift != official
    rm.label_differs = differs


# --------------------------------------------------------------------------- what the machine sees

def official_splits(datasets: Iterable[str] | None = None, *, loader: Loader, cache: PathArg | None = None,
                    root: PathArg | None = None, image_shape: tuple[int, ...] = (28, 28)) -> list[Official]:
    """The official file splits of ``datasets`` (default: all) this machine holds, read with ``loader``."""
    names = list(datasets) if datasets is not None else list_datasets()
    got: list[Official] = []
    for name in dict.fromkeys(names):
        info = get_dataset(name)
        if tuple(info.image_shape) != tuple(image_shape):
            continue
        for split in (s for s, sp in info.splits.items() if not sp.is_view):
            try:
                ds = loader(name, split, root=root, download=False, cache=cache)
            except Exception as e:  # not on this machine (or damaged): nothing to map to
                logger.debug("no official %s %s to map to: %s", name, split, e)
                continue
            images = np.asarray(ds.images)   # as the files store them (EMNIST: transposed)
            if info.orientation == "transposed":
                images = images.transpose(0, 2, 1)
            got.append(Official(name, split, images, np.asarray(ds.labels), ds.source))
    return got


def copy_map(images: npt.ArrayLike, labels: npt.ArrayLike, *, dataset: str | None = None,
             claimed: str | None = None, cache: PathArg | None = None, officials: list[Official] | None = None,
             loader: Loader | None = None, near: bool = True) -> RowMap | None:
    """The row map of a copy against ``officials``, else ``dataset``'s splits read with ``loader``; or None."""
    if officials is None and loader is None:
        return None
    shape = tuple(np.asarray(images).shape[1:3])
    others = officials is None and dataset is not None
    if officials is None:
        assert loader is not None  # (one of the two is given: see above)
        officials = official_splits([dataset] if dataset else None, loader=loader, cache=cache, image_shape=shape)
    rm = map_rows(images, labels, officials, dataset=dataset, claimed=claimed, near=near) \
        if officials else None
    if others and (rm is None or not rm.mapped.all()):  # where the other rows come from
        assert loader is not None  # (others: no officials were given, so a loader was)
        more = official_splits([d for d in list_datasets() if d != dataset], loader=loader,
                               cache=cache, image_shape=shape)
        if more:
            officials = officials + more
            rm = map_rows(images, labels, officials, dataset=dataset, claimed=claimed, near=near)
    if rm is None:
        return None
    logger.info("%s", rm.message())
    return rm


def row_facts(rm: RowMap | None) -> RowFacts | None:
    """The gate's :class:`~mnistforge.gate.content.RowFacts` of a map (None: no map)."""
    if rm is None:
        return None
    mine = rm.mapped & rm._mine()
    codes, counts = np.unique(rm.code[mine], return_counts=True)
    split = rm.keys[int(codes[np.argmax(counts)])][1] if codes.size else None
    names, n = np.unique(rm.official_dataset[rm.mapped & ~mine], return_counts=True)
    differs = rm.label_differs if rm.label_differs.size == len(rm) else np.zeros(len(rm), bool)
    relabelled = np.flatnonzero(mine & differs)
    return RowFacts(rm.dataset, split, int(mine.sum()), len(rm),
                    tuple((str(d), int(k)) for d, k in zip(names, n)), int(relabelled.size),
                    tuple(int(i) for i in relabelled[:FIRST]))


def identity_map(dataset: str, split: str, n: int) -> RowMap:
    """The map of a copy in the official order: row ``i`` is official row ``i``."""
    return RowMap(((dataset, split),), np.zeros(n, np.int32), np.arange(n, dtype=np.int64),
                  np.full(n, EXACT, np.uint8), np.zeros(n), dataset=dataset, claimed=split,
                  label_differs=np.zeros(n, bool), candidates=np.ones(n, np.int32),
                  sources=["registry content hashes (official order)"], official_order=True)


def official_metadata(ds: DatasetSplit, rm: RowMap, *, loader: Loader, cache: PathArg | None = None,
                      download: bool | None = None, votes: bool = True,
                      required: bool = False) -> npt.NDArray[np.void] | None:
    """The official metadata of each mapped row of ``ds`` (-1 for other rows), or None without any."""
    parts: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[np.void]]] = []
    for k, (name, split) in enumerate(rm.keys):
        rows = np.flatnonzero(rm.mapped & (rm.code == k))
        if name != ds.name or not rows.size:
            continue
        off = loader(name, split, download=False, cache=cache, with_metadata="files")
        if votes:
            add_label_votes(off, cache=cache, download=download, required=required)
        if off.metadata is not None:
            parts.append((rows, rm.index[rows], off.metadata))
    if not parts:
        return None
    dt = parts[0][2].dtype
    out = np.zeros(len(rm), dtype=dt)
    for f in dt.names or ():
        if out[f].dtype.kind in "iu":
            out[f] = -1
    for rows, idx, meta in parts:
        if meta.dtype != dt:  # splits of one dataset share one schema; a stray one is left out
            logger.warning("%s: metadata of another schema left out", ds.name)
            continue
        out[rows] = meta[idx]
    return out


def join_metadata(own: npt.NDArray[np.void] | None,
                  official: npt.NDArray[np.void] | None) -> npt.NDArray[np.void] | None:
    """A copy's own metadata columns (``.mat`` writers...) with the official ones after them."""
    if own is None or official is None:
        return official if own is None else own
    names = [f for f in official.dtype.names or () if f not in (own.dtype.names or ())]
    dt = np.dtype([(f, own.dtype[f]) for f in own.dtype.names or ()] + [(f, official.dtype[f]) for f in names])
    out = np.empty(len(own), dtype=dt)
    for f in own.dtype.names or ():
        out[f] = own[f]
    for f in names:
        out[f] = official[f]
    return out
