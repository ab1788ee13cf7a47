"""Readers for NIST SD19, both editions, zipped or unpacked, every hierarchy.

:func:`open_sd19` takes a folder holding the 2nd-edition zips exactly as NIST serves them (``by_write.zip``,
``by_class.zip``, ...), or the same trees unpacked (``by_write/``, ``by_class/``, ...), of either edition (1st: IHEAD
``.mis`` + ``.cls`` + ``.mit``; 2nd: one 1-bit PNG per character).  The edition and packaging are detected.  Zip members
are read in place (never extracted) through :mod:`mnistforge.sd19.zipdir`, with its safety checks.

The result, :class:`SD19Source`, carries :attr:`~SD19Source.index` (one row per character in by_write walk order, see
:mod:`mnistforge.sd19.index`) and reads any selection of characters in parallel with :meth:`~SD19Source.read`.  Classes
come from the by_write ``.cls`` files when present, else from an exact-content join (:mod:`mnistforge.sd19.join`).

>>> from mnistforge.sd19 import open_sd19
>>> src = open_sd19("/data/sd19")                       # doctest: +SKIP
>>> src.edition, src.hierarchies                        # doctest: +SKIP
(2, ('by_class', 'by_field', 'by_merge', 'by_write'))
>>> digits = np.flatnonzero(src.index["field"] == b"d")  # doctest: +SKIP
>>> images = src.read_all(digits[:10])                  # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any, Iterator, TypeVar

import numpy as np
import numpy.typing as npt

from .. import settings
from ..errors import MissingSourceError, SD19FormatError
from ..progress import progress as _progress
from . import index as _index
from .ihead import parse_cls
from .join import JoinReport, join_classes
from .decode import IMAGE, _bounds, _hash_tree, _job_bits, _job_make, _Pool, _raw_tree
from .products import Product, ProductWriter, is_kept, load_product, product_rows
from .trees import HIERARCHIES, Tree, _parse_by_write, _parse_classed, find_trees

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

__all__ = ["open_sd19", "SD19Source", "HIERARCHIES", "Tree", "find_trees"]

# --- the source -------------------------------------------------------------------------------

@dataclass(eq=False, repr=False)
class SD19Source:
    """An opened SD19 source (see :func:`open_sd19`)."""

    path: Path
    trees: dict[str, Tree]
    edition: int
    index: np.ndarray
    files: np.ndarray
    file_of_row: np.ndarray
    fingerprint: str
    join_report: JoinReport | None
    anomalies: list[str]
    cls_present: bool
    workers: int
    cache: bool = True

    @property
    def hierarchies(self) -> tuple[str, ...]:
        return tuple(sorted(self.trees))

    @property
    def packaging(self) -> str:
        return self.trees["by_write"].kind

    def __len__(self) -> int:
        return len(self.index)

    def __repr__(self) -> str:
        return (f"SD19Source({str(self.path)!r}, edition={self.edition}, packaging={self.packaging!r}, "
                f"hierarchies={self.hierarchies}, characters={len(self.index)})")

    def member_name(self, row: int) -> str:
        """Path of a character in the by_write hierarchy (``#entry`` for a ``.mis``)."""
        name = "by_write/" + self.files["name"][self.file_of_row[row]].decode()
        return name if self.edition == 2 else f"{name}#{int(self.index['entry'][row])}"

    def digits(self) -> np.ndarray:
        """Rows of the digits, in walk order (row k has ``digit_index`` k)."""
        return np.flatnonzero(self.index["field"] == b"d")

    def read(self, rows: npt.ArrayLike, *, batch_size: int = 4096,
             workers: int | None = None) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]]:
        """Yield ``(rows_batch, images)`` for ``rows`` in the given order.

        ``images`` is bool ``(b, 128, 128)``, ``True`` = ink.  Decoding runs in ``workers`` processes (default: all
        usable cores), each reading the zip or files itself.
        """
        for r, packed in self._iter_packed(rows, batch_size, workers):
            yield r, np.unpackbits(packed, axis=1).view(bool).reshape(-1, IMAGE, IMAGE)

    def read_all(self, rows: npt.ArrayLike, *, batch_size: int = 4096,
                 workers: int | None = None) -> npt.NDArray[np.bool_]:
        """All images of ``rows`` at once: bool ``(len(rows), 128, 128)``.

        The rows are read in walk order whatever their order here (fastest for both editions); :meth:`read` keeps the
        order given, batch by batch.
        """
        rows = np.asarray(rows, np.int64).ravel()
        # Read in walk order (sequential zip reads, each .mis decoded once), then put back.
        order = np.argsort(rows, kind="stable")
        packed = np.empty((len(rows), IMAGE * IMAGE // 8), np.uint8)
        pos = 0
        for r, p in self._iter_packed(rows[order], batch_size, workers):
            packed[order[pos:pos + len(r)]] = p
            pos += len(r)
        return np.unpackbits(packed, axis=1).view(bool).reshape(-1, IMAGE, IMAGE)

    def read_packed(self, rows: npt.ArrayLike, *, batch_size: int = 4096,
                    workers: int | None = None) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]]:
        """Like :meth:`read` but images packed row-major with ``np.packbits``: ``(b, 2048)`` uint8."""
        yield from self._iter_packed(rows, batch_size, workers)

    def make(self, products: Sequence[Product], rows: npt.ArrayLike, *, desc: str = "decoding SD19",
             progress: bool | None = None, workers: int | None = None) -> list[np.ndarray]:
        """Each product of ``rows`` (a digits product: of the digits among them, in the order given),
        every character decoded once, in worker processes; only the products travel back."""
        rows = np.asarray(rows, np.int64).ravel()
        is_digit = self.index["field"][rows] == b"d"
        order = np.argsort(rows, kind="stable")   # walk order: sequential reads, each .mis decoded once
        parts: list[list[np.ndarray]] = [[] for _ in products]
        self._pass(products, rows[order], [p.append for p in parts], desc, progress, workers)
        outs = []
        for p, got in zip(products, parts):
            made = np.concatenate(got) if got else np.zeros((0, 28, 28), np.uint8)
            # made[k] is the k-th character of p in walk order: put it where the caller asked for it
            slot = (np.cumsum(is_digit) - 1)[order[is_digit[order]]] if p.digits else order
            out = np.empty_like(made)
            out[slot] = made
            outs.append(out)
        return outs

    def product(self, product: Product, *, progress: bool | None = None) -> np.ndarray:
        """A :class:`~mnistforge.sd19.products.Product` of this source (read-only): the kept one, else made and kept."""
        return self.products([product], progress=progress)[0]

    def products(self, products: Sequence[Product], *, progress: bool | None = None) -> list[np.ndarray]:
        """Each of ``products``: the kept ones read back (and checked), the others made in one pass
        over the characters they cover and kept (:meth:`keep`), then read back; held in memory
        only when they cannot be kept."""
        got = {p.name: self.kept(p) for p in products}
        missing = [p for p in products if got[p.name] is None]
        if missing and self.cache:
            self.keep(missing, progress=progress)
            got.update({p.name: self.kept(p) for p in missing})
            missing = [p for p in missing if got[p.name] is None]
        if missing:
            rows = np.unique(np.concatenate([product_rows(self.index, p) for p in missing]))
            for p, images in zip(missing, self.make(missing, rows, desc="decoding SD19", progress=progress)):
                images.setflags(write=False)
                got[p.name] = images
        return [got[p.name] for p in products]  # type: ignore[misc]

    def keep(self, products: Sequence[Product], *, progress: bool | None = None) -> None:
        """Make ``products`` in one pass over the characters they cover, each written next to the
        index as it comes (never whole in memory; a failure to write only warns)."""
        rows = np.unique(np.concatenate([product_rows(self.index, p) for p in products]))
        with contextlib.ExitStack() as keep:
            writers = [keep.enter_context(ProductWriter(_cache_root(self.path), self.fingerprint, p.name))
                       for p in products]
            self._pass(products, rows, [w.add for w in writers],
                       "decoding SD19 once for " + ", ".join(p.name for p in products), progress)

    def _pass(self, products: Sequence[Product], rows: np.ndarray, sinks: Sequence[Callable[[np.ndarray], None]],
              desc: str, progress: bool | None, workers: int | None = None) -> None:
        """One decode of ``rows`` (walk order) making ``products`` in worker processes; each
        product's images go to its sink as they come, in order."""
        bounds, window, workers = self._plan(rows, 4096, workers)
        jobs = self._map(_job_make, rows, bounds, window, workers, self.index["field"][rows] == b"d", tuple(products))
        with _progress(total=len(rows), desc=desc, unit="char", disable=None if progress is None else not progress) \
                as bar:
            for (s, e), parts in zip(bounds, jobs):
                for sink, part in zip(sinks, parts):
                    sink(part)
                bar.update(e - s)

    def kept(self, product: Product) -> np.ndarray | None:
        """The product kept for this source (read once and checked), or None."""
        return load_product(_cache_root(self.path), self.fingerprint, product.name) if self.cache else None

    def _plan(self, rows: np.ndarray, batch_size: int, workers: int | None) -> tuple[list[tuple[int, int]], int, int]:
        """(start, end) of each worker job over ``rows`` (per batch, several shares per worker), the
        window of jobs in flight and the worker count."""
        workers = self.workers if workers is None else max(1, int(workers))
        if len(rows) < 512:
            workers = 1
        # several jobs per batch keep every worker busy; jobs stay large enough to amortise the inter-process round trip
        per_batch = max(1, min(2 * workers, batch_size // 256)) if workers > 1 else 1
        bounds = []
        for bs, be in _bounds(len(rows), batch_size):
            step = -(-(be - bs) // per_batch)
            bounds += [(s, min(be, s + step)) for s in range(bs, be, step)]
        return bounds, 2 * per_batch, workers

    def _map(self, fn: Callable[..., _T], rows: np.ndarray, bounds: list[tuple[int, int]], window: int, workers: int,
             *extra: Any) -> Iterator[_T]:
        """``fn`` over the jobs ``bounds`` of ``rows``, in order: each job gets its files, the entries
        to take from them, and ``extra`` (arrays cut to the job)."""
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self.index)):
            raise IndexError(f"rows must lie in 0..{len(self.index) - 1}")
        fmt = "png" if self.edition == 2 else "mis"
        spec = self.trees["by_write"].spec()
        files_all = self.file_of_row[rows]
        entries_all = self.index["entry"][rows] if fmt == "mis" else np.zeros(len(rows), np.int64)

        def jobs() -> Iterator[tuple[Any, ...]]:
            for s, e in bounds:
                uniq, pos = np.unique(files_all[s:e], return_inverse=True)
                yield (spec, self.files[uniq], fmt, pos, entries_all[s:e],
                       *(x[s:e] if isinstance(x, np.ndarray) else x for x in extra))

        with _Pool(workers) as pool:
            yield from pool.map(fn, jobs(), window=window)

    def _iter_packed(self, rows: npt.ArrayLike, batch_size: int,
                     workers: int | None) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]]:
        rows = np.asarray(rows, np.int64).ravel()
        bounds, window, workers = self._plan(rows, batch_size, workers)
        results = self._map(_job_bits, rows, bounds, window, workers)
        for bs, be in _bounds(len(rows), batch_size):
            parts: list[npt.NDArray[np.uint8]] = []
            got = 0
            while got < be - bs:
                r = next(results)
                parts.append(r)
                got += len(r)
            yield rows[bs:be], (np.concatenate(parts) if len(parts) > 1 else parts[0])


