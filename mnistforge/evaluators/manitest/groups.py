"""Transformation groups acting on images about the image centre.

A group is declared by the list of its parameter kinds (``tx``, ``ty``, ``rotation``, ``dilation``, ``aspect``,
``shear``), each with a grid step and search bounds.  The transformation is ``T_t(x) = c + L(t) (x - c) + b(t)`` on
``x = (column, row)`` in pixels, with ``L(t) = exp(dilation) R(rotation) [[exp(aspect), shear], [0, exp(-aspect)]]``
and ``b(t) = (tx, ty)``; the transformed image is ``I_t(p) = I(T_t^{-1}(p))``, zero outside the frame. The kinds'
meanings, steps, bounds and generator fields: ``docs/manitest.md`` (groups).

>>> g = get_group("dilation-rotation")
>>> g.params, [round(s, 4) for s in g.steps]
(('dilation', 'rotation'), [0.1, 0.1571])
>>> get_group("affine").dim
6
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError

#: Paper grid steps (Fawzi & Frossard 2015), per parameter kind.
DEFAULT_STEPS = {"tx": 0.5, "ty": 0.5, "rotation": math.pi / 20, "dilation": 0.1, "aspect": 0.1, "shear": 0.1}
#: Default search bounds per kind: beyond them the picture has left the frame, turned a
#: full half-turn either way, or shrunk/grown by e^3 (20x); the search stops there.
DEFAULT_BOUNDS = {"tx": (-28.0, 28.0), "ty": (-28.0, 28.0), "rotation": (-math.pi, math.pi),
                  "dilation": (-3.0, 3.0), "aspect": (-2.0, 2.0), "shear": (-3.0, 3.0)}
KINDS = tuple(DEFAULT_STEPS)


@dataclass(frozen=True)
class TransformGroup:
    """A transformation group: its parameter kinds (in grid-axis order), the grid step per
    parameter (default: the paper's, :data:`DEFAULT_STEPS`) and the range searched (default:
    :data:`DEFAULT_BOUNDS`; the grid holds the nodes ``k * step`` inside it).

    >>> g = TransformGroup("shift-x", ("tx",))
    >>> g.steps, g.linear(np.zeros(1)).tolist(), g.shift(np.array([2.0])).tolist()
    ((0.5,), [[1.0, 0.0], [0.0, 1.0]], [2.0, 0.0])
    """

    name: str
    params: tuple[str, ...]
    steps: tuple[float, ...] | None = None
    bounds: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        params = tuple(self.params)
        bad = [p for p in params if p not in KINDS]
        if bad or not params or len(set(params)) != len(params):
            raise ConfigError(f"invalid parameters for group {self.name}",
                              expected="distinct kinds among " + ", ".join(KINDS), found=", ".join(map(str, params)))
        object.__setattr__(self, "params", params)
        steps = tuple(float(DEFAULT_STEPS[p]) for p in params) if self.steps is None \
            else tuple(float(s) for s in self.steps)
        if len(steps) != len(params) or any(not s > 0 for s in steps):
            raise ConfigError(f"invalid grid steps for group {self.name}",
                              expected=f"{len(params)} positive steps", found=str(steps))
        object.__setattr__(self, "steps", steps)
        bounds = tuple(DEFAULT_BOUNDS[p] for p in params) if self.bounds is None \
            else tuple((float(a), float(b)) for a, b in self.bounds)
        if len(bounds) != len(params) or any(not a <= 0 <= b for a, b in bounds):
            raise ConfigError(f"invalid bounds for group {self.name}",
                              expected=f"{len(params)} (low <= 0 <= high) pairs", found=str(bounds))
        object.__setattr__(self, "bounds", bounds)

    @property
    def dim(self) -> int:
        return len(self.params)

    def grid_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest integer grid index per axis inside the bounds."""
        assert self.steps is not None and self.bounds is not None  # set by __post_init__
        st = np.asarray(self.steps)
        lo = np.ceil(np.array([b[0] for b in self.bounds]) / st - 1e-9).astype(np.int64)
        hi = np.floor(np.array([b[1] for b in self.bounds]) / st + 1e-9).astype(np.int64)
        return lo, hi

    def _values(self, t: npt.ArrayLike) -> dict[str, np.ndarray]:
        t = np.asarray(t, np.float64)
        z = np.zeros(t.shape[:-1])
        v = {k: z for k in KINDS}
        for i, p in enumerate(self.params):
            v[p] = t[..., i]
        return v

    def linear(self, t: npt.ArrayLike) -> np.ndarray:
        """``L(t)``, shape ``(..., 2, 2)`` acting on ``(x, y)``."""
        return self._linear_and_derivatives(t)[0]

    def shift(self, t: npt.ArrayLike) -> np.ndarray:
        """``b(t)``, shape ``(..., 2)``."""
        v = self._values(t)
        return np.stack([v["tx"], v["ty"]], axis=-1)

    def _linear_and_derivatives(self, t: npt.ArrayLike) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        v = self._values(t)
        s, th, a, q = v["dilation"], v["rotation"], v["aspect"], v["shear"]
        es, c, sn = np.exp(s), np.cos(th), np.sin(th)
        R = _mat(c, -sn, sn, c)
        dR = _mat(-sn, -c, c, -sn)
        ea, ea_, z = np.exp(a), np.exp(-a), np.zeros_like(a)
        S = _mat(ea, q, z, ea_)
        L = es[..., None, None] * R @ S
        d = {"dilation": L, "rotation": es[..., None, None] * dR @ S,
             "aspect": es[..., None, None] * R @ _mat(ea, z, z, -ea_),
             "shear": es[..., None, None] * R @ _mat(z, np.ones_like(a), z, z)}
        return L, d

    def derivatives(self, t: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``dL/dt_i`` and ``db/dt_i``: shapes ``(..., dim, 2, 2)`` and ``(..., dim, 2)``."""
        return self.linear_and_derivatives(t)[1:]

    def linear_and_derivatives(self, t: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(L, dL/dt, db/dt)`` in one pass (see :meth:`linear`, :meth:`derivatives`)."""
        t = np.asarray(t, np.float64)
        L, d = self._linear_and_derivatives(t)
        dL = np.zeros(t.shape[:-1] + (self.dim, 2, 2))
        db = np.zeros(t.shape[:-1] + (self.dim, 2))
        for i, p in enumerate(self.params):
            if p == "tx":
                db[..., i, 0] = 1.0
            elif p == "ty":
                db[..., i, 1] = 1.0
            else:
                dL[..., i, :, :] = d[p]
        return L, dL, db

    def generator_fields(self, shape: tuple[int, int] = (28, 28)) -> np.ndarray:
        """Velocity of each pixel under each parameter at the identity: ``(dim, 2, H, W)``.

        Component 0 is the x (column) velocity, 1 the y (row) velocity.

        >>> f = get_group("rotation").generator_fields((3, 3))
        >>> f[0, :, 0, 2].tolist()  # top-right corner (x=1, y=-1 about the centre) moves
        [1.0, 1.0]
        """
        h, w = shape
        cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
        rel = np.stack([xx - cx, yy - cy])                       # 2 x H x W
        dL, db = self.derivatives(np.zeros(self.dim))
        fields: np.ndarray = np.einsum("iab,bhw->iahw", dL, rel) + db[:, :, None, None]
        return fields

    def describe(self) -> str:
        assert self.steps is not None  # set by __post_init__
        parts = ", ".join(f"{p} step {s:g}" for p, s in zip(self.params, self.steps))
        return f"{self.name} ({parts})"


def _mat(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.stack([np.stack([a, b], -1), np.stack([c, d], -1)], -2)


GROUPS = {
    "rotation": TransformGroup("rotation", ("rotation",)), "translation": TransformGroup("translation", ("tx", "ty")),
    "dilation-rotation": TransformGroup("dilation-rotation", ("dilation", "rotation")),
    "similarity": TransformGroup("similarity", ("tx", "ty", "rotation", "dilation")),
    "affine": TransformGroup("affine", ("tx", "ty", "rotation", "dilation", "aspect", "shear")),
}


def get_group(group: TransformGroup | str) -> TransformGroup:
    """A :class:`TransformGroup` from its name (or the group itself).

    >>> get_group("similarity").params
    ('tx', 'ty', 'rotation', 'dilation')
    """
    if isinstance(group, TransformGroup):
        return group
    key = str(group).strip().lower().replace("_", "-").replace("+", "-")
    aliases = {"rotation-dilation": "dilation-rotation", "shift": "translation", "translations": "translation"}
    key = aliases.get(key, key)
    if key not in GROUPS:
        raise ConfigError("unknown transformation group", expected="one of " + ", ".join(GROUPS), found=group)
    return GROUPS[key]
