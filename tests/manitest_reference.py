"""An independent reference geodesic for Manitest's 2-D groups (tests and benchmarks).

Nothing from ``mnistforge.evaluators.manitest`` is used: warps are SciPy's cubic spline
(``map_coordinates`` on the zero-padded, prefiltered image), the transformations are written
out here for translation and dilation+rotation, and a path's length is the inscribed polyline
through densely sampled transformed images, Richardson-extrapolated from two sample
densities.  The reference distance to ``t`` is the shorter of the straight path and the best
two-segment path ``0 -> m -> t``, the corner ``m`` found by Nelder-Mead.
:func:`dijkstra_geodesic` bends freely: a dense-grid Dijkstra path under a finite-difference
metric, shortened by L-BFGS-B.
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


# ----------------------------------------------------------------- dense-grid Dijkstra geodesic
#: package grid steps of the two groups (the reference grid is finer by GRID_REFINE)
STEPS = {"translation": np.array([0.5, 0.5]), "dilation-rotation": np.array([0.1, np.pi / 20])}
GRID_REFINE = 4
#: stencil: every offset (a, b) with max(|a|, |b|) <= 3 and gcd 1 (32 directions)
STENCIL = [(a, b) for a in range(-3, 4) for b in range(-3, 4)
           if (a, b) != (0, 0) and np.gcd(a, b) == 1]


def _fd_metric(warp: Warper, T, h: float = 1e-3) -> np.ndarray:
    """``G = J^T J`` at the nodes ``T`` from central differences of SciPy warps."""
    d = T.shape[1]
    J = np.stack([(warp(T + h * e) - warp(T - h * e)) / (2 * h) for e in np.eye(d)], axis=2)
    return np.einsum("npi,npj->nij", J, J)


def dijkstra_path(warp: Warper, t) -> tuple[float, np.ndarray]:
    """Shortest path from 0 to ``t`` on a grid ``GRID_REFINE`` times finer than the
    package's, with 32 stencil directions and edge lengths from the finite-difference metric
    at both ends (trapezoid): ``(length, vertices)``.  The box spans 0 and ``t`` plus a margin
    of 30 % of the larger extent (at least two package steps) on every side."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    step = STEPS[warp.group]
    h = step / GRID_REFINE
    k = np.rint(np.asarray(t) / h).astype(int)
    margin = max(2 * GRID_REFINE, int(np.ceil(0.3 * np.abs(k).max())))
    lo, hi = np.minimum(k, 0) - margin, np.maximum(k, 0) + margin
    shape = hi - lo + 1
    ii, jj = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    nodes = np.stack([ii.ravel(), jj.ravel()], axis=1)
    T = (nodes + lo) * h
    G = np.concatenate([_fd_metric(warp, T[s:s + 512]) for s in range(0, len(T), 512)])
    rows, cols, costs = [], [], []
    for a, b in STENCIL:
        src = nodes[(nodes[:, 0] + a >= 0) & (nodes[:, 0] + a < shape[0])
                    & (nodes[:, 1] + b >= 0) & (nodes[:, 1] + b < shape[1])]
        i = src[:, 0] * shape[1] + src[:, 1]
        j = (src[:, 0] + a) * shape[1] + src[:, 1] + b
        dt = np.array([a, b]) * h
        ca = np.sqrt(np.einsum("i,nij,j->n", dt, G[i], dt))
        cb = np.sqrt(np.einsum("i,nij,j->n", dt, G[j], dt))
        rows.append(i)
        cols.append(j)
        costs.append((ca + cb) / 2)
    graph = coo_matrix((np.concatenate(costs), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(len(T), len(T))).tocsr()
    start = (-lo[0]) * shape[1] + (-lo[1])
    end = (k[0] - lo[0]) * shape[1] + (k[1] - lo[1])
    dist, pred = dijkstra(graph, indices=start, return_predecessors=True)
    seq = [end]
    while seq[-1] != start:
        seq.append(pred[seq[-1]])
    return float(dist[end]), T[seq[::-1]]


def _fixed_polyline(warp: Warper, vertices, counts) -> float:
    """Inscribed polyline with fixed sample counts per segment (smooth in the vertices)."""
    pts = [vertices[:1]]
    for a, b, n in zip(vertices[:-1], vertices[1:], counts):
        pts.append(a + (np.arange(1, n + 1)[:, None] / n) * (b - a))
    T = np.concatenate(pts)
    ims = warp(T)
    ims[0] = warp.image.ravel()
    return float(np.linalg.norm(np.diff(ims, axis=0), axis=1).sum())


def dijkstra_geodesic(image, group: str, t, corners: int = 4) -> dict:
    """An independent geodesic distance from the identity to ``t``: the dense-grid Dijkstra
    path (:func:`dijkstra_path`), cut to a polyline with ``corners`` interior vertices evenly
    spaced along it, whose vertices L-BFGS-B then moves to shorten the path (lengths:
    inscribed polylines at two fixed densities, Richardson-extrapolated).  Returns the
    ``length`` (the shorter of that and the straight path: a real path, so an upper bound of
    the geodesic), the Dijkstra ``grid`` length, the ``straight`` length and the ``chord``."""
    warp = Warper(image, group)
    t = np.asarray(t, np.float64)
    z = np.zeros(2)
    dens = per_unit(group)
    straight = path_length(warp, [z, t], dens)
    chord = float(np.linalg.norm(warp(t[None])[0] - warp.image.ravel()))
    grid, path = dijkstra_path(warp, t)
    cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0) / STEPS[group],
                                                        axis=1))])
    picks = np.interp(np.linspace(0, cum[-1], corners + 2), cum, np.arange(len(path)))
    verts = np.stack([np.interp(picks, np.arange(len(path)), path[:, i]) for i in range(2)], 1)
    verts[0], verts[-1] = z, t
    counts = [max(4, int(np.ceil(np.abs((b - a) * dens).max())) + 4)
              for a, b in zip(verts[:-1], verts[1:])]
    scale = STEPS[group]

    def length(x):
        v = np.concatenate([z[None], z + x.reshape(-1, 2) * scale, t[None]])
        a = _fixed_polyline(warp, v, counts)
        b = _fixed_polyline(warp, v, [2 * n for n in counts])
        return b + (b - a) / 3.0

    x0 = (verts[1:-1] / scale).ravel()
    res = optimize.minimize(length, x0, method="L-BFGS-B",
                            options={"maxiter": 40, "ftol": 1e-9, "eps": 1e-4})
    return {"length": min(straight, float(res.fun)), "grid": grid, "straight": straight,
            "chord": chord, "vertices": np.concatenate([z[None], res.x.reshape(-1, 2) * scale,
                                                        t[None]])}
