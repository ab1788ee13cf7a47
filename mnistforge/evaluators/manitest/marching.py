"""Fast marching for the geodesic distance from the identity on a lazily grown grid.

The distance ``u`` solves the anisotropic eikonal equation ``sqrt(grad u^T G^-1 grad u) = 1``, ``u(0) = 0``, on the grid
``k * steps`` (``d`` = 1..6) clipped to the group's bounds: nodes are Known or Trial (a min-heap), updated from
simplices of Known neighbours (factored or classic updates, used only where admissible) with the edge update as the
fallback.  Nodes are created in batches: ``evaluate`` gets every new node at once and returns their metric tensors ``G``
and labels, so metric and classifier never work node by node.  The march stops at the first accepted node whose label
``stop`` accepts (``"changed"``), after ``cap`` accepted nodes (``"cap"``), or with every node inside the bounds Known
(``"boundary"``).  The scheme in full: ``docs/manitest.md`` (fast marching).

>>> ev = lambda K: (np.broadcast_to(np.eye(2), (len(K), 2, 2)), None)
>>> res = fast_march([1.0, 1.0], [-10, -10], [10, 10], ev, cap=200)
>>> res.status, round(res.values[(3, 4)], 1)
('cap', 5.0)
"""
from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError

#: block side per dimension; 1 means "batch the new neighbours of each accepted node"
BLOCK_SIDE = {1: 8, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}
#: dimensions up to which every subset of other-axis neighbours forms a candidate simplex;
#: above it, the greedy chain (neighbours sorted by value) and all pairs are tried.
EXHAUSTIVE_UP_TO = 4
DEFAULT_CAP = 50_000
#: most Trial nodes whose neighbours are created ahead of time in one batch
LOOKAHEAD_MAX = 16
_EPS = 1e-12

#: a grid node: its integer index along each axis
Node = tuple[int, ...]
#: a known neighbour of an updated node off the update's axis: (axis, value, side, node)
_Other = tuple[int, float, int, Node]


@dataclass
class MarchResult:
    """What a march found: statuses, Known values, the path back to the origin."""

    status: str                       # "changed", "cap" or "boundary"
    stop_node: Node | None            # the first accepted node whose label stops the march
    values: dict[Node, float]         # Known node -> geodesic distance
    order: list[Node]                 # Known nodes in acceptance order
    parent: dict[Node, Node]          # node -> the vertex it was reached from
    labels: dict[Node, Any] = field(default_factory=dict)   # created node -> label (when evaluated)
    created: int = 0                  # nodes whose metric/label was computed
    evaluations: int = 0              # calls of evaluate (blocks)
    simplex_updates: int = 0
    edge_updates: int = 0
    trial: dict[Node, float] = field(default_factory=dict)    # Trial node -> tentative distance at the end

    @property
    def visited(self) -> int:
        return len(self.order)

    def path(self, node: Node | None = None) -> list[Node]:
        """Grid nodes from the origin to ``node`` (default: the stop node or the last Known)."""
        node = node if node is not None else (self.stop_node or self.order[-1])
        out = [node]
        while node in self.parent and self.parent[node] != node:
            node = self.parent[node]
            out.append(node)
        return out[::-1]

    def max_distance(self) -> float:
        return self.values[self.order[-1]] if self.order else 0.0


