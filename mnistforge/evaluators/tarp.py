"""TARP benchmark bounds: how hard is a binary problem for random projections?

Implements, from the description in the Purdue "Benchmarks for image classification" work (no public code exists; this
is the reference one), 1-TARP (a random direction, a Gaussian Bayes threshold between the class projections), n-TARP
(the best of n directions by Gini impurity), trees of depth k (a split kept only where it lowers the validation error)
and ``B_k^n``, the mean test error over R seeded runs, with ``B0`` the majority-class error. ``docs/tarp.md`` gives the
method and its seeding in full; one tree per (run, n) yields ``B_k^n`` for every k <= K.

>>> rng = np.random.default_rng(0)
>>> X = np.r_[rng.normal(0, 1, (300, 5)), rng.normal(0, 1, (300, 5)) + [6, 0, 0, 0, 0]]
>>> y = np.r_[np.zeros(300, int), np.ones(300, int)]
>>> res = tarp_bounds(X, y, ns=[10], ks=[0, 1, 2], runs=4, seed=0, workers=1)
>>> round(res.b0, 2), res.point(10, 0)["k"]
(0.5, 0)
>>> res.point(10, 2)["mean"] < 0.1
True
"""
from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import settings
from ..io.atomic import atomic_file
from ..io.memory import require_memory
from ..io.workers import named_worker_errors, process_pool
from ..plotting import pyplot
from ..errors import ConfigError
from ..io.types import StrPath
from ..progress import progress as bar


