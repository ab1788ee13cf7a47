"""Lengths of actual paths in image space: the distance Manitest reports.

Fast marching (:mod:`.marching`) orders the grid nodes by an approximate geodesic distance
and so finds ``t*``, but its values are a first-order PDE solution: near the origin and
where the metric is far from diagonal they miss the geodesic by several per cent either way
(and can even fall below the chord ``||I_t* - I||``, which no path is shorter than).  So the
distance reported for ``t*`` is the length of an actual path ``s -> I_{t(s)}``, the shortest
of a few candidates in parameter space:

* the straight segment ``0 -> t*``;
* the march's grid path (parents backtracked from ``t*``);
* two-segment paths ``0 -> m -> t*`` with the corner ``m`` refined by a few rounds of a
  pattern search started from the middle of the straight segment.

Each candidate's length is computed twice from the same samples (:data:`PER_UNIT`):
Simpson's rule on the speed ``||J(t(s)) t'(s)||`` with the exact warp Jacobian, and the
inscribed polyline ``sum ||I_{t_{j+1}} - I_{t_j}||`` starting at the image itself.  The
polyline never exceeds the true length and, by the triangle inequality, is never below the
chord; the larger of the two is kept, so a reported distance is always at least the chord
and (to the quadrature accuracy) the length of a real path: an upper bound of the geodesic
distance ``d(e, t*)``.
"""
from __future__ import annotations

import math

import numpy as np

from .warp import warp_nodes

#: samples per parameter unit, per kind: about 1/8 px of motion per sample for ink within
#: 10 px of the centre (Simpson's relative error then stays below 1e-3 on MNIST digits)
PER_UNIT = {"tx": 8.0, "ty": 8.0, "rotation": 50.0, "dilation": 80.0, "aspect": 80.0,
            "shear": 80.0}
#: pattern-search rounds for the corner of the two-segment path
CORNER_ROUNDS = 2


def _samples(vertices, density):
    """Sample points of the polyline through ``vertices`` and each segment's slice."""
    pts, slices = [vertices[0][None]], []
    start = 1
    for a, b in zip(vertices[:-1], vertices[1:]):
        n = max(2, int(math.ceil(float(np.abs((b - a) * density).max()))))
        n += n % 2                                       # Simpson needs an even count
        s = np.arange(1, n + 1)[:, None] / n
        pts.append(a + s * (b - a))
        slices.append((start - 1, start + n))             # includes the segment's start point
        start += n
    return np.concatenate(pts), slices


def path_lengths(image, spl, group, paths, resolution: float = 1.0) -> np.ndarray:
    """Image-space lengths of parameter-space polylines (each a ``k x dim`` array from 0).

    All sample points of all paths are warped in one batch; ``resolution`` scales the
    sampling density :data:`PER_UNIT`.  See the module docstring for why each length is
    ``max(Simpson, inscribed polyline)``.
    """
    density = resolution * np.array([PER_UNIT[p] for p in group.params])
    flat = np.asarray(image, np.float64).ravel()
    allpts: list[np.ndarray] = []
    per: list[tuple] = []
    for path in paths:
        pts, slices = _samples(np.asarray(path, np.float64), density)
        per.append((int(sum(len(p) for p in allpts)), len(pts), slices,
                    np.asarray(path, np.float64)))
        allpts.append(pts)
    T = np.concatenate(allpts)
    imgs, J = warp_nodes(spl, group, T)
    imgs = imgs.reshape(len(T), -1)
    out = np.empty(len(paths))
    for p, (off, n, slices, verts) in enumerate(per):
        im = imgs[off:off + n].copy()
        if not verts[0].any():
            im[0] = flat                                 # start exactly at I: chord bound holds
        total = 0.0
        for j, (a, b) in enumerate(slices):
            seg = verts[j + 1] - verts[j]
            speed = np.linalg.norm(J[off + a:off + b] @ seg, axis=1)
            m = b - a - 1
            simpson = (speed[0] + speed[-1] + 4 * speed[1:-1:2].sum()
                       + 2 * speed[2:-1:2].sum()) / (3 * m)
            chords = float(np.linalg.norm(np.diff(im[a:b], axis=0), axis=1).sum())
            total += max(simpson, chords)
        out[p] = total
    return out


def shortest_path(image, spl, group, target, grid_path=None, *, resolution: float = 1.0,
                  rounds: int = CORNER_ROUNDS):
    """Length and vertices of the shortest candidate path from the identity to ``target``.

    Returns ``(length, vertices, kind)`` with ``kind`` one of ``"straight"``, ``"grid"``,
    ``"two-segment"``.
    """
    t = np.asarray(target, np.float64)
    z = np.zeros_like(t)
    cands = [(np.stack([z, t]), "straight")]
    if grid_path is not None and len(grid_path) > 2:
        cands.append((np.asarray(grid_path, np.float64), "grid"))
    lens = path_lengths(image, spl, group, [c[0] for c in cands], resolution)
    best = int(np.argmin(lens))
    length, verts, kind = float(lens[best]), cands[best][0], cands[best][1]
    if rounds <= 0 or not t.any():
        return length, verts, kind
    # pattern search on the corner: each round tries +-delta on every axis around the
    # best corner so far (one batch), halving delta when nothing improves
    steps = np.asarray(group.steps, np.float64)
    corner = t / 2
    delta = np.maximum(np.abs(t) / 4, steps / 2)
    dim = len(t)
    for _ in range(rounds):
        trial = []
        for i in range(dim):
            for s in (-1.0, 1.0):
                m = corner.copy()
                m[i] += s * delta[i]
                trial.append(np.stack([z, m, t]))
        tl = path_lengths(image, spl, group, trial, resolution)
        k = int(np.argmin(tl))
        if tl[k] < length * (1 - 1e-5):          # not quadrature noise
            length, verts, kind = float(tl[k]), trial[k], "two-segment"
            corner = trial[k][1]
        else:
            delta = delta / 2
    return length, verts, kind


def first_change(image, spl, group, vertices, predict, label, *, resolution: float = 1.0,
                 subdivisions: int = 32):
    """The first point of the polyline ``vertices`` whose image the classifier labels
    differently from ``label``: ``(t, vertices up to t, new label)``, or ``None``.

    The path's samples (:data:`PER_UNIT`) are classified in one batch; between the last
    unchanged sample and the first changed one, ``subdivisions`` more points are (one more
    batch), so ``t`` is within ``1 / subdivisions`` of a sample spacing of the crossing.
    """
    verts = np.asarray(vertices, np.float64)
    density = resolution * np.array([PER_UNIT[p] for p in group.params])
    pts, slices = _samples(verts, density)
    labels = np.asarray(predict(warp_nodes(spl, group, pts, jacobian=False)))
    changed = np.flatnonzero(labels != label)
    if changed.size == 0:
        return None
    j = int(changed[0])
    if j == 0:                                   # the start itself: nothing to refine
        return pts[0], verts[:1], labels[0]
    a, b = pts[j - 1], pts[j]
    fine = a + (np.arange(1, subdivisions + 1)[:, None] / subdivisions) * (b - a)
    fl = np.asarray(predict(warp_nodes(spl, group, fine, jacobian=False)))
    i = int(np.flatnonzero(fl != label)[0])      # the last one, b, is known to differ
    t = fine[i]
    seg = next(s for s, (lo, hi) in enumerate(slices) if lo < j < hi)
    return t, np.concatenate([verts[:seg + 1], t[None]]), fl[i]
