"""An independent reference geodesic for Manitest's 2-D groups (tests and benchmarks).

Nothing from ``mnistforge.evaluators.manitest`` is used: warps are SciPy's cubic spline
(``map_coordinates`` on the zero-padded, prefiltered image), the transformations are written
out here for translation and dilation+rotation, and a path's length is the inscribed polyline
through densely sampled transformed images, Richardson-extrapolated from two sample
densities.  The reference distance to ``t`` is the shorter of the straight path and the best
two-segment path ``0 -> m -> t``, the corner ``m`` found by Nelder-Mead.
"""
from __future__ import annotations

import numpy as np
from scipy import ndimage, optimize

PAD = 12


class Warper:
    """``I_t`` for a batch of ``t`` of one image, by SciPy, for two 2-D groups."""

    def __init__(self, image, group: str):
        img = np.asarray(image, np.float64)
        if img.dtype == np.uint8 or img.max() > 1.5:
            img = img / 255.0
        self.image = img
        self.group = group
        self.coef = ndimage.spline_filter(np.pad(img, PAD), order=3, mode="grid-constant")
        h, w = img.shape
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
        self.cx, self.cy = (w - 1) / 2.0, (h - 1) / 2.0
        self.px, self.py = xx.ravel() - self.cx, yy.ravel() - self.cy

    def source(self, T):
        """Source points ``q = T_t^-1(p)`` (columns ``x``, rows ``y``): two ``M x P`` arrays."""
        T = np.atleast_2d(T)
        if self.group == "translation":
            return (self.cx + self.px[None] - T[:, :1]), (self.cy + self.py[None] - T[:, 1:])
        if self.group == "dilation-rotation":
            # T(x) = c + e^s R(th) (x - c), R = [[cos, -sin], [sin, cos]] on (x, y)
            s, th = T[:, :1], T[:, 1:]
            k = np.exp(-s)
            c, sn = np.cos(th), np.sin(th)
            qx = self.cx + k * (c * self.px[None] + sn * self.py[None])
            qy = self.cy + k * (-sn * self.px[None] + c * self.py[None])
            return qx, qy
        raise ValueError(self.group)

    def __call__(self, T):
        qx, qy = self.source(T)
        vals = ndimage.map_coordinates(self.coef, [qy.ravel() + PAD, qx.ravel() + PAD],
                                       order=3, mode="grid-constant", prefilter=False)
        return vals.reshape(qx.shape)


def polyline_length(warp: Warper, vertices, per_unit) -> float:
    """Inscribed polyline length through ``I_t`` sampled along the parameter polyline."""
    pts = [np.asarray(vertices[0], np.float64)[None]]
    for a, b in zip(vertices[:-1], vertices[1:]):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        n = max(2, int(np.ceil(np.abs((b - a) * per_unit).max())))
        pts.append(a + (np.arange(1, n + 1)[:, None] / n) * (b - a))
    T = np.concatenate(pts)
    ims = warp(T)
    if not T[0].any():
        ims[0] = warp.image.ravel()
    return float(np.linalg.norm(np.diff(ims, axis=0), axis=1).sum())


def path_length(warp: Warper, vertices, per_unit) -> float:
    """Polyline lengths at two densities, Richardson-extrapolated (error ~ 1/n^2)."""
    a = polyline_length(warp, vertices, per_unit)
    b = polyline_length(warp, vertices, 2 * per_unit)
    return b + (b - a) / 3.0


def per_unit(group: str) -> np.ndarray:
    """Samples per parameter unit: about 1/16 px of motion (finer than the package's)."""
    return np.array([16.0, 16.0]) if group == "translation" else np.array([160.0, 100.0])


def reference_geodesic(image, group: str, t, maxfev: int = 30) -> tuple[float, float, float]:
    """``(reference distance, straight-path length, chord)`` from the identity to ``t``."""
    warp = Warper(image, group)
    t = np.asarray(t, np.float64)
    z = np.zeros(2)
    dens = per_unit(group)
    straight = path_length(warp, [z, t], dens)
    chord = float(np.linalg.norm(warp(t[None])[0] - warp.image.ravel()))
    step = np.array([0.5, 0.5]) if group == "translation" else np.array([0.1, np.pi / 20])
    delta = np.maximum(np.abs(t), step) / 4
    simplex = np.stack([t / 2, t / 2 + [delta[0], 0], t / 2 + [0, delta[1]]])
    res = optimize.minimize(lambda m: path_length(warp, [z, m, t], dens), t / 2,
                            method="Nelder-Mead",
                            options={"maxfev": maxfev, "xatol": 1e-4, "fatol": 1e-6,
                                     "initial_simplex": simplex})
    return min(straight, float(res.fun)), straight, chord
