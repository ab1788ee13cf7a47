"""Lengths of actual paths in image space: the distance Manitest reports.

Fast marching (:mod:`.marching`) finds ``t*``, but its values are a first-order solution (off by several per cent either
way, even below the chord ``||I_t* - I||``), so the distance reported is the length of the shortest of a few candidate
paths ``s -> I_{t(s)}``: the straight segment, the march's grid path, and two- and four-segment paths whose corners a
compass search refines.  A length is ``max(Simpson's rule on the speed, inscribed polyline)`` over the same samples:
never below the chord, the length of a real path.  In full: ``docs/manitest.md`` (distance reported).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .groups import TransformGroup
from .warp import SplineImage, warp_nodes

#: samples per parameter unit, per kind: about 1/8 px of motion per sample for ink within
#: 10 px of the centre (Simpson's relative error then stays below 1e-3 on MNIST digits)
PER_UNIT = {"tx": 8.0, "ty": 8.0, "rotation": 50.0, "dilation": 80.0, "aspect": 80.0, "shear": 80.0}
#: compass-search rounds for the corner of the two-segment path, and again for the three
#: corners of the bent path seeded from it
CORNER_ROUNDS = 5
#: the search's trials are ranked at this fraction of the measuring resolution
SEARCH_RESOLUTION = 0.5
#: the three-corner stage runs only when one corner shortened the straight path by more than
#: this (relative): a geodesic bent enough for four segments to matter gives one corner a gain
BEND_MIN_GAIN = 1e-3


def _samples(vertices: np.ndarray, density: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Sample points of the polyline through ``vertices`` and each segment's slice."""
    pts: list[np.ndarray] = [vertices[0][None]]
    slices: list[tuple[int, int]] = []
    start = 1
    for a, b in zip(vertices[:-1], vertices[1:]):
        n = max(2, int(math.ceil(float(np.abs((b - a) * density).max()))))
        n += n % 2                                       # Simpson needs an even count
        s = np.arange(1, n + 1)[:, None] / n
        pts.append(a + s * (b - a))
        slices.append((start - 1, start + n))             # includes the segment's start point
        start += n
    return np.concatenate(pts), slices


def path_lengths(image: npt.ArrayLike, spl: SplineImage, group: TransformGroup, paths: Sequence[npt.ArrayLike],
                 resolution: float = 1.0) -> np.ndarray:
    """Image-space lengths of parameter-space polylines (each a ``k x dim`` array from 0).

    All sample points of all paths are warped in one batch; ``resolution`` scales the sampling density :data:`PER_UNIT`.
    See the module docstring for why each length is ``max(Simpson, inscribed polyline)``.
    """
    density = resolution * np.array([PER_UNIT[p] for p in group.params])
    flat = np.asarray(image, np.float64).ravel()
    allpts: list[np.ndarray] = []
    per: list[tuple[int, int, list[tuple[int, int]], np.ndarray]] = []
    for path in paths:
        pts, slices = _samples(np.asarray(path, np.float64), density)
        per.append((int(sum(len(p) for p in allpts)), len(pts), slices, np.asarray(path, np.float64)))
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
            chords = float(np.linalg.norm(np.diff(im[a:b], axis=0), axis=1).sum())
            seg = verts[j + 1] - verts[j]
            speed = np.linalg.norm(J[off + a:off + b] @ seg, axis=1)
            m = b - a - 1
            quad = (speed[0] + speed[-1] + 4 * speed[1:-1:2].sum() + 2 * speed[2:-1:2].sum()) / (3 * m)
            total += max(quad, chords)
        out[p] = total
    return out


