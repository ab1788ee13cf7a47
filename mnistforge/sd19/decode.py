"""Decoding SD19 character images in parallel (hashing for the index, bits for the builders)."""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import logging
import os
from collections import deque
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from ..errors import SD19FormatError
from ..io.workers import named_worker_errors, process_pool
from . import index as _index
from .ihead import read_mis
from .png1 import decode_png1_many
from .products import Product
from .trees import Tree
from .zipdir import ZipListing, read_members

logger = logging.getLogger(__name__)

IMAGE = 128
_T = TypeVar("_T")

# --- parallel decoding ------------------------------------------------------------------------

def _read_files(spec: tuple[str, str, str], table: np.ndarray) -> tuple[list[bytes], list[str]]:
    """The bytes of the files of ``table`` (FILE_DTYPE rows) and where each is, for messages."""
    kind, location, prefix = spec
    names = [prefix + t.decode() for t in table["name"]]
    if kind == "zip":
        lst = ZipListing(location, names, table["offset"], table["csize"], table["usize"],
                         table["method"], table["crc"])
        return read_members(location, lst, np.arange(len(table))), [f"{location}:{n}" for n in names]
    where = [os.path.join(location, n) for n in names]
    blobs = []
    for p in where:
        with open(p, "rb") as f:
            blobs.append(f.read())
    return blobs, where


def _decode(blobs: list[bytes], where: list[str],
            fmt: str) -> tuple[list[npt.NDArray[np.bool_]], npt.NDArray[np.bool_] | None]:
    """Decoded files: list of bool arrays (n_i, 128, 128), and for PNGs all of them stacked."""
    if fmt == "png":
        imgs = decode_png1_many(blobs, names=where)
        return [imgs[i:i + 1] for i in range(len(imgs))], imgs
    return [read_mis(b, name=w) for b, w in zip(blobs, where)], None


def _load_files(spec: tuple[str, str, str], table: np.ndarray,
                fmt: str) -> tuple[list[npt.NDArray[np.bool_]], npt.NDArray[np.bool_] | None]:
    """Decode the files of ``table`` (FILE_DTYPE rows): list of bool arrays (n_i, 128, 128)."""
    return _decode(*_read_files(spec, table), fmt)


def _digests(blobs: list[bytes]) -> np.ndarray:
    """blake2b-128 of each file's bytes: equal bytes, equal images (the join's shortcut)."""
    return np.array([hashlib.blake2b(b, digest_size=16).digest() for b in blobs], "S16")


def _job_raw(spec: tuple[str, str, str], table: np.ndarray) -> np.ndarray:
    """Worker: the byte digest of each file, nothing decoded."""
    return _digests(_read_files(spec, table)[0])


def _make(imgs: npt.NDArray[np.bool_], is_digit: npt.NDArray[np.bool_],
          products: tuple[Product, ...]) -> tuple[np.ndarray, ...]:
    """Every product of these decoded characters (a digits product: of the digits among them)."""
    if not products:
        return ()
    with threadpool_limits(limits=1, user_api="blas"):  # the processes are the parallelism
        return tuple(p.make(imgs[is_digit] if p.digits else imgs) for p in products)


def _job_hash(spec: tuple[str, str, str], table: np.ndarray, fmt: str, digit_files: npt.NDArray[np.bool_],
              products: tuple[Product, ...] = ()
              ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...], np.ndarray]:
    """Worker: (entries per file, content hash of every character, the products of them, the byte
    digest of each file) of the given files, from one decode."""
    blobs, where = _read_files(spec, table)
    per_file, stacked = _decode(blobs, where, fmt)
    counts = np.array([len(x) for x in per_file], np.int64)
    if stacked is None:
        stacked = np.concatenate(per_file) if per_file else np.zeros((0, IMAGE, IMAGE), bool)
    made = _make(stacked, np.repeat(digit_files, counts), products)
    return counts, _index.hash_images(stacked), made, _digests(blobs)