def _cache_root(path: Path) -> Path:
    """The folder whose cache holds the index and products of the source at ``path``."""
    return path if path.is_dir() else path.parent


def open_sd19(path: str | os.PathLike[str], *, progress: bool | None = None, cache: bool = True, reindex: bool = False,
              strict: bool = False, workers: int | None = None, products: Sequence[Product] = ()) -> SD19Source:
    """Open an SD19 source and return an :class:`SD19Source` with its index.

    ``path``: folder with the 2nd-edition zips, or with unpacked trees of either edition (``by_write/``, ...), or a zip.
    ``progress``: show progress bars (None: only on a terminal).
    ``cache``: reuse / write the cached index (next to the source, else in the mnistforge cache).
    ``reindex``: ignore any cached index and walk the source again.
    ``strict``: raise :class:`~mnistforge.errors.JoinError` when a class join is incomplete.
    ``workers``: decoding processes (default: every usable core).
    ``products``: :class:`~mnistforge.sd19.products.Product` to have kept next to the index, made
    from the same decode as the index when it is built (else from one pass), for
    :meth:`SD19Source.product` to read back.
    """
    path = Path(path)
    workers = settings.current(workers=workers).workers
    trees = find_trees(path)
    if "by_write" not in trees:
        raise MissingSourceError("SD19 by_write hierarchy not found", path=path,
                                 expected="by_write.zip or a by_write/ folder",
                                 found=f"hierarchies {sorted(trees) or 'none'}",
                                 hint="the index is built from by_write (writers, fields, walk order); "
                                      "download by_write.zip next to the others")
    fp = _fingerprint(trees)
    root = _cache_root(path)
    if cache and not reindex:
        if (hit := _index.load_cache(root, fp)) is not None:
            arrays, meta = hit
            rep = JoinReport.from_dict(meta["join"]) if meta.get("join") else None
            if strict and rep is not None:
                rep.raise_if_failed(path)
            src = SD19Source(path, trees, meta["edition"], arrays["index"], arrays["files"], arrays["file_of_row"], fp,
                             rep, meta.get("anomalies", []), meta.get("cls_present", False), workers)
            if missing := [p for p in products if not is_kept(root, fp, p.name)]:
                src.keep(missing, progress=progress)   # in one pass, on disk, not held here
            return src
    src = _build(path, trees, fp, workers, progress, strict, tuple(products) if cache else ())
    src.cache = cache
    if cache:
        meta = {"edition": src.edition, "anomalies": src.anomalies, "cls_present": src.cls_present,
                "join": src.join_report.to_dict() if src.join_report is not None else None,
                "source": str(path.resolve())}
        _index.save_cache(root, fp, {"index": src.index, "files": src.files, "file_of_row": src.file_of_row}, meta)
    return src