def shortest_path(image: npt.ArrayLike, spl: SplineImage, group: TransformGroup, target: npt.ArrayLike,
                  grid_path: Sequence[npt.ArrayLike] | None = None, *, resolution: float = 1.0,
                  rounds: int = CORNER_ROUNDS) -> tuple[float, np.ndarray, str]:
    """Length and vertices of the shortest candidate path from the identity to ``target``.

    Returns ``(length, vertices, kind)`` with ``kind`` one of ``"straight"``, ``"grid"``,
    ``"two-segment"``, ``"bent"`` (four segments).
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
    # compass steps scaled by the metric at the midpoint: each moves the image by about
    # 1/8 of the path's length (a step in parameter units alone missed bends of 0.02 rad
    # on a dilation path of 0.9: image 9434, 0.46 % too long).  The search ranks trials at
    # half the sampling density (Simpson's rule is still accurate there; the inscribed
    # polyline alone is not: its shortfall depends on the sample count, which favoured
    # straight paths), and the winners are measured at the full density at the end.
    _, J = warp_nodes(spl, group, (t / 2)[None])
    speed = np.sqrt(np.maximum(np.einsum("pi,pi->i", J[0], J[0]), 1e-12))
    assert group.steps is not None  # set by TransformGroup.__post_init__
    delta = np.minimum(length / (8 * speed), np.maximum(np.abs(t), group.steps))
    res = resolution * SEARCH_RESOLUTION
    quick = float(path_lengths(image, spl, group, [np.stack([z, t])], res)[0])
    # stage 1: one corner, from the middle of the straight segment
    two, ql, delta1 = _compass(image, spl, group, np.stack([z, t / 2, t]), quick, delta, rounds, res)
    cands = [(two, "two-segment")]
    if ql < quick * (1 - BEND_MIN_GAIN):
        # stage 2: three corners seeded from the best corner (midpoints inserted)
        m = two[1]
        four = np.stack([z, m / 2, m, (m + t) / 2, t])
        cands.append((_compass(image, spl, group, four, ql, 2 * delta1, rounds, res)[0], "bent"))
    full = path_lengths(image, spl, group, [c[0] for c in cands], resolution)
    for (v, name), fl in zip(cands, full):
        if fl < length * (1 - 1e-5):          # not quadrature noise
            length, verts, kind = float(fl), v, name
    return length, verts, kind


def _compass(image: npt.ArrayLike, spl: SplineImage, group: TransformGroup, verts: npt.ArrayLike, length: float,
             delta: npt.ArrayLike, rounds: int, resolution: float) -> tuple[np.ndarray, float, np.ndarray]:
    """Compass search on the interior vertices of a polyline: each round tries +-delta on every axis of every interior
    vertex (one batch) and then, with several vertices, the combination of each vertex's best improving move; delta
    halves when nothing improves. ``(vertices, length, final delta)``."""
    verts = np.array(verts, np.float64)
    delta = np.array(delta, np.float64)
    inner, dim = len(verts) - 2, verts.shape[1]
    smallest = delta / 16                       # four halvings: the bend is resolved
    for _ in range(rounds):
        if np.all(delta < smallest):
            break
        trial: list[np.ndarray] = []
        for v in range(1, inner + 1):
            for i in range(dim):
                for s in (-1.0, 1.0):
                    p = verts.copy()
                    p[v, i] += s * delta[i]
                    trial.append(p)
        tl: np.ndarray = path_lengths(image, spl, group, trial, resolution).reshape(inner, 2 * dim)
        if inner > 1:        # every vertex's best improving move at once
            comb = verts.copy()
            for v in range(inner):
                j = int(np.argmin(tl[v]))
                if tl[v, j] < length:
                    comb[v + 1] = trial[v * 2 * dim + j][v + 1]
            trial.append(comb)
            tl = np.append(tl.ravel(), path_lengths(image, spl, group, [comb], resolution))
        tl = tl.ravel()
        k = int(np.argmin(tl))
        if tl[k] < length * (1 - 1e-7):
            length, verts = float(tl[k]), trial[k]
        else:
            delta = delta / 2
    return verts, length, delta


def first_change(image: npt.ArrayLike, spl: SplineImage, group: TransformGroup, vertices: npt.ArrayLike,
                 predict: Callable[[np.ndarray], npt.ArrayLike], label: int, *, resolution: float = 1.0,
                 subdivisions: int = 32) -> tuple[np.ndarray, np.ndarray, Any] | None:
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