def _pick(spec: tuple[str, str, str], table: np.ndarray, fmt: str, file_pos: np.ndarray,
          entries: np.ndarray) -> npt.NDArray[np.bool_]:
    """The characters at the (file position, entry) pairs, in that order: bool (n, 128, 128)."""
    per_file, _ = _load_files(spec, table, fmt)
    out = np.empty((len(file_pos), IMAGE, IMAGE), bool)
    for k, (fp, e) in enumerate(zip(file_pos, entries)):
        imgs = per_file[fp]
        if e >= len(imgs):
            raise SD19FormatError("entry beyond the end of its file", path=table["name"][fp].decode(),
                                  expected=f"fewer than {len(imgs)} entries", found=f"entry {e}",
                                  hint="the source changed since it was indexed; reopen with reindex=True")
        out[k] = imgs[e]
    return out


def _job_bits(spec: tuple[str, str, str], table: np.ndarray, fmt: str, file_pos: np.ndarray,
              entries: np.ndarray) -> npt.NDArray[np.uint8]:
    """Worker: packed images for the (file position, entry) pairs, in that order."""
    imgs = _pick(spec, table, fmt, file_pos, entries)
    return np.packbits(imgs.reshape(len(imgs), -1), axis=1)


def _job_make(spec: tuple[str, str, str], table: np.ndarray, fmt: str, file_pos: np.ndarray, entries: np.ndarray,
              is_digit: npt.NDArray[np.bool_], products: tuple[Product, ...]) -> tuple[np.ndarray, ...]:
    """Worker: the products of the characters at the (file position, entry) pairs; only they travel back."""
    return _make(_pick(spec, table, fmt, file_pos, entries), is_digit, products)


class _Pool:
    """A process pool used as an ordered, windowed map; runs inline with one worker."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.ex: cf.ProcessPoolExecutor | None = process_pool(workers) if workers > 1 else None

    def map(self, fn: Callable[..., _T], jobs: Iterable[tuple[Any, ...]], window: int | None = None) -> Iterator[_T]:
        if self.ex is None:
            for j in jobs:
                yield fn(*j)
            return
        window = window or 4 * self.workers
        pending: deque[cf.Future[_T]] = deque()
        it = iter(jobs)
        with named_worker_errors("decoding SD19 images"):
            for j in it:
                pending.append(self.ex.submit(fn, *j))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def close(self) -> None:
        if self.ex is not None:
            self.ex.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _bounds(n: int, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each block of ``size`` rows out of ``n``."""
    for s in range(0, n, size):
        yield s, min(n, s + size)


def _hash_tree(tree: Tree, file_idx: npt.ArrayLike, fmt: str, pool: _Pool, bar: Any, chunk: int,
               digit_files: npt.NDArray[np.bool_] | None = None, products: tuple[Product, ...] = (),
               sinks: Sequence[Callable[[np.ndarray], None]] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(entries per file, hash per character, byte digest per file) of the files; each product's
    images go to its sink as they come, in walk order."""
    table = tree.file_table(file_idx)
    digit_files = np.zeros(len(table), bool) if digit_files is None else digit_files
    jobs = ((tree.spec(), table[s:e], fmt, digit_files[s:e], products) for s, e in _bounds(len(table), chunk))
    counts, hashes, raw = [np.zeros(0, np.int64)], [np.zeros(0, "S16")], [np.zeros(0, "S16")]
    for c, h, m, r in pool.map(_job_hash, jobs):
        counts.append(c)
        hashes.append(h)
        raw.append(r)
        for sink, part in zip(sinks, m):
            sink(part)
        bar.update(len(h))
    return np.concatenate(counts), np.concatenate(hashes), np.concatenate(raw)


def _raw_tree(tree: Tree, file_idx: npt.ArrayLike, pool: _Pool, chunk: int) -> np.ndarray:
    """The byte digest of each of the files, nothing decoded."""
    table = tree.file_table(file_idx)
    jobs = ((tree.spec(), table[s:e]) for s, e in _bounds(len(table), chunk))
    parts = [np.zeros(0, "S16"), *pool.map(_job_raw, jobs)]
    return np.concatenate(parts)
