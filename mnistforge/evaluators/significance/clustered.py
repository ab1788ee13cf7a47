"""When test rows are not independent draws (``docs/significance.md``): the cluster-robust (CR1)
Wald interval of the mean of per-row values (error indicators, paired differences) with its design
effect, per-stratum tables, and the hierarchical bootstrap over runs x rows (x clusters)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError, FormatError, PathArg
from ...io.workers import parallel_tasks
from ..errorlists import read_text, regular_input
from .bootstrap import Bootstrap, Seed, _check_resamples, _summarise, pair_seed, probability_of_improvement
from .intervals import _as_wrong, z_two_sided


@dataclass(frozen=True)
class Clustered:
    """The mean of ``n`` per-row values in ``clusters`` groups (``by``): ``se`` the CR1 standard
    error, ``naive_se`` the one of independent rows, ``design_effect`` ``(se / naive_se)**2``
    (None when both are 0), intervals ``mean +/- z*se`` (and ``z*naive_se``) clipped to [0, 1]
    for rates, [-1, 1] for differences (signed integers or negative values)."""

    by: str
    clusters: int
    n: int
    mean: float
    se: float
    interval: tuple[float, float]
    design_effect: float | None
    naive_se: float
    naive_interval: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _codes(groups: npt.ArrayLike, n: int) -> tuple[np.ndarray, int]:
    g = np.asarray(groups)
    if g.shape != (n,):
        raise ConfigError("groups do not match the test rows", expected=f"one group id for each of the "
                          f"{n} rows", found=f"shape {g.shape}")
    _, codes = np.unique(g, return_inverse=True)
    return codes.ravel(), int(codes.max(initial=-1)) + 1


def read_groups(path: PathArg, n: int) -> np.ndarray:
    """The group of each of ``n`` test rows from ``path``: a 1-D ``.npy``, or text with one id a line
    (``.csv``; a header line above ``n`` ids is skipped)."""
    what = f"{n} group ids, one per test row (.npy or .csv)"
    if str(path).endswith(".npy"):
        try:
            g: np.ndarray = np.load(regular_input(path, what), allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise FormatError("cannot read the groups", path=path, expected=what, found=str(e)) from None
    else:
        lines = [x.strip() for x in read_text(path, what).splitlines() if x.strip()]
        g = np.array(lines[1:] if len(lines) == n + 1 else lines)
    if g.shape != (n,):
        raise FormatError("the groups do not match the test rows", path=path, expected=what,
                          found=f"shape {g.shape}")
    return g


def clustered_mean(values: npt.ArrayLike, groups: npt.ArrayLike, confidence: float = 0.95,
                   by: str = "groups") -> Clustered:
    """CR1 (``statsmodels`` OLS on a constant, ``cov_type="cluster"``): ``se**2 = G/(G-1) *
    sum_g (sum_{i in g} (x_i - mean))**2 / n**2`` over ``G`` clusters.

    >>> c = clustered_mean([1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 2, 2])
    >>> c.clusters, round(c.se, 4), round(c.design_effect, 2)
    (3, 0.3333, 3.0)
    """
    v = np.asarray(values)
    x = v.astype(float)
    codes, k = _codes(groups, x.size)
    if k < 2:
        raise ConfigError("a clustered standard error needs two clusters at least", found=f"{k} cluster")
    m = float(x.mean())
    s, e = np.bincount(codes, weights=x - m, minlength=k), x - m
    se, naive = math.sqrt(k / (k - 1) * float(s @ s)) / x.size, math.sqrt(float(e @ e)) / x.size
    z, lo = z_two_sided(confidence), (-1.0 if np.issubdtype(v.dtype, np.signedinteger) or x.min() < 0 else 0.0)
    return Clustered(by, k, x.size, m, se, (max(lo, m - z * se), min(1.0, m + z * se)),
                     se ** 2 / naive ** 2 if naive else None, naive,
                     (max(lo, m - z * naive), min(1.0, m + z * naive)))


def clustered_gap(values: npt.ArrayLike, first: npt.ArrayLike, groups: npt.ArrayLike, confidence: float = 0.95,
                  by: str = "groups") -> Clustered:
    """The mean of the ``first`` rows minus that of the others when clusters span both parts (QMNIST's
    test10k and test50k share writers): CR1 of the gap's coefficient in ``statsmodels`` OLS on a
    constant and ``first`` (``cov_type="cluster"``), ``se**2 = G/(G-1) (N-1)/(N-2) sum_g (sum_{i in g}
    c_i u_i)**2`` with ``c_i`` 1/n1 or -1/n2 and ``u_i`` the row's value less its part's mean; the
    naive SE is that of two independent means.

    >>> c = clustered_gap([1, 0, 1, 0], [True, True, False, False], [0, 1, 0, 1])
    >>> c.mean, c.se, c.clusters
    (0.0, 0.0, 2)
    """
    x, f = np.asarray(values, float), np.asarray(first, bool)
    codes, k = _codes(groups, x.size)
    n1, n = int(f.sum()), x.size
    if k < 2 or not 0 < n1 < n:
        raise ConfigError("a clustered gap needs two clusters and rows on both sides",
                          found=f"{k} clusters, {n1} of {n} rows first")
    m1, m2 = float(x[f].mean()), float(x[~f].mean())
    cu = np.where(f, (x - m1) / n1, -(x - m2) / (n - n1))
    s = np.bincount(codes, weights=cu, minlength=k)
    se = math.sqrt(k / (k - 1) * (n - 1) / (n - 2) * float(s @ s))
    naive, gap, z = math.sqrt(float(cu @ cu)), m1 - m2, z_two_sided(confidence)
    return Clustered(by, k, n, gap, se, (gap - z * se, gap + z * se), se ** 2 / naive ** 2 if naive else None,
                     naive, (gap - z * naive, gap + z * naive))


def by_stratum(values: npt.ArrayLike, strata: npt.ArrayLike, groups: npt.ArrayLike | None = None,
               confidence: float = 0.95, by: str = "groups") -> dict[str, Clustered]:
    """:func:`clustered_mean` within each stratum (name -> result, strata in sorted order); without
    ``groups`` (or in a stratum of one cluster) each row is its own cluster.

    >>> r = by_stratum([1, 0, 0, 0], ["hsf_4", "hsf_4", "hsf_0", "hsf_0"])
    >>> {k: v.mean for k, v in r.items()}
    {'hsf_0': 0.0, 'hsf_4': 0.5}
    """
    x, s = np.asarray(values), np.asarray(strata)
    g = np.arange(x.size) if groups is None else np.asarray(groups)
    _codes(s, x.size)
    one = {k: np.unique(g[s == k]).size < 2 for k in np.unique(s).tolist()}
    return {str(k): clustered_mean(x[s == k], np.arange(np.sum(s == k)) if o else g[s == k], confidence,
                                   "rows" if o else by) for k, o in one.items()}


def clustered_table(wrong: Mapping[str, npt.ArrayLike], groups: npt.ArrayLike, strata: npt.ArrayLike | None = None,
                    by: str = "groups", resamples: int = 100_000, seed: int = 0,
                    confidence: float = 0.95, workers: int | None = None
                    ) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """``({name: clustered}, {(a, b): clustered of a - b})`` for the systems and their ordered pairs:
    :meth:`Clustered.to_dict` with ``strata`` where ``strata`` are given, and a pair's ``poi_a_better``
    from :func:`hierarchical_poi` drawn in name order (one joblib task per pair: ``workers`` as in
    :func:`.compare_systems`)."""
    def one(x: np.ndarray) -> dict[str, Any]:
        d = clustered_mean(x, groups, confidence, by).to_dict()
        if strata is not None:
            d["strata"] = {k: v.to_dict() for k, v in by_stratum(x, strata, groups, confidence, by).items()}
        return d

    w = {k: _as_wrong(v, k) for k, v in wrong.items()}
    names, pairs = list(w), {}
    todo = [(a, b, *sorted((a, b))) for i, a in enumerate(names) for b in names[i + 1:]]
    boots = parallel_tasks(hierarchical_poi, [(w[x], w[y], groups, resamples, pair_seed(seed, x, y), confidence)
                                              for _, _, x, y in todo], "bootstrapping the clustered pairs", workers)
    for (a, b, x, _), bs in zip(todo, boots):
        d = w[a].astype(np.int8) - w[b].astype(np.int8)
        pairs[a, b] = {**one(d), "poi_a_better": bs.poi if x == a else 1.0 - bs.poi}
        pairs[b, a] = {**one(-d), "poi_a_better": 1.0 - pairs[a, b]["poi_a_better"]}
    return {k: one(v) for k, v in w.items()}, pairs


def _runs(runs: npt.ArrayLike | Sequence[npt.ArrayLike], name: str) -> np.ndarray:
    """Runs x rows, sorted: the result must not depend on the order the runs are given in."""
    if not (isinstance(runs, (list, tuple)) and runs and np.ndim(runs[0]) == 1):
        runs = np.atleast_2d(np.asarray(runs))  # a 1-D vector: one run
    vs = [_as_wrong(v, name) for v in runs]
    if len({v.size for v in vs}) != 1 or not vs[0].size:
        raise ConfigError(f"the runs of the {name} system differ in length or are empty", expected="one "
                          "wrong-vector per run, all on the same test rows", found=[v.size for v in vs] or "no run")
    r = np.stack(vs)
    return r[np.lexsort(r.T[::-1])]


def hierarchical_poi(runs_a: npt.ArrayLike | Sequence[npt.ArrayLike], runs_b: npt.ArrayLike | Sequence[npt.ArrayLike],
                     groups: npt.ArrayLike | None = None, resamples: int = 100_000, seed: Seed = 0,
                     confidence: float = 0.95, batch_elements: int = 1 << 24) -> Bootstrap:
    """Bootstrap POI of A over B resampling clusters (``groups``; without them rows) and, in each
    resample, each system's runs (wrong-vectors of several training seeds; a 1-D vector is one run).
    Clusters with the same errors in every run are drawn as one category of a multinomial draw, so
    with one run each and no groups this is :func:`.probability_of_improvement` (same seed, same
    result); the difference is in errors, the runs' mean.

    >>> a = np.zeros(1000, bool); a[:10] = True
    >>> hierarchical_poi([a, a], [a], groups=np.arange(1000) // 10, resamples=1000).poi
    0.5
    """
    a, b, resamples = _runs(runs_a, "first"), _runs(runs_b, "second"), _check_resamples(resamples)
    if a.shape[1] != b.shape[1]:
        raise ConfigError("systems were not run on the same test set", expected="runs of equal length",
                          found=f"{a.shape[1]} and {b.shape[1]} rows")
    if len(a) == len(b) == 1 and groups is None:
        return probability_of_improvement(a[0], b[0], resamples, seed, confidence)
    codes, k = (np.arange(a.shape[1]), a.shape[1]) if groups is None else _codes(groups, a.shape[1])
    per = np.stack([np.bincount(codes, weights=r, minlength=k) for r in np.vstack([a, b])], axis=1)
    pat, count = np.unique(per, axis=0, return_counts=True)
    pat, count = pat[::-1], count[::-1]  # one run each: only A wrong, only B wrong, the rest
    zero = (pat == pat[:, :1]).all(axis=1)  # the same errors in every run: no difference ever
    pat, p = pat[~zero], np.append(count[~zero], count[zero].sum()) / k
    rng, out = np.random.default_rng(seed), np.empty(resamples)
    rows = max(1, batch_elements // max(1, len(p) * max(len(a), len(b))))
    for start in range(0, resamples, rows):
        m = min(rows, resamples - start)
        c = rng.multinomial(k, p, size=m)[:, :-1]
        wa, wb = (np.ones((m, 1)) if len(r) == 1 else rng.multinomial(len(r), np.full(len(r), 1 / len(r)), size=m)
                  for r in (a, b))
        out[start:start + m] = (c * (wa @ pat[:, :len(a)].T / len(a) - wb @ pat[:, len(a):].T / len(b))).sum(axis=1)
    return _summarise(out, resamples, confidence)


@dataclass(frozen=True)
class RunSpread:
    """Several runs per system: mean error rates, the between-run standard deviation of each
    (``spread``, 0 for one run), the share of the variance of ``diff`` that is between runs, the
    runs per system that would make ``diff`` significant at ``confidence`` (None: no number would,
    the test set is too small) and the hierarchical bootstrap."""

    runs: tuple[int, int]
    rates: tuple[float, float]
    spread: tuple[float, float]
    diff: float
    between_share: float
    runs_needed: int | None
    bootstrap: Bootstrap

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_spread(runs_a: npt.ArrayLike | Sequence[npt.ArrayLike], runs_b: npt.ArrayLike | Sequence[npt.ArrayLike],
               groups: npt.ArrayLike | None = None, resamples: int = 100_000, seed: Seed = 0,
               confidence: float = 0.95) -> RunSpread:
    """Between-run variance ``s_a**2/R_a + s_b**2/R_b`` beside the test-set variance of the runs'
    mean difference (clustered when ``groups``); runs needed ``R >= (s_a**2 + s_b**2) /
    ((diff/z)**2 - test variance)``.

    >>> a = np.zeros(1000, bool); a[:10] = True
    >>> run_spread([a, np.roll(a, 3)], [a], resamples=100).spread
    (0.0, 0.0)
    """
    a, b = _runs(runs_a, "first"), _runs(runs_b, "second")
    boot = hierarchical_poi(a, b, groups, resamples, seed, confidence)
    ra, rb = a.mean(axis=1), b.mean(axis=1)
    sa, sb = (float(r.std(ddof=1)) if len(r) > 1 else 0.0 for r in (ra, rb))
    d = a.mean(axis=0) - b.mean(axis=0)
    within = clustered_mean(d, np.arange(d.size) if groups is None else groups, confidence).se ** 2
    between, diff, z = sa ** 2 / len(a) + sb ** 2 / len(b), float(ra.mean() - rb.mean()), z_two_sided(confidence)
    room = (diff / z) ** 2 - within
    need = None if room <= 0 else max(1, math.ceil((sa ** 2 + sb ** 2) / room))
    return RunSpread((len(a), len(b)), (float(ra.mean()), float(rb.mean())), (sa, sb), diff,
                     between / (between + within) if between + within else 0.0, need, boot)


def runs_table(systems: Sequence[tuple[str, Sequence[str], Sequence[np.ndarray]]], groups: npt.ArrayLike | None = None,
               resamples: int = 100_000, seed: int = 0, confidence: float = 0.95, workers: int | None = None
               ) -> dict[str, Any]:
    """Several runs per system, ``(name, run names, wrong-vectors)`` each: ``systems`` (each one's runs
    and rates) and ``pairs`` (:func:`run_spread` of each unordered pair, in order, as joblib tasks)."""
    todo = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
    spreads = parallel_tasks(run_spread, [(a[2], b[2], groups, resamples, pair_seed(seed, a[0], b[0]), confidence)
                                          for a, b in todo], "bootstrapping the runs", workers)
    return {"systems": [{"name": nm, "runs": list(rn), "rates": [float(np.mean(w)) for w in ws]}
                        for nm, rn, ws in systems],
            "pairs": [{"a": a[0], "b": b[0], **rs.to_dict()} for (a, b), rs in zip(todo, spreads)]}
