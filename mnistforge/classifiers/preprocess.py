"""Preprocessing the literature uses: pixel scaling, per-feature standardisation and moment-based deskewing."""
from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from scipy import ndimage

from ..errors import ConfigError
from .base import as_features

__all__ = ["scale_pixels", "Standardizer", "deskew", "image_moments"]


def scale_pixels(images: npt.ArrayLike, mode: str = "unit", mean: float | None = None,
                 std: float | None = None) -> np.ndarray:
    """Scale pixels to float32: ``unit`` (/255, to [0, 1]) or ``standard`` (zero mean, unit std).

    For ``standard`` pass the training ``mean``/``std`` when scaling test data (default: those of ``images``).

    >>> scale_pixels(np.array([[0, 255]], np.uint8)).tolist()
    [[0.0, 1.0]]
    """
    x = np.asarray(images, np.float32)
    if np.asarray(images).dtype == np.uint8:
        x = x / np.float32(255.0)
    if mode == "unit":
        return x
    if mode == "standard":
        mean = x.mean() if mean is None else mean
        std = x.std() if std is None else std
        return (x - np.float32(mean)) / np.float32(std if std > 0 else 1.0)
    raise ConfigError("unknown pixel scaling", expected="unit or standard", found=mode)


class Standardizer:
    """Per-feature standardisation fitted on training rows: ``(x - mean) / std``.

    What scikit-learn's ``StandardScaler`` does (population std; a constant feature keeps scale 1, so it becomes 0), the
    preprocessing of the Fashion-MNIST benchmark runner (Xiao, Rasul & Vollgraf 2017).  Statistics are accumulated in
    float64 over blocks of rows; the result is float32 (uint8 pixels are first scaled to [0, 1], which the standardised
    values do not depend on).

    >>> s = Standardizer().fit(np.array([[0., 5.], [2., 5.]]))
    >>> s.transform(np.array([[1., 5.], [3., 6.]])).tolist()
    [[0.0, 0.0], [2.0, 1.0]]
    """

    def __init__(self, block: int = 8192) -> None:
        self.block = block

    def fit(self, X: npt.ArrayLike) -> Standardizer:
        X = np.asarray(X)
        n = X.shape[0]
        if n == 0:
            raise ConfigError("nothing to standardise", expected="at least one row", found=0)
        blocks = range(0, n, self.block)
        mean = sum(as_features(X[s:s + self.block], np.float64).sum(axis=0) for s in blocks) / n
        # two passes: no cancellation in the variance
        deviations = (as_features(X[s:s + self.block], np.float64) - mean for s in blocks)
        std = np.sqrt(sum((d * d).sum(axis=0) for d in deviations) / n)
        # a constant feature's std is the rounding residue of its mean, not 0
        constant = std <= 10 * np.finfo(np.float64).eps * np.abs(mean)
        self.mean_, self.scale_ = mean, np.where(constant | (std == 0), 1.0, std)
        return self

    def transform(self, X: npt.ArrayLike) -> np.ndarray:
        if not hasattr(self, "mean_"):
            raise ConfigError("standardiser is not fitted", expected="fit(X) first", found="an unfitted Standardizer")
        X = np.asarray(X)
        dim = int(np.prod(X.shape[1:])) if X.ndim > 1 else 0
        if dim != self.mean_.size:
            raise ConfigError("inputs differ in size from the rows the standardiser was fitted on",
                              expected=f"{self.mean_.size} features", found=f"{dim}")
        out = np.empty((X.shape[0], dim), np.float32)
        for s in range(0, X.shape[0], self.block):
            Z = as_features(X[s:s + self.block], np.float64)
            out[s:s + len(Z)] = (Z - self.mean_) / self.scale_
        return out


_X = TypeVar("_X", bound=npt.ArrayLike)


def fit_standardizer(clf: Any, X: _X) -> _X | np.ndarray:  # clf: a classifier with a standardize flag
    """``X`` standardised by a :class:`Standardizer` fitted on it and kept as
    ``clf.scaler_`` when ``clf.standardize`` is set; else ``X`` unchanged (and no scaler)."""
    clf.scaler_ = Standardizer().fit(X) if clf.standardize else None
    return X if clf.scaler_ is None else clf.scaler_.transform(X)


def standardized(clf: object, X: _X) -> _X | np.ndarray:
    """``X`` through the classifier's fitted scaler, if it has one."""
    scaler = getattr(clf, "scaler_", None)
    return X if scaler is None else scaler.transform(X)


def image_moments(images: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Centre of mass (row, col), row variance and row-col covariance of each image.

    Blank images get the geometric centre and zero (co)variance.
    """
    x = np.asarray(images, np.float64)
    n, h, w = x.shape
    r = np.arange(h, dtype=np.float64)
    c = np.arange(w, dtype=np.float64)
    mass = x.sum(axis=(1, 2))
    blank = mass <= 0
    m = np.where(blank, 1.0, mass)
    pr = x.sum(axis=2)  # n x h
    pc = x.sum(axis=1)  # n x w
    mr = np.where(blank, (h - 1) / 2, pr @ r / m)
    mc = np.where(blank, (w - 1) / 2, pc @ c / m)
    var_r = np.where(blank, 0.0, pr @ (r ** 2) / m - mr ** 2)
    cov = np.einsum("nij,i,j->n", x, r, c) / m - mr * mc
    cov = np.where(blank, 0.0, cov)
    return mr, mc, var_r, cov


def deskew(images: npt.ArrayLike, batch: int = 4096) -> np.ndarray:
    """Deskew images by their second moments (LeCun's "deslanted" results).

    uint8 input gives uint8 output (rounded), so the result feeds every classifier and file writer like the original
    images; any other input gives float32.

    Output pixel ``(r, c)`` samples the input at row ``r - r0 + mr`` and column ``alpha * (r - r0) + (c - c0) + mc``,
    where ``(r0, c0)`` is the image centre, ``(mr, mc)`` the centre of mass and ``alpha = cov / var_r``.

    >>> img = np.zeros((1, 28, 28), np.uint8)
    >>> for r in range(6, 22): img[0, r, 8 + (22 - r) // 2] = 255   # a slanted stroke
    >>> out = deskew(img)
    >>> cols = [int(np.argmax(out[0, r])) for r in (8, 20)]
    >>> abs(cols[0] - cols[1]) <= 1                                # now vertical
    True
    """
    x = np.asarray(images)
    if x.ndim != 3:
        raise ConfigError("deskew needs images", expected="N x H x W", found=f"shape {x.shape}")
    n, h, w = x.shape
    out_dtype = np.uint8 if x.dtype == np.uint8 else np.float32
    out = np.empty((n, h, w), out_dtype)
    r0, c0 = h / 2.0, w / 2.0
    rr, cc = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64), indexing="ij")
    for s in range(0, n, batch):
        xb = np.asarray(x[s:s + batch], np.float32)
        mr, mc, var_r, cov = image_moments(xb)
        alpha = np.divide(cov, var_r, out=np.zeros_like(cov), where=var_r > 1e-12)
        b = xb.shape[0]
        src_r = (rr[None] - r0) + mr[:, None, None]
        src_c = alpha[:, None, None] * (rr[None] - r0) + (cc[None] - c0) + mc[:, None, None]
        src_n = np.broadcast_to(np.arange(b, dtype=np.float64)[:, None, None], (b, h, w))
        coords = np.stack([src_n, src_r, src_c])
        res = ndimage.map_coordinates(xb, coords, order=1, mode="constant", cval=0.0)
        if out_dtype == np.uint8:
            res = np.clip(np.rint(res), 0, 255)
        out[s:s + b] = res
    return out
