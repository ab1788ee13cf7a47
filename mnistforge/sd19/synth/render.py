"""Rendering the planned characters in worker processes, spilled to disk in walk order."""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import logging
import mmap
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import numpy as np

from ... import settings
from ...errors import BuildError
from ...io.workers import named_worker_errors, process_pool
from ..glyphs import draw_writer_style, render_characters
from ..png1 import encode_png1
from .config import PARALLEL_MIN, SynthConfig
from .plan import Plan

logger = logging.getLogger(__name__)
_T = TypeVar("_T")
_R = TypeVar("_R")
#: one rendering job: (seed, edition, [(writer, template, hsf, codes), ...])
_Job = tuple[int, int, list[tuple[int, int, int, bytes]]]

# --- Rendering (worker processes) -------------------------------------------------------------

def _render_job(job: _Job) -> tuple[bytes, np.ndarray, bytes]:
    """Render a group of writer folders: (blob, lengths, digests) of per-character payloads, each the PNG (2nd edition)
    or ``zlib(packbits(image))`` (1st edition)."""
    seed, edition, folders = job
    blobs: list[bytes] = []
    for writer, template, hsf, codes in folders:
        style = draw_writer_style(np.random.default_rng([seed, 1, writer]))
        rng = np.random.default_rng([seed, 2, writer, template, hsf])
        images = render_characters(codes, style, rng)
        if edition == 2:
            blobs.extend(encode_png1(im) for im in images)
        else:
            packed = np.packbits(images.reshape(len(images), -1), axis=1)
            blobs.extend(zlib.compress(row.tobytes(), 1) for row in packed)
    lengths = np.fromiter((len(b) for b in blobs), np.int64, len(blobs))
    # Payloads are a pure function of the pixels: equal digests <=> identical images.
    digests = b"".join(hashlib.blake2b(b, digest_size=16).digest() for b in blobs)
    return b"".join(blobs), lengths, digests


def _jobs(config: SynthConfig, plan: Plan, chunk: int) -> Iterator[_Job]:
    rows, folders = plan.rows, plan.folders
    batch: list[tuple[int, int, int, bytes]] = []
    size = 0
    for f in folders:
        codes = rows["ascii"][f["start"]:f["stop"]].tobytes()
        batch.append((int(f["writer"]), int(f["template"]), int(f["hsf"]), codes))
        size += len(codes)
        if size >= chunk:
            yield (int(config.seed) & 0xFFFFFFFF, config.edition, batch)
            batch, size = [], 0
    if batch:
        yield (int(config.seed) & 0xFFFFFFFF, config.edition, batch)


class _Spill:
    """Per-character payloads in a flat temporary file, read back by row."""

    def __init__(self, path: Path, n: int) -> None:
        self.path = path
        self.offsets = np.zeros(n + 1, np.int64)
        self._f = open(path, "wb")
        self._n = 0
        self._map: mmap.mmap | None = None
        # Row -> row whose payload it shows (the three duplicates show their original's).
        self.alias = np.arange(n)

    def append(self, blob: bytes, lengths: np.ndarray) -> None:
        self._f.write(blob)
        k = len(lengths)
        self.offsets[self._n + 1:self._n + 1 + k] = self.offsets[self._n] + np.cumsum(lengths)
        self._n += k

    def finish(self) -> None:
        self._f.close()
        if self.offsets[-1]:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def __getitem__(self, row: int | np.integer[Any]) -> bytes:
        row = self.alias[row]
        assert self._map is not None  # finish() mapped the payloads (rows hold at least one byte)
        return self._map[self.offsets[row]:self.offsets[row + 1]]

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        if not self._f.closed:
            self._f.close()
        self.path.unlink(missing_ok=True)


def _render_all(config: SynthConfig, plan: Plan, spill: _Spill, bar: Any) -> None:
    n = len(plan)
    workers = config.workers or settings.current().workers
    # Jobs group whole writer folders; how they are grouped does not change any byte.
    chunk = int(min(1000, max(50, n // (4 * workers))))
    jobs = _jobs(config, plan, chunk)
    results: Iterator[tuple[bytes, np.ndarray, bytes]]
    pool: cf.ProcessPoolExecutor | None
    if workers <= 1 or n < PARALLEL_MIN:
        results = map(_render_job, jobs)
        pool = None
    else:
        pool = process_pool(workers)
        # Bounded look-ahead keeps memory flat while both cores stay busy.
        results = _bounded_map(pool, _render_job, jobs, 4 * workers)
    try:
        done = 0
        digests: list[bytes] = []
        for blob, lengths, dig in _named(results, "rendering the synthetic SD19"):
            spill.append(blob, lengths)
            digests.append(dig)
            done += len(lengths)
            bar.update(len(lengths))
        if done != n:
            raise BuildError("synthetic SD19 rendering lost characters", expected=f"{n} characters", found=f"{done}")
        _check_distinct(np.frombuffer(b"".join(digests), "S16"), plan)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _check_distinct(digests: np.ndarray, plan: Plan) -> None:
    """Every rendered image must differ from every other (only the planned copies repeat)."""
    _, first, counts = np.unique(digests, return_index=True, return_counts=True)
    if (counts > 1).any():
        rows = plan.rows
        bad = first[counts > 1]
        desc = ", ".join(f"hsf_{rows['hsf'][r]} writer {rows['writer'][r]} field {rows['field'][r].decode()} entry "
                         f"{rows['entry'][r]} '{chr(rows['ascii'][r])}'" for r in bad[:5].tolist())
        raise BuildError("synthetic SD19 rendered identical images by accident",
                         expected="distinct images (the three planned duplicates are copied later)",
                         found=f"{int((counts - 1).sum())} repeats, e.g. {desc}",
                         hint="this is a bug in mnistforge.sd19.glyphs; try another --seed")


def _named(results: Iterable[_T], what: str) -> Iterator[_T]:
    """Iterate ``results``; a dead worker is a :class:`WorkerError`, not a BrokenProcessPool."""
    with named_worker_errors(what):
        yield from results


def _bounded_map(pool: cf.Executor, fn: Callable[[_T], _R], items: Iterable[_T], ahead: int) -> Iterator[_R]:
    pending: list[cf.Future[_R]] = []
    it = iter(items)
    for item in it:
        pending.append(pool.submit(fn, item))
        if len(pending) >= ahead:
            break
    while pending:
        fut = pending.pop(0)
        if (nxt := next(it, None)) is not None:
            pending.append(pool.submit(fn, nxt))
        yield fut.result()
