"""The files of the QMNIST-family builds: names, idx/tsv writers, xz for xnist.

Every writer is atomic (temporary name, then rename) and reproducible (gzip with mtime 0, xz in fixed blocks).
"""
from __future__ import annotations

import lzma
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import numpy.typing as npt

from .. import settings
from ..io.atomic import atomic_file
from ..io.compression import gzip_bytes
from ..io.idx import idx_header_bytes, write_idx
from . import qmnist_recipe as qr

QMNIST_FILES = {
    split: {
        "images": f"qmnist-{split}-images-idx3-ubyte.gz", "labels": f"qmnist-{split}-labels-idx1-ubyte.gz",
        "table": f"qmnist-{split}-labels-idx2-int.gz", "tsv": f"qmnist-{split}-labels.tsv.gz",
    } for split in ("train", "test")
}
MNIST_FILES = {
    "train": {"images": "train-images-idx3-ubyte.gz", "labels": "train-labels-idx1-ubyte.gz"},
    "test": {"images": "t10k-images-idx3-ubyte.gz", "labels": "t10k-labels-idx1-ubyte.gz"},
}
XNIST_FILES = {
    "images": "xnist-images-idx3-ubyte.xz", "table": "xnist-labels-idx2-int.xz", "tsv": "xnist-labels.tsv.xz",
}


# ---------------------------------------------------------------------------

def format_tsv(table: npt.ArrayLike) -> bytes:
    """The extended labels as tab-separated text, one row per line (the published format).

    >>> format_tsv(np.array([[7, 4, 2578, 69, 37, 279260, 0, 0]]))
    b'7\\t4\\t2578\\t69\\t37\\t279260\\t0\\t0\\n'
    """
    table = np.asarray(table, dtype=np.int64)
    if table.size == 0:
        return b""
    lines = "\n".join("\t".join(map(str, r)) for r in table.tolist())
    return (lines + "\n").encode("ascii")


# xz preset for the xnist files: level 1 compresses MNIST-like images almost as well as
# level 6 (about 10% larger) at several times the speed
XZ_PRESET = 1
XZ_BLOCK = 1 << 24


def write_tsv(path: str | os.PathLike[str], table: npt.ArrayLike) -> None:
    """Write a table as tsv, compressed by suffix (.gz mtime 0, .xz), atomically."""
    path = Path(path)
    data = format_tsv(table)
    if path.suffix == ".gz":
        data = gzip_bytes(data, level=6)
    elif path.suffix == ".xz":
        data = _xz_parallel(data)
    with atomic_file(path) as f:
        f.write(data)


def _xz_parallel(data: bytes, preset: int | None = None, block: int | None = None) -> bytes:
    """xz-compress in fixed blocks on all cores, as concatenated xz streams.

    A multi-stream .xz is standard (``xz -d``, Python's lzma and the idx reader
    read it); fixed block boundaries keep the bytes reproducible.
    """
    preset = XZ_PRESET if preset is None else preset
    block = XZ_BLOCK if block is None else block
    parts = [data[i:i + block] for i in range(0, len(data), block)] or [b""]
    if len(parts) == 1:
        return lzma.compress(parts[0], preset=preset)
    with ThreadPoolExecutor(max_workers=settings.current().workers) as ex:    # lzma frees the GIL
        return b"".join(ex.map(lambda b: lzma.compress(b, preset=preset), parts))


def write_idx_xz(path: str | os.PathLike[str], array: npt.ArrayLike) -> None:
    """Write an idx file as (multi-stream) xz, atomically and reproducibly."""
    arr = np.ascontiguousarray(array)
    data = idx_header_bytes(arr.shape, arr.dtype) + arr.astype(arr.dtype.newbyteorder(">")).tobytes()
    blob = _xz_parallel(data)
    with atomic_file(path) as f:
        f.write(blob)


def write_files(jobs: Iterable[Callable[[], object]]) -> None:
    """Run the file writers two at a time (compression releases the GIL)."""
    with ThreadPoolExecutor(max_workers=2) as ex:
        for fut in [ex.submit(j) for j in jobs]:
            fut.result()


def split_jobs(folder: Path, names: dict[str, str], images: np.ndarray, table: np.ndarray) -> list[Callable[[], None]]:
    jobs: list[Callable[[], None]] = [lambda: write_idx(folder / names["images"], images)]
    if "labels" in names:
        jobs.append(lambda: write_idx(folder / names["labels"], table[:, qr.CLASS].astype(np.uint8)))
    if "table" in names:
        jobs.append(lambda: write_idx(folder / names["table"], table.astype(np.int32)))
    if "tsv" in names:
        jobs.append(lambda: write_tsv(folder / names["tsv"], table))
    return jobs


def write_xnist(folder: Path, images: np.ndarray, table: np.ndarray, bar: Any) -> None:
    """Write the three xnist files (each xz-compressed on all cores)."""
    write_idx_xz(folder / XNIST_FILES["images"], images)
    bar.update(1)
    write_idx_xz(folder / XNIST_FILES["table"], table.astype(np.int32))
    bar.update(1)
    write_tsv(folder / XNIST_FILES["tsv"], table)
    bar.update(1)
