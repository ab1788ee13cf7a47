"""Writer checks: how many writers per split, and which ones sit on both sides.

MNIST and QMNIST take train and test from disjoint writers (a shared writer fails); the official EMNIST split
is random per character, so train and test share most writers (a warning with the count) unless the build was
made writer-disjoint.  :func:`writer_ids` reads a structured array with a ``writer`` field, the QMNIST
extended labels (8 columns, writer = column 2) or the EMNIST side files (6 columns, writer = column 0).

>>> check_writers(np.array([1, 2, 2]), np.array([3, 4]), expect_disjoint=True).status
'pass'
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DatasetNotFoundError, FormatError
from ..registry import get_dataset
from .result import FAIL, PASS, WARN, CheckResult

WRITER_COLUMN = {8: 2, 6: 0}
"""Column holding the writer id, by number of metadata columns (QMNIST 8, EMNIST 6)."""

LABEL_COLUMN = {8: 0}
"""Column holding the class label (QMNIST extended labels only)."""


def writer_ids(metadata: npt.ArrayLike) -> np.ndarray:
    """The writer id of every row of a metadata table (see module docstring)."""
    md = np.asarray(metadata)
    if md.dtype.names:
        for field in ("writer", "writer_id"):
            if field in md.dtype.names:
                return md[field].astype(np.int64)
        raise FormatError("metadata has no writer column", expected="a 'writer' field", found=", ".join(md.dtype.names))
    if md.ndim == 2 and md.shape[1] in WRITER_COLUMN:
        return md[:, WRITER_COLUMN[md.shape[1]]].astype(np.int64)
    raise FormatError("metadata layout not understood",
                      expected="8 columns (QMNIST) or 6 columns (EMNIST) or a 'writer' field",
                      found=f"shape {md.shape}")


def metadata_labels(metadata: object) -> np.ndarray | None:
    """The class label column of the metadata, or None when it has none."""
    md = np.asarray(metadata)
    if md.dtype.names:
        for field in ("label", "class", "digit"):
            if field in md.dtype.names:
                return md[field].astype(np.int64)
        return None
    if md.ndim == 2 and md.shape[1] in LABEL_COLUMN:
        return md[:, LABEL_COLUMN[md.shape[1]]].astype(np.int64)
    return None


def expects_disjoint_writers(dataset: str | None, parameters: dict[str, Any] | None = None) -> bool | None:
    """Whether train and test of ``dataset`` must not share writers. The registry's ``writers_disjoint`` (True for
    MNIST/QMNIST, False for the official-style EMNIST split), True for a build split by writer (``split_by=writer``),
    None when unknown."""
    try:
        known = get_dataset(dataset).writers_disjoint if dataset else None
    except DatasetNotFoundError:
        return None
    if known is None:
        return None
    return known or (parameters or {}).get("split_by", "random") == "writer"


def check_writers(train_writers: npt.ArrayLike, test_writers: npt.ArrayLike, *, expect_disjoint: bool | None = True,
                  max_examples: int = 10, name: str = "writers.train-test") -> CheckResult:
    """Count writers per split (the writer id of every image of each) and the writers found in both.
    ``expect_disjoint``: True, a shared writer fails; False, shared writers are expected (official EMNIST) and reported
    as a warning with the count; None, a warning when any are shared."""
    tr = np.unique(np.asarray(train_writers))
    te = np.unique(np.asarray(test_writers))
    shared = np.intersect1d(tr, te)
    test_imgs = int(np.isin(np.asarray(test_writers), shared).sum())
    values = {"writers_train": int(tr.size), "writers_test": int(te.size), "shared": int(shared.size),
              "test_images_by_shared_writers": test_imgs, "shared_examples": shared[:max_examples].tolist(),
              "expect_disjoint": expect_disjoint}
    base = f"{tr.size} writers in train, {te.size} in test, {shared.size} in both"
    if shared.size == 0:
        return CheckResult(name, PASS, values, base)
    if expect_disjoint:
        return CheckResult(name, FAIL, values,
                           f"{base} ({test_imgs} test images by training writers); this dataset "
                           f"must keep writers apart")
    return CheckResult(name, WARN, values, f"{base} ({test_imgs} test images by training writers: style leakage)")


def check_writer_counts(writers: npt.ArrayLike, split: str = "", name: str | None = None) -> CheckResult:
    """Writers in one split (always a pass; the number is the finding)."""
    w = np.asarray(writers)
    u, c = np.unique(w, return_counts=True)
    values = {"writers": int(u.size), "images": int(w.size),
              "images_per_writer_median": float(np.median(c)) if c.size else 0.0,
              "images_per_writer_max": int(c.max()) if c.size else 0}
    return CheckResult(name or f"writers[{split}]", PASS, values,
                       f"{u.size} writers, median {values['images_per_writer_median']:g} "
                       f"images each")


__all__ = ["writer_ids", "metadata_labels", "expects_disjoint_writers", "check_writers",
           "check_writer_counts", "FAIL", "WARN"]
