"""Batched warps of one image by many transformations, with their exact Jacobians.

The image is its interpolating cubic B-spline (``order=3``; coefficients of the zero-padded
image) or bilinear (``order=1``), evaluated by one vectorised gather for every node of a batch
(values equal :func:`scipy.ndimage.map_coordinates`, tested).  ``J`` is the exact derivative of
the warp as computed; :func:`jacobian_fd` gives central finite differences, the checked
fallback; the metric is ``G(t) = J(t)^T J(t)``.  The formulas: ``docs/manitest.md`` (warps, metric).

>>> from .groups import get_group
>>> img = np.zeros((28, 28)); img[10:18, 12:16] = 1.0
>>> spl = spline_image(img)
>>> out, J = warp_nodes(spl, get_group("rotation"), np.array([[0.0], [0.3]]))
>>> out.shape, J.shape, bool(np.allclose(out[0], img, atol=1e-6))
((2, 28, 28), (2, 784, 1), True)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal, overload

import numpy as np
import numpy.typing as npt
from scipy import ndimage

from ...errors import ConfigError
from .groups import TransformGroup, get_group

#: zeros added around the image before cubic prefiltering: the spline coefficients of the
#: zero-extended image decay by 0.268 per pixel, so 12 pixels leave < 2e-7 of boundary effect.
PREFILTER_PAD = 12
#: zero ring around the coefficients, so clamped far-away points read only zeros.
RING = 4


@dataclass
class SplineImage:
    """Interpolation coefficients of one image (or a batch), ready for :func:`interpolate`."""

    coeffs: np.ndarray      # (Hc, Wc) or (B, Hc, Wc), float64
    offset: int             # coefficient index of pixel (0, 0)
    shape: tuple[int, ...]  # (H, W) of the image
    order: int


def as_float_images(images: npt.ArrayLike) -> np.ndarray:
    """Images as float64; uint8 pixels scaled to [0, 1] (what the classifiers see).

    >>> as_float_images(np.full((1, 2, 2), 255, np.uint8)).max()
    np.float64(1.0)
    """
    a = np.asarray(images)
    return a.astype(np.float64) / 255.0 if a.dtype == np.uint8 else a.astype(np.float64, copy=False)


def spline_image(image: npt.ArrayLike, order: int = 3) -> SplineImage:
    """Coefficients of ``image`` (``H x W``, or a batch ``B x H x W``) for order 1 or 3.

    >>> spline_image(np.ones((4, 4)), order=1).coeffs.shape
    (12, 12)
    """
    img = as_float_images(image)
    if img.ndim not in (2, 3):
        raise ConfigError("image has the wrong shape", expected="H x W or B x H x W", found=f"shape {img.shape}")
    lead = ((0, 0),) if img.ndim == 3 else ()
    if order == 3:
        padded = np.pad(img, lead + ((PREFILTER_PAD, PREFILTER_PAD),) * 2)
        axes = (1, 2) if img.ndim == 3 else (0, 1)
        c = padded
        for ax in axes:
            c = ndimage.spline_filter1d(c, order=3, axis=ax, mode="mirror", output=np.float64)
        offset = PREFILTER_PAD + RING
    elif order == 1:
        c, offset = img, RING
    else:
        raise ConfigError("unsupported interpolation order", expected="1 (bilinear) or 3 (cubic "
                          "B-spline)", found=order)
    c = np.pad(c, lead + ((RING, RING),) * 2)
    return SplineImage(np.ascontiguousarray(c), offset, tuple(img.shape[-2:]), order)


def _weights(c: np.ndarray, order: int, n: int) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Base index, kernel weights and derivative weights (lists of arrays) along one axis."""
    if order == 3:
        c = np.clip(c, 1.0, n - 3.0)
        fl = np.floor(c)
        f = c - fl
        base = fl.astype(np.intp) - 1
        f2 = f * f
        f3 = f2 * f
        g = 1.0 - f
        g2 = g * g
        w = [g2 * g / 6.0, 0.5 * f3 - f2 + 2.0 / 3.0, -0.5 * f3 + 0.5 * (f2 + f) + 1.0 / 6.0, f3 / 6.0]
        dw = [-0.5 * g2, 1.5 * f2 - 2.0 * f, -1.5 * f2 + f + 0.5, 0.5 * f2]
        return base, w, dw
    c = np.clip(c, 0.0, n - 2.0)
    fl = np.floor(c)
    f = c - fl
    one = np.ones_like(f)
    return fl.astype(np.intp), [1.0 - f, f], [-one, one]


