"""Integrity checks: files parse, arrays have the right shape, counts agree.

Every function takes plain arrays (or paths, for :func:`check_parse`) and
returns a :class:`~mnistforge.checks.result.CheckResult`.

>>> check_counts(np.zeros((3, 28, 28), np.uint8), np.zeros(3, np.uint8)).status
'pass'
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..io.compression import compression_of, open_reader
from ..io.idx import FileRead, read_idx, read_idx_header
from ..io.types import StrPath
from .result import FAIL, PASS, CheckResult, fail, result

#: ``content(md5) -> (sha256, md5 or None, size)`` of a file's decompressed bytes (:func:`check_parse`)
ContentHasher = Callable[[bool], tuple[str, str | None, int]]


def check_parse(paths: Iterable[StrPath], name: str = "integrity.parse",
                contents: dict[Path, ContentHasher] | None = None,
                reads: Mapping[Path, FileRead] | None = None) -> CheckResult:
    """Every idx file parses completely (header, declared size, compression). A truncated or corrupted file fails with
    the reader's own message.  With ``contents`` (a dict), each compressed file that parses gets an entry ``{path:
    hash(md5) -> (sha256, md5 or None, size)}`` hashing the content just inflated, so the hash check need not inflate
    the file again.  ``reads``: files as the load read them (parsed whole, from bytes that kept their identity while
    read): judged as read, not opened again."""
    files = [Path(p) for p in paths]
    shapes: dict[str, list[int]] = {}
    errors: dict[str, str] = {}
    for p in files:
        if (r := (reads or {}).get(p)) is not None and r.steady and len(r.content):
            shapes[p.name] = list(r.array.shape)
            if contents is not None:
                contents[p] = functools.partial(_read_content, r)
            continue
        try:
            a = read_idx(p, mmap=True)
            shapes[p.name] = list(a.shape)
            if isinstance(a, np.memmap):
                # Touch the last element so a short raw file is noticed even if
                # the reader only checked the header lazily.
                _ = a.reshape(-1)[-1:].copy() if a.size else None
            elif contents is not None and (hasher := _content_hasher(p, a)) is not None:
                contents[p] = hasher
        except Exception as e:
            errors[p.name] = f"{type(e).__name__}: {e}"
    values = {"files": len(files), "shapes": shapes, "errors": errors}
    if not files:
        return fail(name, values, "no idx files found")
    if errors:
        first = next(iter(errors.items()))
        return fail(name, values, f"{len(errors)} of {len(files)} files do not parse "
                                  f"({first[0]}: {first[1]})")
    return CheckResult(name, PASS, values, f"{len(files)} files parse")


def _read_content(read: FileRead, md5: bool) -> tuple[str, str | None, int]:
    return read.digest("content_sha256"), (read.digest("content_md5") if md5 else None), len(read.content)


def _content_hasher(path: Path, arr: np.ndarray) -> ContentHasher | None:
    """A function hashing the decompressed bytes of ``path`` from its parsed array: the
    header bytes (read again, a few bytes) then the payload as the file stores it."""
    if compression_of(path.name) is None or arr.dtype.itemsize != 1:
        return None   # multi-byte payloads were byte-swapped: let the hash check inflate
    offset = read_idx_header(path).offset
    with open_reader(path, path.name) as f:
        head = f.read(offset)
    if len(head) != offset or not arr.flags.c_contiguous:
        return None

    def content(md5: bool) -> tuple[str, str | None, int]:
        h = hashlib.sha256(head)
        h.update(arr.data)
        m = hashlib.md5(head, usedforsecurity=False) if md5 else None
        if m is not None:
            m.update(arr.data)
        return h.hexdigest(), (m.hexdigest() if m else None), offset + arr.nbytes
    return content


def check_images(images: np.ndarray, name: str = "integrity.images",
                 shape: tuple[int, ...] = (28, 28), dtype: npt.DTypeLike = np.uint8) -> CheckResult:
    """Images are a ``N x 28 x 28`` array of ``uint8``."""
    images = np.asarray(images) if not hasattr(images, "shape") else images
    values = {"shape": list(images.shape), "dtype": str(images.dtype)}
    problems = []
    if images.ndim != 1 + len(shape) or tuple(images.shape[1:]) != tuple(shape):
        problems.append(f"shape {tuple(images.shape)} (expected N x {' x '.join(map(str, shape))})")
    if images.dtype != np.dtype(dtype):
        problems.append(f"dtype {images.dtype} (expected {np.dtype(dtype)})")
    if problems:
        return fail(name, values, "; ".join(problems))
    return CheckResult(name, PASS, values, f"{images.shape[0]} x {' x '.join(map(str, shape))} {images.dtype}")


def check_counts(images: np.ndarray, labels: np.ndarray, name: str = "integrity.counts",
                 metadata: np.ndarray | None = None) -> CheckResult:
    """Images, labels (and metadata rows when given) agree in count."""
    n_img, n_lab = len(images), len(labels)
    values = {"images": n_img, "labels": n_lab}
    ok = n_img == n_lab
    if metadata is not None:
        values["metadata"] = len(metadata)
        ok = ok and len(metadata) >= n_img
    msg = f"{n_img} images, {n_lab} labels" + (f", {len(metadata)} metadata rows" if metadata is not None else "")
    if labels is not None and np.asarray(labels).ndim != 1:
        return fail(name, values, f"labels must be one-dimensional, found shape {np.shape(labels)}")
    return result(name, ok, values, msg if ok else "count mismatch: " + msg)


def check_label_range(labels: npt.ArrayLike, n_classes: int, offset: int = 0,
                      name: str = "integrity.labels") -> CheckResult:
    """Every label lies in ``offset .. offset + n_classes - 1``. ``offset`` is 1 for EMNIST letters, whose official
    labels start at 1."""
    labels = np.asarray(labels)
    lo, hi = offset, offset + n_classes - 1
    values: dict[str, Any] = {"classes": n_classes, "range": [lo, hi]}
    if labels.size == 0:
        return fail(name, values, "no labels")
    mn, mx = int(labels.min()), int(labels.max())
    values.update(min=mn, max=mx)
    bad = np.flatnonzero((labels < lo) | (labels > hi))
    values["out_of_range"] = int(bad.size)
    if bad.size:
        values["examples"] = bad[:10].tolist()
        return fail(name, values, f"{bad.size} labels outside {lo}..{hi} "
                                  f"(first at index {bad[0]}: {int(labels[bad[0]])})")
    used = np.unique(labels)
    values["classes_present"] = int(used.size)
    msg = f"labels in {lo}..{hi}, {used.size} of {n_classes} classes present"
    return CheckResult(name, PASS, values, msg)


def check_size(n: int, expected: int | None, name: str = "integrity.size", source: str = "registry") -> CheckResult:
    """The split has the number of images the registry (or manifest) declares."""
    values = {"found": int(n), "expected": expected, "source": source}
    if expected is None:
        return CheckResult(name, PASS, values, f"{n} images (no declared size to compare)")
    ok = int(n) == int(expected)
    msg = (f"{n} images as the {source} declares" if ok
           else f"{n} images, the {source} declares {expected} ({int(n) - int(expected):+d})")
    return result(name, ok, values, msg)


def check_balanced(labels: npt.ArrayLike, expected_per_class: int | None = None, n_classes: int | None = None,
                   offset: int = 0, name: str = "integrity.balance") -> CheckResult:
    """Per-class counts of a balanced dataset are exactly equal. With ``expected_per_class`` each class must hold
    exactly that many; with ``n_classes`` every class must be present."""
    labels = np.asarray(labels).astype(np.int64)
    k = n_classes if n_classes is not None else int(labels.max()) + 1 - offset
    counts = np.bincount(labels - offset, minlength=k)[:k] if labels.size else np.zeros(k, int)
    values: dict[str, Any] = {"per_class_min": int(counts.min()), "per_class_max": int(counts.max()),
              "expected_per_class": expected_per_class}
    if expected_per_class is not None:
        off = np.flatnonzero(counts != expected_per_class)
        if off.size:
            values["classes_off"] = {int(c + offset): int(counts[c]) for c in off[:10]}
            return fail(name, values, f"{off.size} classes differ from {expected_per_class} per "
                                      f"class (e.g. class {off[0] + offset}: {counts[off[0]]})")
        return CheckResult(name, PASS, values, f"{k} classes x {expected_per_class}")
    if counts.min() != counts.max():
        return fail(name, values, f"per-class counts range {counts.min()}..{counts.max()}, "
                                  "a balanced split has equal counts")
    return CheckResult(name, PASS, values, f"{k} classes x {counts[0]}")


def check_metadata_labels(labels: npt.ArrayLike, metadata_labels: npt.ArrayLike,
                          name: str = "integrity.metadata") -> CheckResult:
    """The label column of the metadata agrees with the label file."""
    labels = np.asarray(labels).astype(np.int64)
    meta = np.asarray(metadata_labels).astype(np.int64)[: len(labels)]
    if len(meta) < len(labels):
        return fail(name, {"labels": len(labels), "metadata": len(meta)},
                    f"metadata has {len(meta)} rows for {len(labels)} labels")
    bad = np.flatnonzero(meta != labels)
    values: dict[str, Any] = {"rows": len(labels), "disagree": int(bad.size)}
    if bad.size:
        values["examples"] = bad[:10].tolist()
        return fail(name, values, f"{bad.size} labels disagree with the metadata "
                                  f"(first at index {bad[0]})")
    return CheckResult(name, PASS, values, f"{len(labels)} labels agree with the metadata")


__all__ = ["check_parse", "check_images", "check_counts", "check_label_range", "check_size",
           "check_balanced", "check_metadata_labels", "FAIL"]