def solve_simplex(Q: np.ndarray, u: np.ndarray) -> tuple[float, np.ndarray] | None:
    """Eikonal update over one simplex: ``(mu, lambda)`` or ``None`` when not admissible.

    ``Q = H^T G H`` (``k x k``, ``H`` the vertex offsets from the updated node) and ``u`` the vertex values.

    >>> mu, lam = solve_simplex(np.eye(2), np.array([0.0, 0.0]))   # plane wave at 45 degrees
    >>> round(float(mu), 4), lam.round(3).tolist()
    (0.7071, [0.5, 0.5])
    >>> solve_simplex(np.eye(2), np.array([0.0, 5.0])) is None     # came along the edge
    True
    """
    k = len(u)
    if k == 2:  # closed form: the common case (2-D groups), no LAPACK call
        q11, q12, q22 = Q[0, 0], Q[0, 1], Q[1, 1]
        det = q11 * q22 - q12 * q12
        if det <= _EPS * max(q11 * q22, _EPS):
            return None
        u1, u2 = float(u[0]), float(u[1])
        w1 = np.array(((q22 - q12) / det, (q11 - q12) / det))               # Q^-1 1
        wu = np.array(((q22 * u1 - q12 * u2) / det, (q11 * u2 - q12 * u1) / det))  # Q^-1 u
        return _admissible_root(w1, wu, float(w1[0] + w1[1]), float(w1[0] * u1 + w1[1] * u2),
                                float(wu[0] * u1 + wu[1] * u2))
    try:
        W = np.linalg.solve(Q, np.stack([np.ones(k), u], axis=1))
    except np.linalg.LinAlgError:
        return None
    w1, wu = W[:, 0], W[:, 1]
    return _admissible_root(w1, wu, float(w1.sum()), float(wu.sum()), float(u @ wu))


def _admissible_root(w1: np.ndarray, wu: np.ndarray, a: float, b: float, c: float) -> tuple[float, np.ndarray] | None:
    """Larger root ``mu`` of ``a mu^2 - 2 b mu + c - 1 = 0`` and its barycentric weights, or ``None`` when the update is
    not admissible (no root, or the front does not come from inside the simplex)."""
    disc = b * b - a * (c - 1.0)
    if a <= 0 or disc < 0:
        return None
    mu = (b + math.sqrt(disc)) / a
    den = mu * a - b
    if den <= 0:
        return None
    lam = (mu * w1 - wu) / den
    return None if lam.min() < -1e-9 else (mu, lam)


def solve_factored(A: np.ndarray, h: np.ndarray, tau: np.ndarray, g0: np.ndarray,
                   u0: float) -> tuple[float, np.ndarray] | None:
    """Factored eikonal update ``u = u0 * tau`` over one simplex: ``(u, lambda)`` or ``None``.

    ``u0(t) = sqrt(t^T G0 t)`` is the distance for the metric frozen at the origin and ``g0`` its gradient at the
    updated node; ``A`` the inverse of the metric restricted to the simplex axes, ``h`` the signed vertex offsets along
    them, ``tau`` the vertex values of ``u / u0``.  With ``grad_S u = tau g0 + u0 (tau_S - tau) / h`` the equation
    ``grad_S u^T A grad_S u = 1`` is a quadratic in ``tau`` (larger root); admissible when the characteristic
    ``A grad_S u`` reaches the node through the simplex.  Exact (to rounding) wherever the metric is constant, so no
    point-source error builds up.

    >>> t = np.array([3.0, 4.0]); h = np.array([-1.0, -1.0])        # vertices (2,4), (3,3)
    >>> u, lam = solve_factored(np.eye(2), h, np.ones(2), t / 5.0, 5.0)
    >>> round(u, 12), bool(lam.min() >= 0)
    (5.0, True)
    """
    alpha = g0 - u0 / h
    beta = u0 * tau / h
    Aa, Ab = A @ alpha, A @ beta
    qa, qb, qc = float(alpha @ Aa), float(alpha @ Ab), float(beta @ Ab) - 1.0
    disc = qb * qb - qa * qc
    if qa <= 0 or disc < 0:
        return None
    t = (-qb + math.sqrt(disc)) / qa
    v = t * Aa + Ab                     # A grad u: the characteristic direction
    lam = -v / h
    if lam.min() < -1e-9 * max(1.0, float(np.abs(lam).max())) or lam.max() <= 0:
        return None
    return u0 * t, lam / lam.sum()


def _inverse_small(g: list[list[float]]) -> list[list[float]] | None:
    """Inverse of a 1x1 or 2x2 symmetric matrix given as lists (None if singular)."""
    if len(g) == 1:
        return [[1.0 / g[0][0]]] if g[0][0] > 0 else None
    g00, g01, g11 = g[0][0], g[0][1], g[1][1]
    det = g00 * g11 - g01 * g01
    return None if not det > _EPS * g00 * g11 else [[g11 / det, -g01 / det], [-g01 / det, g00 / det]]