def gaussian_thresholds(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bayes thresholds between two 1-D Gaussians, one per column of ``p`` (``m x n``: the projections of a node's
    training points on n directions; ``y`` their 0/1 labels, both classes present): the root of the Bayes boundary lying
    between the two class means (the midpoint when no root lies there).

    >>> p = np.array([[0.], [1.], [2.], [10.], [11.], [12.]])
    >>> float(gaussian_thresholds(p, np.array([0, 0, 0, 1, 1, 1]))[0])
    6.0
    """
    y = y.astype(bool)
    n1 = int(y.sum())
    n0 = y.size - n1
    p = p.astype(np.float64, copy=False)
    s1 = p[y].sum(0)
    s0 = p.sum(0) - s1
    m0, m1 = s0 / n0, s1 / n1
    v1 = ((p[y] - m1) ** 2).sum(0) / n1
    v0 = ((p[~y] - m0) ** 2).sum(0) / n0
    # A class with a single distinct value has variance 0: floor it relative to
    # the spread of the means so the boundary stays finite.
    floor = 1e-12 * (1.0 + m0 ** 2 + m1 ** 2) + 1e-12
    v0 = np.maximum(v0, floor)
    v1 = np.maximum(v1, floor)
    a = 0.5 / v1 - 0.5 / v0
    b = m0 / v0 - m1 / v1
    c = (m1 ** 2 / (2 * v1) - m0 ** 2 / (2 * v0) + math.log(n0 / n1) - 0.5 * np.log(v0) + 0.5 * np.log(v1))
    lo, hi = np.minimum(m0, m1), np.maximum(m0, m1)
    mid = 0.5 * (m0 + m1)
    with np.errstate(divide="ignore", invalid="ignore"):
        linear = np.abs(a) < 1e-12 * (np.abs(b) + 1e-300)
        lin_root = -c / b
        disc = b * b - 4 * a * c
        sq = np.sqrt(np.maximum(disc, 0))
        r1 = (-b + sq) / (2 * a)
        r2 = (-b - sq) / (2 * a)
    t: np.ndarray = mid.copy()
    ok_lin = linear & np.isfinite(lin_root) & (lin_root >= lo) & (lin_root <= hi)
    t[ok_lin] = lin_root[ok_lin]
    quad = ~linear & (disc >= 0)
    in1 = quad & (r1 >= lo) & (r1 <= hi)
    in2 = quad & (r2 >= lo) & (r2 <= hi) & ~in1
    t[in1] = r1[in1]
    t[in2] = r2[in2]
    return t


def gini(counts1: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Gini impurity ``2 q (1 - q)`` of a two-class population (0 when empty)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(counts > 0, counts1 / np.maximum(counts, 1), 0.0)
    g: np.ndarray = 2 * q * (1 - q)
    return g


@dataclass
class NodeSplit:
    """The chosen split of one node: ``x -> (x @ direction > threshold)``."""

    direction: np.ndarray | None
    threshold: float
    left: int   # label predicted on the <= side
    right: int  # label predicted on the > side
    gain: float


def best_split(X: np.ndarray, y: np.ndarray, n: int, rng: np.random.Generator, parent_label: int) -> NodeSplit | None:
    """n-TARP: the best of ``n`` random-projection splits of one node, by Gini gain.

    All n directions are evaluated with one matrix product. Returns ``None``
    when the node holds a single class (nothing to split).
    """
    m = y.size
    n1 = int(y.sum())
    if n1 == 0 or n1 == m:
        return None
    R = rng.uniform(-1.0, 1.0, size=(X.shape[1], n)).astype(X.dtype, copy=False)
    P = X @ R
    t = gaussian_thresholds(P, y)
    right = P > t  # (m, n)
    cr = right.sum(0).astype(np.float64)
    cr1 = (right & y.astype(bool)[:, None]).sum(0).astype(np.float64)
    cl, cl1 = m - cr, n1 - cr1
    child = (cl * gini(cl1, cl) + cr * gini(cr1, cr)) / m
    gain = gini(np.array(n1, float), np.array(m, float)) - child
    j = int(np.argmax(gain))
    left_label = majority_from_counts(cl1[j], cl[j], parent_label)
    right_label = majority_from_counts(cr1[j], cr[j], parent_label)
    return NodeSplit(R[:, j].copy(), float(t[j]), left_label, right_label, float(gain[j]))


def majority_from_counts(c1: float, c: float, default: int) -> int:
    """Majority label of ``c`` 0/1 labels of which ``c1`` are 1 (``default`` when none or tied)."""
    return default if c == 0 or 2 * c1 == c else int(2 * c1 > c)


@dataclass
class RunResult:
    errors: np.ndarray        # (K+1,) test error of the depth-k tree
    projections: np.ndarray   # (K+1,) scalar projections computed up to depth k
    seconds: np.ndarray       # (K+1,) wall time up to depth k


def split_indices(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 25 % / 25 % / 50 % train / validation / test split of one run."""
    perm = rng.permutation(n)
    a, b = n // 4, n // 2
    return perm[:a], perm[a:b], perm[b:]


def run_tree(X: np.ndarray, y: np.ndarray, n: int, K: int, split_seed: int | tuple[int, ...],
             dir_seed: int | tuple[int, ...]) -> RunResult:
    """Grow one depth-K n-TARP tree and measure the test error at every depth."""
    t0 = time.perf_counter()
    itr, iva, ite = split_indices(len(y), np.random.default_rng(split_seed))
    rng = np.random.default_rng(dir_seed)
    Xtr, ytr, Xva, yva, Xte, yte = X[itr], y[itr], X[iva], y[iva], X[ite], y[ite]
    node_tr = np.zeros(len(ytr), np.int64)
    node_va = np.zeros(len(yva), np.int64)
    node_te = np.zeros(len(yte), np.int64)
    labels = {0: majority_from_counts(int(ytr.sum()), ytr.size, 0)}
    errors = np.empty(K + 1)
    proj = np.zeros(K + 1)
    secs = np.empty(K + 1)
    errors[0] = np.mean(yte != labels[0]) if len(yte) else 0.0
    secs[0] = time.perf_counter() - t0
    count = 0.0
    for level in range(K):
        new_labels: dict[int, int] = {}
        new_tr = node_tr * 2
        new_va = node_va * 2
        new_te = node_te * 2
        for node in sorted(labels):
            lab = labels[node]
            mtr = node_tr == node
            split = best_split(Xtr[mtr], ytr[mtr], n, rng, lab) if mtr.any() else None
            if split is not None:
                count += n * int(mtr.sum())
                mva = node_va == node
                pva = Xva[mva] @ split.direction > split.threshold
                count += int(mva.sum())
                yv = yva[mva]
                err_split = np.sum(np.where(pva, split.right, split.left) != yv)
                err_keep = np.sum(yv != lab)
                if not (yv.size and err_split < err_keep):
                    split = None
            if split is None:
                # Not split (threshold +inf): everything goes to the left child,
                # which keeps the node's label and may split at the next level.
                new_labels[2 * node] = lab
                continue
            mte = node_te == node
            new_tr[mtr] += Xtr[mtr] @ split.direction > split.threshold
            new_va[mva] += pva
            new_te[mte] += Xte[mte] @ split.direction > split.threshold
            count += int(mte.sum()) + int(mtr.sum())
            new_labels[2 * node] = split.left
            new_labels[2 * node + 1] = split.right
        node_tr, node_va, node_te, labels = new_tr, new_va, new_te, new_labels
        keys = np.fromiter(labels.keys(), np.int64)
        vals = np.fromiter(labels.values(), np.int64)
        pred = vals[np.searchsorted(keys, node_te)]
        errors[level + 1] = np.mean(pred != yte) if len(yte) else 0.0
        proj[level + 1] = count
        secs[level + 1] = time.perf_counter() - t0
    return RunResult(errors, proj, secs)


@dataclass
class TarpResult:
    """``B_k^n`` for a grid of n and k, plus ``B0``; serialises to JSON."""

    task: str
    n_samples: int
    b0: float
    results: list[dict[str, Any]] = field(default_factory=list)
    seed: int = 0

    def point(self, n: int, k: int) -> dict[str, Any]:
        for r in self.results:
            if r["n"] == n and r["k"] == k:
                return r
        raise KeyError((n, k))

    def curve(self, n: int) -> list[dict[str, Any]]:
        return sorted((r for r in self.results if r["n"] == n), key=lambda r: r["k"])

    def asymptote(self) -> float:
        """The error the curves level off at: the lowest ``B_k^n`` measured."""
        lowest: float = min(r["mean"] for r in self.results)
        return lowest

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["B0"] = d.pop("b0")
        d["asymptote"] = self.asymptote() if self.results else None
        return d


#: deepest tree: node numbers double at each level (int64)
MAX_DEPTH = 62


def tarp_memory(n_samples: int, dims: int, n: int, depth: int, runs: int, n_grid: int = 1, concurrent: int = 1) -> int:
    """Bytes a TARP run needs at its peak, besides the samples themselves.

    Per job running at once: the run's train/validation/test copies of the samples, the root
    node's copy, and the n directions with their projections of the root's training points
    (float32 directions and projections, the float64 Gaussian fit and its temporaries: about
    ``4 D + 20 m`` bytes per direction, measured); then every run's per-depth results.

    >>> tarp_memory(2115, 784, 10**8, 6, 100) > 500 * 2**30   # `tarp --n 100000000`
    True
    """
    m = n_samples // 4
    per_job = 4 * dims * (n_samples + m) + n * (4 * dims + 20 * m)
    results = 2 * 3 * 8 * (depth + 1) * runs * n_grid
    return concurrent * per_job + results


def check_point(name: str, error: float, cost: float) -> None:
    """A classifier's place on the benchmark plane: an error rate in [0, 1], a cost >= 0.

    >>> check_point("lin", 0.02, 5e6)
    >>> check_point("lin", 2.0, 5e6)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.ConfigError: bad classifier point lin: expected an error rate in [0, 1] ...
    """
    what = f"bad classifier point {name}".strip()
    if not (math.isfinite(error) and 0.0 <= error <= 1.0):
        raise ConfigError(what, expected="an error rate in [0, 1] "
                          "(or 0%..100%)", found=repr(error), hint="write it as a fraction (0.02) or a percentage (2%)")
    if not (math.isfinite(cost) and cost >= 0):
        raise ConfigError(what, expected="a finite cost >= 0 (scalar "
                          "projections)", found=repr(cost))


_SHARED: dict[str, np.ndarray] = {}


def _job(args: tuple[int, int, int, int]) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
    n, K, run, seed = args
    X, y = _SHARED["X"], _SHARED["y"]
    r = run_tree(X, y, n, K, (seed, run), (seed, run, n))
    return n, run, r.errors, r.projections, r.seconds


def tarp_bounds(X: np.ndarray | Sequence[Any], y: npt.ArrayLike, *, ns: Collection[int] = (1, 10, 100),
                ks: Collection[int] = range(0, 7), runs: int = 100, seed: int = 0,
                workers: int | None = None, task: str = "", progress: bool | None = None) -> TarpResult:
    """Estimate ``B_k^n`` for every n in ``ns`` (directions per node) and k in ``ks`` (tree
    depths) from ``runs`` independent runs (a fresh split and fresh directions each) on the
    samples ``X`` (``N x D``, images flattened; cast to float32) with 0/1 labels ``y``.
    ``workers``: processes (default: all cores); results do not depend on it.

    >>> X = np.random.default_rng(1).normal(size=(200, 3)); y = (X[:, 0] > 0).astype(int)
    >>> r = tarp_bounds(X, y, ns=[50], ks=[3], runs=3, workers=1)
    >>> r.point(50, 3)["mean"] < 0.2
    True
    """
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float32).reshape(len(X), -1))
    y = np.asarray(y).astype(np.int64)
    if set(np.unique(y)) - {0, 1}:
        raise ConfigError("TARP needs binary labels", expected="labels 0/1",
                          found=f"values {np.unique(y)[:5].tolist()}")
    if len(y) < 8:
        raise ConfigError("too few samples for TARP", expected="at least 8", found=len(y))
    if not np.isfinite(X).all():
        raise ConfigError("TARP needs finite samples", expected="no NaN or infinite values in X",
                          found=f"{int((~np.isfinite(X)).sum())} non-finite values")
    ns = sorted({int(n) for n in ns})
    ks = sorted({int(k) for k in ks})
    if not ns or min(ns) < 1 or not ks or min(ks) < 0:
        raise ConfigError("bad TARP grid", expected="n >= 1 and k >= 0", found=f"n={ns}, k={ks}")
    if max(ks) > MAX_DEPTH:
        raise ConfigError("TARP tree too deep", expected=f"k <= {MAX_DEPTH} (node numbers are "
                          "2^k in int64)", found=f"k={max(ks)}")
    if int(runs) < 1:
        raise ConfigError("bad number of TARP runs", expected="runs >= 1", found=runs)
    K = max(ks)
    workers = settings.current(workers=workers).workers
    concurrent = min(workers, len(ns) * runs)
    require_memory(tarp_memory(X.shape[0], X.shape[1], max(ns), K, runs, len(ns), concurrent),
                   f"TARP with n={max(ns)} directions on {X.shape[0]} samples of {X.shape[1]} values"
                   + (f" ({concurrent} runs at once)" if concurrent > 1 else ""),
                   hint="use fewer directions (--n), fewer samples (--limit) or fewer "
                        "workers (--workers)")
    b0 = float(min(y.mean(), 1 - y.mean()))
    jobs = [(n, K, run, seed) for n in ns for run in range(runs)]
    out: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    pbar = bar(total=len(jobs), desc="TARP runs", unit="run", disable=progress)
    # fork: the workers inherit X and y; only (n, run) tuples and small result arrays cross the
    # process boundary
    _SHARED["X"], _SHARED["y"] = X, y
    with contextlib.ExitStack() as stack:
        results: Iterable[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = map(_job, jobs)
        if workers > 1 and len(jobs) > 1 and "fork" in mp.get_all_start_methods():
            stack.enter_context(named_worker_errors("running TARP"))
            ex = stack.enter_context(process_pool(workers, mp_context=mp.get_context("fork")))
            results = ex.map(_job, jobs, chunksize=max(1, len(jobs) // (8 * workers)))
        for res in results:
            out[res[0], res[1]] = res[2:]
            pbar.update()
    _SHARED.clear()
    pbar.close()
    result = TarpResult(task=task, n_samples=int(len(y)), b0=b0, seed=seed)
    for n in ns:
        E, C, S = (np.stack([out[n, r][i] for r in range(runs)]) for i in range(3))
        for k in ks:
            e = E[:, k]
            result.results.append({
                "n": n, "k": k, "mean": float(e.mean()),
                "stderr": float(e.std(ddof=1) / math.sqrt(runs)) if runs > 1 else 0.0,
                "runs": runs, "cost_projections": float(C[:, k].mean()), "seconds": float(S[:, k].mean()),
            })
    return result


def parse_classes(text: str, classes: Iterable[object] | None) -> list[int]:
    """Label indices named by a comma list of class characters or label numbers."""
    out: list[int] = []
    names = list(classes) if classes is not None else []
    for tok in text.split(","):
        if not (tok := tok.strip()):
            continue
        if tok in names:
            out.append(names.index(tok))
        elif tok.lstrip("-").isdigit():
            out.append(int(tok))
        else:
            raise ConfigError(f"unknown class {tok!r} in task", expected="a class name or label",
                              found=tok, hint=f"classes are {names}")
    return out


def binary_task(images: npt.ArrayLike, labels: npt.ArrayLike, task: str, classes: Iterable[object] | None = None, *,
                scale: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Turn a labelled dataset into a binary problem.

    ``task`` is ``"AvB"`` (``A`` and ``B`` comma lists of classes, e.g. ``0v1``, ``0,2,4v1,3``), ``"A,B"`` (one class
    against another), ``"even-odd"`` or ``"Avrest"`` (a set against its complement).  Returns ``X`` (``M x D`` float32:
    the images of the selected classes flattened, scaled to [0, 1] when ``scale``) and ``y`` (1 for the second group, 0
    for the first).

    >>> X, y = binary_task(np.zeros((4, 2, 2), np.uint8), np.array([0, 1, 2, 3]), "even-odd")
    >>> y.tolist()
    [0, 1, 0, 1]
    """
    labels = np.asarray(labels)
    t = task.strip()
    if t == "even-odd":
        a = [c for c in np.unique(labels) if c % 2 == 0]
        b = [c for c in np.unique(labels) if c % 2 == 1]
    elif "v" in t:
        left, right = t.split("v", 1)
        a = parse_classes(left, classes)
        b = (sorted(set(np.unique(labels).tolist()) - set(a)) if right == "rest" else parse_classes(right, classes))
    elif "," in t:
        a, b = [[x] for x in parse_classes(t, classes)][:2]
        if len(parse_classes(t, classes)) != 2:
            raise ConfigError("a class-pair task names two classes", expected="A,B", found=t)
    else:
        raise ConfigError("unknown TARP task", expected="AvB, A,B, Avrest or even-odd", found=t)
    if set(a) & set(b):
        raise ConfigError("TARP task groups overlap", expected="disjoint class groups", found=t)
    ma, mb = np.isin(labels, a), np.isin(labels, b)
    if not ma.any() or not mb.any():
        raise ConfigError("TARP task selects an empty class group", expected="samples in both groups",
                          found=f"{int(ma.sum())} and {int(mb.sum())} samples", hint=f"task {t!r}")
    keep = ma | mb
    X = np.asarray(images)[keep].reshape(int(keep.sum()), -1).astype(np.float32)
    if scale:
        X /= 255.0
    y = mb[keep].astype(np.int64)
    return X, y


def region_of(error: float, cost: float, result: TarpResult, n: int | None = None) -> str:
    """Where a classifier (error, cost) falls on the benchmark plane.

    * ``negative gain``: above the TARP curve (TARP does as well for that cost);
    * ``computational gain``: below the curve, but TARP reaches that error at a
      higher cost (error at or above the asymptote);
    * ``structural gain``: below the asymptote, an error random projections do
      not reach at any depth measured.
    """
    check_point("", error, cost)
    asym = result.asymptote()
    if error < asym:
        return "structural gain"
    curves = [result.curve(m) for m in ({r["n"] for r in result.results} if n is None else [n])]
    best_at_cost = []
    for c in curves:
        xs = np.array([r["cost_projections"] for r in c])
        ys = np.array([r["mean"] for r in c])
        order = np.argsort(xs)
        best_at_cost.append(float(np.interp(cost, xs[order], ys[order])))
    return "computational gain" if error < min(best_at_cost) else "negative gain"


def plot_benchmark(result: TarpResult, path: StrPath, points: Iterable[tuple[str, float, float]] = ()) -> StrPath:
    """Draw the benchmark plane (needs the ``[plot]`` extra: matplotlib).

    ``points`` are ``(name, error, cost)`` of user classifiers, placed and labelled with their region.
    """
    plt = pyplot("the TARP plot")
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    for n in sorted({r["n"] for r in result.results}):
        c = [r for r in result.curve(n) if r["cost_projections"] > 0]  # k = 0 costs nothing
        ax.plot([r["cost_projections"] for r in c], [r["mean"] for r in c], "o-", label=f"n={n}")
    ax.axhline(result.asymptote(), color="grey", ls="--", lw=1, label="asymptote")
    ax.axhline(result.b0, color="black", ls=":", lw=1, label="B0")
    for name, err, cost in points:
        ax.plot([cost], [err], "k*", ms=10)
        ax.annotate(f"{name} ({region_of(err, cost, result)})", (cost, err),
                    textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("cost (scalar projections per run)")
    ax.set_ylabel("test error")
    ax.set_title(f"TARP benchmark: {result.task} ({result.n_samples} samples)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_file(path, "wb") as f:
        fig.savefig(f, format="png")
    plt.close(fig)
    return path


__all__ = ["tarp_bounds", "binary_task", "gaussian_thresholds", "best_split", "run_tree",
           "TarpResult", "region_of", "plot_benchmark", "check_point", "tarp_memory"]
