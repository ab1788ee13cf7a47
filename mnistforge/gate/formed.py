"""Is the data well formed: shape, type, pixel range and class range against the registry's facts
(every route; they read only the arrays' shape, type and extremes: microseconds).

>>> from mnistforge.registry import get_dataset
>>> try:
...     require_images(np.zeros((2, 14, 56), np.uint8), get_dataset("mnist"), "x.npz")
... except ValueError as e:
...     print(type(e).__name__, str(e)[:48])
IntegrityError x.npz: mnist: images are not 28 x 28: expected N
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import FormatError, IntegrityError, Where
from ..registry import DatasetInfo

__all__ = ["require_images", "require_labels", "require_pair", "pixel_range"]


def pixel_range(images: np.ndarray, where: Where) -> None:
    """Refuse pixels that are not whole bytes (an int64 300 must not come back as 44)."""
    if images.dtype == np.uint8 or images.size == 0:
        return
    if images.dtype.kind not in "iub":
        raise FormatError("pixels are not whole numbers", path=where, expected="uint8 pixels 0..255",
                          found=f"{images.dtype.name} values")
    lo, hi = int(images.min()), int(images.max())
    if lo < 0 or hi > 255:
        raise FormatError("pixel values out of range", path=where, expected="0..255",
                          found=f"{images.dtype.name} [{lo}, {hi}]",
                          hint="the images are not bytes: another format or damaged data")


def require_images(images: np.ndarray, info: DatasetInfo, where: Where, *, exact_type: bool = True) -> None:
    """Images ``N x H x W`` of the registry's size, ``uint8`` (``exact_type=False``: any bytes)."""
    if images.ndim != 3 or (exact_type and images.dtype != np.uint8):
        raise IntegrityError(f"{info.name}: images have the wrong shape or type", path=where,
                             expected="uint8 N x H x W", found=f"{images.dtype} {images.shape}")
    pixel_range(images, where)
    h, w = info.image_shape
    if images.shape[1:] != (h, w):
        raise IntegrityError(f"{info.name}: images are not {h} x {w}", path=where, expected=f"N x {h} x {w} images",
                             found=f"N x {images.shape[1]} x {images.shape[2]}",
                             hint="the file belongs to another dataset (or a build with other sizes)")


def require_pair(images: np.ndarray, labels: np.ndarray, info: DatasetInfo, where: Where, *,
                 labels_where: Where | None = None) -> None:
    """Integer labels (read from ``labels_where``, default ``where``), one per image."""
    if not np.issubdtype(labels.dtype, np.integer):
        raise FormatError(f"{info.name}: the labels are not integers", path=labels_where or where,
                          expected="an integer idx file (ubyte or int)", found=f"{labels.dtype} values",
                          hint="labels are class numbers; this file holds something else")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise IntegrityError(f"{info.name}: labels do not match the images", path=where,
                             expected=f"{images.shape[0]} labels", found=str(labels.shape))


def require_labels(info: DatasetInfo, split: str, labels: np.ndarray, classes: Sequence[str], where: Where) -> None:
    """Every label inside the class range ``0..len(classes) - 1``."""
    if labels.size == 0:
        return
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= len(classes):
        bad = int(np.count_nonzero((labels < 0) | (labels >= len(classes))))
        raise IntegrityError(f"{info.name} {split}: labels outside the class range", path=where,
                             expected=f"labels 0..{len(classes) - 1} ({len(classes)} classes)",
                             found=f"{bad:,} labels outside it (min {lo}, max {hi})",
                             hint="the file belongs to another dataset or is damaged; "
                                  "`mnistforge verify` tells which")
