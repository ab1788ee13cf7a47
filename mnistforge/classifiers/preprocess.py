"""Preprocessing the literature uses: pixel scaling and moment-based deskewing.

Deskewing (LeCun's "deslanted" results) removes the slant of each digit: from the
image moments, the shear ``alpha = cov(row, col) / var(row)`` is undone and the centre
of mass moved to the image centre, with bilinear interpolation.  All images of a
batch are resampled in one vectorised :func:`scipy.ndimage.map_coordinates` call.
"""
from __future__ import annotations

import logging

import numpy as np
from scipy import ndimage

from ..errors import ConfigError

logger = logging.getLogger(__name__)

__all__ = ["scale_pixels", "deskew", "image_moments"]


def scale_pixels(images, mode: str = "unit", mean=None, std=None) -> np.ndarray:
    """Scale pixels to float32: ``unit`` (/255, to [0, 1]) or ``standard`` (zero mean, unit std).

    For ``standard`` pass the training ``mean``/``std`` when scaling test data
    (both default to the statistics of ``images``).

    Examples
    --------
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


def image_moments(images) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


def deskew(images, batch: int = 4096) -> np.ndarray:
    """Deskew images by their second moments.

    uint8 input gives uint8 output (rounded), so the result feeds every classifier and
    file writer like the original images; any other input gives float32.

    Output pixel ``(r, c)`` samples the input at row ``r - r0 + mr`` and column
    ``alpha * (r - r0) + (c - c0) + mc``, where ``(r0, c0)`` is the image centre,
    ``(mr, mc)`` the centre of mass and ``alpha = cov / var_r``.

    Examples
    --------
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
    rr, cc = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64),
                         indexing="ij")
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
