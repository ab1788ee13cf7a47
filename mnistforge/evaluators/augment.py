"""Data augmentation by random similarity transformations (Manitest's training recipe).

Fawzi & Frossard train with random translations of at most 3 pixels, scalings between 0.7 and 1.3 and rotations of at
most 0.2 radians; training a classifier on such copies raises its invariance score.  :func:`augment_similarity` draws
those transformations (seeded, uniform in each range) and applies them about the image centre with zero padding, in
batches, with the same warp as Manitest (:mod:`.manitest.warp`).

>>> imgs = np.zeros((4, 28, 28), np.uint8); imgs[:, 10:18, 12:16] = 255
>>> out, params = augment_similarity(imgs, seed=0, return_params=True)
>>> out.shape, out.dtype, params.shape
((4, 28, 28), dtype('uint8'), (4, 4))
>>> bool(np.all(np.abs(params[:, :2]) <= 3)), bool(np.all(np.abs(params[:, 3] - 1) <= 0.3))
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from .manitest.groups import get_group
from .manitest.warp import transform_images


@dataclass
class AugmentConfig:
    """Bounds of the random similarity transformations (the paper's defaults)."""

    max_shift: float = 3.0          # pixels, each axis, uniform in [-max, max]
    scale: tuple[float, float] = (0.7, 1.3)       # uniform scale factor
    max_rotation: float = 0.2       # radians, uniform in [-max, max]
    order: int = 1                  # interpolation: 1 bilinear, 3 cubic B-spline
    batch: int = 4096

    def __post_init__(self) -> None:
        lo, hi = self.scale
        if not (0 < lo <= hi) or self.max_shift < 0 or self.max_rotation < 0:
            raise ConfigError("invalid augmentation bounds", expected="max_shift >= 0, "
                              "0 < scale low <= high, max_rotation >= 0",
                              found=f"{self.max_shift}, {self.scale}, {self.max_rotation}")


def random_similarity_params(n: int, rng: np.random.Generator, config: AugmentConfig | None = None) -> np.ndarray:
    """``n x 4`` rows ``(tx, ty, rotation, scale)`` drawn uniformly within the bounds."""
    c = config or AugmentConfig()
    tx = rng.uniform(-c.max_shift, c.max_shift, n)
    ty = rng.uniform(-c.max_shift, c.max_shift, n)
    rot = rng.uniform(-c.max_rotation, c.max_rotation, n)
    sc = rng.uniform(c.scale[0], c.scale[1], n)
    return np.stack([tx, ty, rot, sc], axis=1)


def apply_similarity(images: npt.ArrayLike, params: npt.ArrayLike, order: int = 1, batch: int = 4096) -> np.ndarray:
    """Transform each image by its row ``(tx, ty, rotation, scale)``; same dtype out.

    uint8 images are rounded back to uint8; float images stay float.

    >>> img = np.zeros((1, 9, 9)); img[0, 4, 4] = 1.0
    >>> apply_similarity(img, [[1.0, -2.0, 0.0, 1.0]])[0].argmax() == 2 * 9 + 5
    np.True_
    """
    images = np.asarray(images)
    params = np.atleast_2d(np.asarray(params, np.float64))
    if images.ndim != 3 or params.shape != (len(images), 4):
        raise ConfigError("images and parameters do not match", expected="N x H x W images "
                          "and N x 4 parameters (tx, ty, rotation, scale)", found=f"{images.shape} and {params.shape}")
    if np.any(params[:, 3] <= 0):
        raise ConfigError("scale factors must be positive", found=float(params[:, 3].min()))
    group = get_group("similarity")        # parameters (tx, ty, rotation, log-scale)
    t = params.copy()
    t[:, 3] = np.log(params[:, 3])
    out = np.empty(images.shape, np.uint8 if images.dtype == np.uint8 else np.float64)
    for s in range(0, len(images), batch):
        warped = transform_images(images[s:s + batch], group, t[s:s + batch], order=order)
        if images.dtype == np.uint8:
            out[s:s + batch] = np.clip(np.rint(warped * 255.0), 0, 255).astype(np.uint8)
        else:
            out[s:s + batch] = warped
    return out


def augment_similarity(images: npt.ArrayLike, labels: npt.ArrayLike | None = None, *, copies: int = 1,
                       seed: int = 0, config: AugmentConfig | None = None, include_original: bool = False,
                       return_params: bool = False) -> np.ndarray | tuple[np.ndarray, ...]:
    """Random similarity-transformed copies of ``images`` (``N x H x W``, uint8 or float), and of
    ``labels`` (repeated to match) when given.

    ``copies`` transformed copies per image (copy ``j`` of every image in block ``j``), drawn from
    ``numpy.random.default_rng(seed)`` (same seed, same output) within the bounds of ``config``
    (default: translation <= 3 px, scale 0.7-1.3, rotation <= 0.2 rad); ``include_original`` puts
    the untouched images first; ``return_params`` also returns the ``(tx, ty, rotation, scale)``
    rows used.  Returns the images, or (images, labels), plus the params when asked.
    """
    c = config or AugmentConfig()
    images = np.asarray(images)
    if copies < 1:
        raise ConfigError("invalid number of copies", expected="copies >= 1", found=copies)
    rng = np.random.default_rng(seed)
    n = len(images)
    params = random_similarity_params(n * copies, rng, c)
    src = np.concatenate([images] * copies) if copies > 1 else images
    out = apply_similarity(src, params, order=c.order, batch=c.batch)
    if include_original:
        out = np.concatenate([images.astype(out.dtype, copy=False), out])
    res = [out]
    if labels is not None:
        lab = np.asarray(labels)
        res.append(np.concatenate([lab] * (copies + int(include_original))))
    if return_params:
        res.append(params)
    return res[0] if len(res) == 1 else tuple(res)