def _fingerprint(trees: dict[str, Tree]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(trees):
        for item in trees[name].fingerprint_items():
            h.update(repr(item).encode())
    return "sd19-" + h.hexdigest()


def _build(path: Path, trees: dict[str, Tree], fp: str, workers: int, progress: bool | None,
           strict: bool, products: tuple[Product, ...] = ()) -> SD19Source:
    bw = trees["by_write"]
    edition, recs, cls_files, anomalies = _parse_by_write(bw)
    fmt = "png" if edition == 2 else "mis"
    disable = None if progress is None else not progress
    logger.info("SD19 %s: edition %d, %d by_write files", bw.display, edition, len(recs))

    file_idx = np.array([r[-1] for r in recs], np.int64)
    if len(file_idx) < (2048 if fmt == "png" else 32):
        workers = 1   # a pool costs more than it saves on a tiny source
    # hash every character (and learn the entry count of each .mis), making the products from the same decode
    digit_files = np.array([r[7] for r in recs], "S1") == b"d"
    with _Pool(workers) as pool, contextlib.ExitStack() as keep:
        writers = [keep.enter_context(ProductWriter(_cache_root(path), fp, p.name)) for p in products]
        with _progress(total=len(file_idx) if fmt == "png" else None, desc="indexing SD19 by_write",
                       unit="img" if fmt == "png" else "char", disable=disable) as bar:
            counts, hashes, raw = _hash_tree(bw, file_idx, fmt, pool, bar, 512 if fmt == "png" else 8,
                                             digit_files, products, [w.add for w in writers])

        n = int(counts.sum())
        idx = np.zeros(n, _index.INDEX_DTYPE)
        per = np.repeat(np.arange(len(recs)), counts)
        meta = np.array([(r[4], r[5], r[6]) for r in recs], np.int64).reshape(-1, 3)
        fields = np.array([r[7] for r in recs], "S1")
        idx["hsf"] = meta[per, 0]
        idx["writer"] = meta[per, 1]
        idx["template"] = meta[per, 2]
        idx["field"] = fields[per]
        if edition == 2:
            idx["entry"] = np.array([r[3] for r in recs], np.int64)
            file_of_row = np.arange(n, dtype=np.int32)
        else:
            starts = np.repeat(np.cumsum(counts) - counts, counts)
            idx["entry"] = np.arange(n) - starts
            file_of_row = per.astype(np.int32)
        idx["hash"] = hashes
        idx["digit_index"] = _index.number_digits(idx["field"])
        idx["duplicate_of"] = _index.find_duplicates(idx["hash"])
        anomalies += _entry_gaps(idx, edition)

        # classes: .cls where present, else a content join
        asc, cls_present = _classes_from_cls(bw, idx, cls_files, recs, per, edition)
        report = None
        need = np.flatnonzero(asc == 0)
        if len(need):
            report = _join(trees, idx, need, asc, pool, disable, anomalies, raw if fmt == "png" else None)
        idx["ascii"] = asc
    files = bw.file_table(file_idx)
    src = SD19Source(path, trees, edition, idx, files, file_of_row, fp, report, anomalies, cls_present, workers)
    if report is not None and strict:
        report.raise_if_failed(path)
    return src


def _entry_gaps(idx: np.ndarray, edition: int) -> list[str]:
    """Anomalies: field files whose entries are not numbered 0..n-1 (2nd edition)."""
    if edition != 2 or not len(idx):
        return []
    key = np.stack([idx["hsf"].astype(np.int64), idx["writer"], idx["template"], idx["field"].view(np.uint8)], axis=1)
    new = np.ones(len(idx), bool)
    new[1:] = (key[1:] != key[:-1]).any(axis=1)
    start = np.maximum.accumulate(np.where(new, np.arange(len(idx)), 0))
    bad = np.flatnonzero(idx["entry"] != np.arange(len(idx)) - start)
    out = [f"by_write hsf_{idx['hsf'][r]}/f{idx['writer'][r]:04d}_{idx['template'][r]:02d} field "
           f"{idx['field'][r].decode()}: entry numbers not contiguous (found {idx['entry'][r]})" for r in bad[:20]]
    if len(bad) > 20:
        out.append(f"... {len(bad) - 20} more non-contiguous entries")
    return out


def _classes_from_cls(bw: Tree, idx: np.ndarray, cls_files: dict[tuple[int, int, int, str], int],
                      recs: list[tuple[Any, ...]], per: np.ndarray, edition: int) -> tuple[npt.NDArray[np.uint8], bool]:
    asc = np.zeros(len(idx), np.uint8)
    if not cls_files:
        return asc, False
    # rows of each (hsf, writer, template, field) group, in walk order
    key_of_rec = [(r[4], r[5], r[6], r[7]) for r in recs]
    rows_of_key: dict[tuple[Any, ...], tuple[int, ...]] = {}
    if edition == 1:
        bounds = np.searchsorted(per, np.arange(len(recs) + 1))
        for i, k in enumerate(key_of_rec):
            rows_of_key[k] = (int(bounds[i]), int(bounds[i + 1]))
    else:
        first: dict[tuple[Any, ...], list[int]] = {}
        for i, k in enumerate(key_of_rec):
            first.setdefault(k, [i, i + 1])[1] = i + 1
        rows_of_key = {k: tuple(v) for k, v in first.items()}
    for k, (s, e) in rows_of_key.items():
        if (fi := cls_files.get(k)) is None:
            continue
        name = bw.names[fi]
        text = bw.read_bytes(name).decode("ascii", "replace")
        codes = parse_cls(text, path=f"{bw.display}/{name}" if bw.kind == "dir" else f"{bw.display}{name}")
        if len(codes) != e - s:
            raise SD19FormatError(".cls count disagrees with the entries it describes",
                                  path=(bw.location / name) if bw.kind == "dir" else f"{bw.location}:{bw.prefix}{name}",
                                  expected=f"{e - s} classes (one per entry of the field file)",
                                  found=f"{len(codes)} classes",
                                  hint="the .cls or its images are damaged; re-copy them")
        asc[s:e] = codes
    return asc, True


def _hashes_by_bytes(tree: Tree, files: list[int], raw: np.ndarray, hashes: np.ndarray, pool: _Pool,
                     bar: Any) -> np.ndarray:
    """Content hash of each PNG ``files`` of another hierarchy: one whose bytes equal a by_write
    file's (``raw``: their digests, ``hashes``: their images' hashes) has that image, so only the
    others are decoded (NIST's hierarchies hold the same PNG files: SD19 is decoded once)."""
    o_raw = _raw_tree(tree, files, pool, 2048)
    order = np.argsort(raw, kind="stable")
    pos = np.minimum(np.searchsorted(raw[order], o_raw), max(len(raw) - 1, 0))
    same = raw[order][pos] == o_raw if len(raw) else np.zeros(len(o_raw), bool)
    out = np.empty(len(files), "S16")
    out[same] = hashes[order[pos[same]]]
    rest = np.flatnonzero(~same)
    bar.update(len(files) - len(rest))
    if len(rest):
        out[rest] = _hash_tree(tree, np.asarray(files)[rest], "png", pool, bar, 512)[1]
    return out


def _join(trees: dict[str, Tree], idx: np.ndarray, need: npt.NDArray[np.intp], asc: npt.NDArray[np.uint8],
          pool: _Pool, disable: bool | None, anomalies: list[str], raw: np.ndarray | None = None) -> JoinReport:
    """Give rows ``need`` a class by content from by_field or by_class (``raw``: the by_write PNGs'
    byte digests, for :func:`_hashes_by_bytes`)."""
    for name in ("by_field", "by_class"):
        if name not in trees:
            continue
        if (chars := _parse_classed(trees[name])) is None:
            continue
        tree = trees[name]
        with _progress(total=len(chars.files) if chars.fmt == "png" else None,
                       desc=f"joining by_write with {name}", unit="img", disable=disable) as bar:
            if chars.fmt == "png" and raw is not None:
                counts, o_hash = np.ones(len(chars.files), np.int64), _hashes_by_bytes(
                    tree, chars.files, raw, idx["hash"], pool, bar)
            else:
                chunk = 512 if chars.fmt == "png" else 2
                counts, o_hash, _ = _hash_tree(tree, chars.files, chars.fmt, pool, bar, chunk)
        rep_idx = np.repeat(np.arange(len(chars.files)), counts)
        o_entry = np.arange(len(rep_idx)) - np.repeat(np.cumsum(counts) - counts, counts)
        names = [f"{name}/{tree.names[chars.files[f]]}" + (f"#{e}" if chars.fmt == "mis" else "")
                 for f, e in zip(rep_idx, o_entry)]
        o_field = chars.field[rep_idx] if chars.field is not None else None
        got, report = join_classes(idx["hsf"][need], idx["field"][need], idx["hash"][need], chars.hsf[rep_idx], o_field,
                                   chars.ascii[rep_idx], o_hash, names, other=name, rows=need)
        asc[need] = got
        return report
    report = JoinReport(other="", rows=len(need), joined=0, unjoined_rows=need.astype(np.int64))
    anomalies.append(f"{len(need)} by_write characters have no class: no .cls files and no by_class "
                     "or by_field hierarchy to join with")
    logger.warning("SD19: %s", anomalies[-1])
    return report