def _factored_small(gsub: list[list[float]], h: list[float], tau: list[float], g0: list[float],
                    u0: float) -> tuple[float, np.ndarray | list[float]] | None:
    """:func:`solve_factored` on plain lists; pure Python for 1 or 2 axes."""
    k = len(h)
    if k > 2:
        try:
            A = np.linalg.inv(np.array(gsub))
        except np.linalg.LinAlgError:
            return None
        return solve_factored(A, np.array(h), np.array(tau), np.array(g0), u0)
    if (inv := _inverse_small(gsub)) is None:
        return None
    alpha = [g - u0 / hh for g, hh in zip(g0, h)]
    beta = [u0 * tt / hh for tt, hh in zip(tau, h)]
    Aa = [sum(r[j] * alpha[j] for j in range(k)) for r in inv]
    Ab = [sum(r[j] * beta[j] for j in range(k)) for r in inv]
    qa = sum(x * y for x, y in zip(alpha, Aa))
    qb = sum(x * y for x, y in zip(alpha, Ab))
    qc = sum(x * y for x, y in zip(beta, Ab)) - 1.0
    disc = qb * qb - qa * qc
    if qa <= 0 or disc < 0:
        return None
    t = (-qb + math.sqrt(disc)) / qa
    lam = [-(t * p + q) / hh for p, q, hh in zip(Aa, Ab, h)]
    top = max(lam)
    if top <= 0 or min(lam) < -1e-9 * top:
        return None
    tot = sum(lam)
    return u0 * t, [v / tot for v in lam]


def _simplex_small(gsub: list[list[float]], h: list[float], u: list[float]) -> tuple[float, list[float]] | None:
    """:func:`solve_simplex` with ``Q = H^T G H`` built from lists."""
    k = len(h)
    Q = np.array([[gsub[i][j] * h[i] * h[j] for j in range(k)] for i in range(k)])
    sol = solve_simplex(Q, np.array(u, np.float64))
    return None if sol is None else (sol[0], sol[1].tolist())


def _subsets(others: list[_Other]) -> Iterator[tuple[_Other, ...]]:
    m = len(others)
    if m <= EXHAUSTIVE_UP_TO - 1:
        for r in range(1, m + 1):
            yield from itertools.combinations(others, r)
        return
    ranked = sorted(others, key=lambda o: o[1])
    yield from itertools.combinations(ranked, 1)
    yield from itertools.combinations(ranked, 2)
    for r in range(3, m + 1):
        yield tuple(ranked[:r])


#: largest ``init_radius`` of :func:`fast_march`: the first nodes are taken from a ball of
#: ``(2r + 1)^d`` candidates (6-D: 531,441 at 4)
MAX_INIT_RADIUS = 4