@overload
def interpolate(spl: SplineImage, qx: npt.ArrayLike, qy: npt.ArrayLike,
                derivatives: Literal[False] = False) -> np.ndarray: ...
@overload
def interpolate(spl: SplineImage, qx: npt.ArrayLike, qy: npt.ArrayLike,
                derivatives: Literal[True]) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


def interpolate(spl: SplineImage, qx: npt.ArrayLike, qy: npt.ArrayLike,
                derivatives: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interpolated values (and x/y derivatives) at image coordinates ``(qx, qy)``.

    ``qx``/``qy`` are columns/rows in pixels of the original image, any shape (leading axis
    = batch when ``spl`` holds a batch).  Outside the frame the image is zero.

    >>> spl = spline_image(np.eye(5), order=1)
    >>> interpolate(spl, np.array([1.5]), np.array([1.0])).tolist()
    [0.5]
    """
    qx = np.asarray(qx, np.float64)
    qy = np.asarray(qy, np.float64)
    shape = np.broadcast_shapes(qx.shape, qy.shape)
    coeffs = spl.coeffs
    hc, wc = coeffs.shape[-2:]
    k = spl.order + 1
    bx, wx, dwx = _weights(np.broadcast_to(qx, shape).ravel() + spl.offset, spl.order, wc)
    by, wy, dwy = _weights(np.broadcast_to(qy, shape).ravel() + spl.offset, spl.order, hc)
    base = by * wc + bx
    if coeffs.ndim == 3:
        nb = coeffs.shape[0]
        base = (base.reshape(nb, -1) + (np.arange(nb) * (hc * wc))[:, None]).ravel()
    flat = coeffs.ravel()
    val = np.zeros(base.shape)
    gx = np.zeros(base.shape) if derivatives else None
    gy = np.zeros(base.shape) if derivatives else None
    # separable kernel: combine each coefficient row along x, then the rows along y
    for a in range(k):
        row = flat[base + a * wc]
        rx = row * wx[0]
        rdx = row * dwx[0] if derivatives else None
        for b in range(1, k):
            row = flat[base + (a * wc + b)]
            rx += row * wx[b]
            if derivatives:
                rdx += row * dwx[b]
        val += rx * wy[a]
        if derivatives:
            gy += rx * dwy[a]
            gx += rdx * wy[a]
    if not derivatives:
        return val.reshape(shape)
    assert gx is not None and gy is not None  # made when derivatives
    return val.reshape(shape), gx.reshape(shape), gy.reshape(shape)


@functools.lru_cache(maxsize=8)
def _pixel_grid(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    return np.stack([xx.ravel(), yy.ravel()], axis=-1), np.array([(w - 1) / 2.0, (h - 1) / 2.0])


def source_points(group: TransformGroup, T: npt.ArrayLike, shape: tuple[int, ...],
                  L: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``q = T_t^{-1}(p)`` for every pixel ``p`` and node ``t``: ``(M, P, 2)``, plus L^-1, c."""
    T = np.atleast_2d(np.asarray(T, np.float64))
    p, c = _pixel_grid(shape)
    L = group.linear(T) if L is None else L
    Linv = np.linalg.inv(L)
    b = group.shift(T)
    r = (p - c)[None] - b[:, None, :]                                # (M, P, 2)
    q = np.empty_like(r)
    for a in range(2):
        q[..., a] = c[a] + Linv[:, a, 0, None] * r[..., 0] + Linv[:, a, 1, None] * r[..., 1]
    return q, Linv, c


@overload
def warp_nodes(spl: SplineImage, group: TransformGroup, T: npt.ArrayLike,
               jacobian: Literal[True] = True) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def warp_nodes(spl: SplineImage, group: TransformGroup, T: npt.ArrayLike, jacobian: Literal[False]) -> np.ndarray: ...


def warp_nodes(spl: SplineImage, group: TransformGroup, T: npt.ArrayLike,
               jacobian: bool = True) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Transformed images ``I_t`` (``M x H x W``) and, optionally, Jacobians ``M x P x dim``.

    ``T`` holds ``M`` parameter vectors of ``group``; ``spl`` is one image's coefficients.
    """
    T = np.atleast_2d(np.asarray(T, np.float64))
    h, w = spl.shape
    if not jacobian:
        q, Linv, c = source_points(group, T, spl.shape)
        return interpolate(spl, q[..., 0], q[..., 1]).reshape(len(T), h, w)
    L, dL, db = group.linear_and_derivatives(T)                     # (M,d,2,2), (M,d,2)
    q, Linv, c = source_points(group, T, spl.shape, L)
    val, gx, gy = interpolate(spl, q[..., 0], q[..., 1], derivatives=True)
    # grad I(q) . dq/dt_i = -(L^-T grad I(q)) . (dL_i (q - c) + db_i)
    ux = -(Linv[:, 0, 0, None] * gx + Linv[:, 1, 0, None] * gy)     # (M, P)
    uy = -(Linv[:, 0, 1, None] * gx + Linv[:, 1, 1, None] * gy)
    rx, ry = q[..., 0] - c[0], q[..., 1] - c[1]
    m, d = T.shape
    J = np.empty((m, rx.shape[1], d))
    for i in range(d):
        fx = dL[:, i, 0, 0, None] * rx + dL[:, i, 0, 1, None] * ry + db[:, i, 0, None]
        fy = dL[:, i, 1, 0, None] * rx + dL[:, i, 1, 1, None] * ry + db[:, i, 1, None]
        J[:, :, i] = ux * fx + uy * fy
    return val.reshape(m, h, w), J


def jacobian_fd(spl: SplineImage, group: TransformGroup, T: npt.ArrayLike, h: float = 1e-4) -> np.ndarray:
    """Central finite differences of ``t -> I_t``: ``M x P x dim`` (the checked fallback)."""
    T = np.atleast_2d(np.asarray(T, np.float64))
    m, d = T.shape
    E = np.eye(d) * h
    Tp = (T[:, None, :] + E[None]).reshape(-1, d)
    Tm = (T[:, None, :] - E[None]).reshape(-1, d)
    Ip = warp_nodes(spl, group, Tp, jacobian=False).reshape(m, d, -1)
    Im = warp_nodes(spl, group, Tm, jacobian=False).reshape(m, d, -1)
    J: np.ndarray = ((Ip - Im) / (2 * h)).transpose(0, 2, 1)
    return J


def metric_tensors(J: np.ndarray) -> np.ndarray:
    """``G = J^T J`` per node: ``M x dim x dim``."""
    G: np.ndarray = np.matmul(J.transpose(0, 2, 1), J)
    return G


def metric(image: npt.ArrayLike | SplineImage, group: TransformGroup | str, T: npt.ArrayLike, order: int = 3,
           method: str = "analytic") -> np.ndarray:
    """Metric tensors ``G(t)`` of ``image`` at the nodes ``T`` (``M x dim x dim``).

    ``method`` is ``"analytic"`` (spline derivatives times generator fields) or ``"fd"``
    (finite differences of the warp).

    >>> from .groups import get_group
    >>> yy, xx = np.mgrid[0:28, 0:28]
    >>> blob = np.exp(-((xx - 13.5) ** 2 + (yy - 13.5) ** 2) / 8.0)
    >>> G = metric(blob, get_group("translation"), [[0.0, 0.0]])[0]
    >>> bool(abs(G[0, 0] - G[1, 1]) < 1e-6 * G[0, 0]), bool(abs(G[0, 1]) < 1e-6 * G[0, 0])
    (True, True)
    """
    group = get_group(group)
    spl = image if isinstance(image, SplineImage) else spline_image(image, order)
    if method == "analytic":
        return metric_tensors(warp_nodes(spl, group, T)[1])
    if method == "fd":
        return metric_tensors(jacobian_fd(spl, group, T))
    raise ConfigError("unknown metric method", expected="analytic or fd", found=method)


def transform_images(images: npt.ArrayLike, group: TransformGroup | str, T: npt.ArrayLike,
                     order: int = 3) -> np.ndarray:
    """Apply one parameter vector per image: ``images`` ``N x H x W``, ``T`` ``N x dim``.

    >>> from .groups import get_group
    >>> img = np.zeros((1, 9, 9)); img[0, 4, 2] = 1.0
    >>> out = transform_images(img, get_group("translation"), [[2.0, 0.0]], order=1)
    >>> int(out[0].argmax() % 9)  # moved right by 2 pixels
    4
    """
    group = get_group(group)
    imgs = as_float_images(images)
    T = np.atleast_2d(np.asarray(T, np.float64))
    if imgs.ndim == 2:
        imgs = imgs[None]
    if len(T) != len(imgs):
        raise ConfigError("one parameter vector per image is needed", expected=f"{len(imgs)} rows", found=f"{len(T)}")
    spl = spline_image(imgs, order)
    q, _, _ = source_points(group, T, imgs.shape[1:])
    return interpolate(spl, q[..., 0], q[..., 1]).reshape(imgs.shape)