def fast_march(steps: Sequence[float] | np.ndarray, lo: Sequence[int] | np.ndarray, hi: Sequence[int] | np.ndarray,
               evaluate: Callable[[np.ndarray], tuple[npt.ArrayLike, Any]], *, cap: int = DEFAULT_CAP,
               stop: Callable[[Any], bool] | None = None, init_radius: int = 1, block_side: int | None = None,
               factored: bool = True) -> MarchResult:
    """Geodesic distances from the origin of the grid ``k * steps`` (the step per axis, in
    parameter units), ``lo <= k <= hi`` (the grid index bounds per axis, ``lo <= 0 <= hi``).

    ``evaluate(K)``, ``K`` an ``M x d`` int array of grid indices, returns ``(G, labels)``: metric
    tensors ``M x d x d`` in parameter units and the labels (or ``None``).  The march stops after
    ``cap`` Known nodes (status ``"cap"``), or at a Known node whose label ``stop(label)`` accepts.
    ``init_radius``: L1 index radius of the initialised ball around the origin (0 for none);
    ``block_side``: nodes per block side (default :data:`BLOCK_SIDE`); ``factored``: factored
    simplex updates (default; exact for a constant metric) instead of the classic ones (their
    first-order error grows like ``h log(r/h)`` from the source).
    """
    steps = [float(s) for s in steps]
    d = len(steps)
    if not 1 <= d <= 6:
        raise ConfigError("unsupported grid dimension", expected="1 to 6 parameters", found=d)
    lo = [int(v) for v in lo]
    hi = [int(v) for v in hi]
    if any(not a <= 0 <= b for a, b in zip(lo, hi)):
        raise ConfigError("grid bounds must contain the origin", expected="lo <= 0 <= hi", found=f"lo={lo}, hi={hi}")
    if cap < 1:
        raise ConfigError("invalid node cap", expected="cap >= 1", found=cap)
    if isinstance(init_radius, bool) or not isinstance(init_radius, int) \
            or not 0 <= init_radius <= MAX_INIT_RADIUS:   # (the ball has (2r+1)^d candidates)
        raise ConfigError("invalid init_radius", expected=f"an integer in 0..{MAX_INIT_RADIUS}",
                          found=repr(init_radius))
    side = int(block_side or BLOCK_SIDE[d])

    G: dict[Node, np.ndarray] = {}        # node -> metric tensor (d x d ndarray)
    GL: dict[Node, list[list[float]]] = {}       # the same as nested lists (scalar access in the update loop)
    sq: dict[Node, list[float]] = {}       # node -> sqrt of the diagonal, as a list (edge lengths)
    labels: dict[Node, Any] = {}
    val: dict[Node, float] = {}
    parent: dict[Node, Node] = {}
    known: set[Node] = set()
    order: list[Node] = []
    stats = {"evaluations": 0, "simplex": 0, "edge": 0}

    off = side // 2

    def create(nodes: Iterable[Node]) -> None:
        """Evaluate metric and labels of ``nodes`` (or of their blocks) in one batch."""
        if side > 1:
            todo: set[Node] = set()
            for node in nodes:
                blk = [(c + off) // side for c in node]
                ranges = [range(max(b * side - off, l), min(b * side - off + side - 1, h) + 1)
                          for b, l, h in zip(blk, lo, hi)]
                todo.update(itertools.product(*ranges))
            nodes = [n for n in todo if n not in G]
        if not (nodes := sorted(set(nodes))):
            return
        K = np.array(nodes, dtype=np.int64).reshape(-1, d)
        Gs, labs = evaluate(K)
        Gs = np.asarray(Gs, np.float64)
        stats["evaluations"] += 1
        for i, kk in enumerate(map(tuple, K.tolist())):
            g = Gs[i]
            G[kk] = g
            GL[kk] = g.tolist()
            sq[kk] = np.sqrt(np.maximum(np.diagonal(g), 0.0)).tolist()
            if labs is not None:
                labels[kk] = labs[i]

    def inside(node: Node) -> bool:
        return all(l <= c <= h for c, l, h in zip(node, lo, hi))

    def update(x: Node, k: Node, a: int) -> tuple[float, Node]:
        """Best tentative value for ``x`` from simplices containing the accepted ``k``."""
        uk = val[k]
        gx, gk = GL[x], GL[k]
        best = uk + 0.5 * steps[a] * (sq[x][a] + sq[k][a])
        stats["edge"] += 1
        par = k
        others: list[_Other] = []
        for b in range(d):
            if b == a:
                continue
            pick = None
            for s in (-1, 1):
                y = x[:b] + (x[b] + s,) + x[b + 1:]
                if y in known:
                    uy = val[y]
                    if pick is None or uy < pick[1]:
                        pick = (b, uy, s, y)
            if pick is not None:
                others.append(pick)
        ha = (k[a] - x[a]) * steps[a]
        if factored:
            t = [c * st for c, st in zip(x, steps)]
            gt = [sum(row[j] * t[j] for j in range(d)) for row in g0l]
            u0x = math.sqrt(max(sum(ti * gi for ti, gi in zip(t, gt)), 0.0))
            if u0x <= 0.0:
                return max(best, uk), par
            g0 = [v / u0x for v in gt]
        subsets: list[tuple[_Other, ...]] = [()] if factored else []
        if others:
            subsets += list(_subsets(others))
        for sub in subsets:
            axes = [a] + [o[0] for o in sub]
            hs = [ha] + [o[2] * steps[o[0]] for o in sub]
            verts = [k] + [o[3] for o in sub]
            gls = [gx, gk] + [GL[o[3]] for o in sub]
            n = len(gls)
            gsub = [[sum(g[i][j] for g in gls) / n for j in axes] for i in axes]
            stats["simplex"] += 1
            if factored:
                sol = _factored_small(gsub, hs, [tau[v] for v in verts], [g0[i] for i in axes], u0x)
            else:
                sol = _simplex_small(gsub, hs, [uk] + [o[1] for o in sub])
            if sol is not None and sol[0] < best:
                best = sol[0]
                lam = sol[1]
                par = verts[max(range(len(lam)), key=lam.__getitem__)]
        return max(best, uk), par

    origin = (0,) * d
    val[origin] = 0.0
    parent[origin] = origin
    tau = {origin: 1.0}           # u / u0 of Known nodes (factored updates)
    heap = [(0.0, origin)]
    ball: list[Node] = []
    if init_radius > 0:
        ball = [c for c in itertools.product(range(-init_radius, init_radius + 1), repeat=d)
                if 0 < sum(map(abs, c)) <= init_radius and inside(c)]
    # the ball keeps its straight-line start values: a factored update from the origin
    # would replace them with h (sqrt(G0) + sqrt(Gm)) / 2, below even the chord
    fixed = set(ball)
    create([origin] + ball)
    g0 = G[origin]
    # the frozen metric, regularised so that u0 > 0 away from the origin even when the
    # image does not change at first order along some direction
    g0reg = g0 + (1e-9 * max(float(np.trace(g0)), 1e-300) / d) * np.eye(d)
    steps_arr = np.array(steps)
    g0l = g0reg.tolist()
    if ball:
        for c in ball:
            t = np.array(c, np.float64) * steps
            dist = math.sqrt(max(float(t @ ((g0 + G[c]) / 2.0) @ t), 0.0))
            val[c] = dist
            parent[c] = origin
            heap.append((dist, c))
        heapq.heapify(heap)

    status, stop_node = "boundary", None
    while heap:
        u, x = heapq.heappop(heap)
        if x in known or u > val[x]:
            continue                       # stale heap entry
        known.add(x)
        order.append(x)
        if factored and x != origin:
            t = np.array(x) * steps_arr
            u0x = math.sqrt(max(float(t @ g0reg @ t), 0.0))
            tau[x] = u / u0x if u0x > 0 else 1.0
        if stop is not None and x in labels and stop(labels[x]):
            status, stop_node = "changed", x
            break
        if len(order) >= cap:
            status = "cap"
            break
        reach: list[tuple[int, Node]] = []
        for a in range(d):
            for s in (-1, 1):
                y = x[:a] + (x[a] + s,) + x[a + 1:]
                if y not in known and lo[a] <= y[a] <= hi[a]:
                    reach.append((a, y))
        if missing := [y for _, y in reach if y not in G]:
            # look ahead: also create the missing neighbours of Trial nodes near the top of
            # the heap (accepted soon); the lookahead grows with the search, so short
            # searches waste nothing and long ones get batches of tens of nodes
            if look := min(LOOKAHEAD_MAX, len(order) // 8):
                seen = set(missing)
                for _, z in heap[:look]:
                    for b in range(d):
                        for s in (-1, 1):
                            y = z[:b] + (z[b] + s,) + z[b + 1:]
                            if (y not in G and y not in seen and y not in known and lo[b] <= y[b] <= hi[b]):
                                seen.add(y)
                                missing.append(y)
            create(missing)
        for a, y in reach:
            if y in fixed:
                continue
            nu, par = update(y, x, a)
            if nu < val.get(y, math.inf):
                val[y] = nu
                parent[y] = par
                heapq.heappush(heap, (nu, y))
    values = {n: val[n] for n in order}
    trial = {n: v for n, v in val.items() if n not in known}
    return MarchResult(status, stop_node, values, order, parent, labels, created=len(G),
                       evaluations=stats["evaluations"], simplex_updates=stats["simplex"],
                       edge_updates=stats["edge"], trial=trial)
