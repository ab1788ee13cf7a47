"""How much a difference between classifiers on one shared test set really means.

Three complementary views (``docs/significance.md`` explains when each is right):

* **absolute intervals** for one error rate: Wald (normal approximation) and the
  exact Clopper-Pearson interval (:func:`wald_interval`, :func:`exact_interval`);
* **paired tests** on the samples where two systems disagree (Yadav & Bottou 2019:
  :func:`paired_worse`, :func:`max_bonferroni_k`; exact McNemar: :func:`mcnemar_exact`);
* the **bootstrap probability of improvement** (Bisani & Ney 2004:
  :func:`probability_of_improvement`), computed from the four joint-outcome counts by a
  multinomial draw (O(B)), with :func:`probability_of_improvement_resampled` as the
  reference implementation that resamples whole index vectors (O(B*n)).

Everything works from per-sample "wrong" vectors (boolean, ``True`` where the system
errs); :func:`wrong_from_predictions` turns predictions + labels into one.  Tables for
many systems (:func:`compare_systems`), error overlaps (:func:`error_overlap`) and
combinations (:func:`majority_vote`, :func:`plurality_vote`) build on these.

Conventions: ``eta = 1 - confidence``; the two-sided normal quantile is
``z = sqrt(2) * erfcinv(eta)`` (1.96 at 95 %), the one-sided one
``z = sqrt(2) * erfcinv(2 * eta)`` (1.645 at 95 %).  ``n12`` counts samples only the
first system gets wrong, ``n21`` samples only the second gets wrong.

Why this module is long: it is one chain of definitions from the spec (quantiles ->
intervals -> joint counts -> paired tests -> bootstrap -> tables of many systems), each
step a few functions that the next one calls with the same conventions; about half of
its lines are docstrings with worked examples that run as tests.  Split apart, every
piece would import every other.
"""
from __future__ import annotations

import decimal
import logging
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from ..io.atomic import atomic_file
from ..io.types import StrPath
from ..loaders import load, resolve_target
from ..loaders.names import parse_split, rows_of
from ..plotting import pyplot
from ..errors import ConfigError, DownloadError, MissingFileError, TestSetMismatchError
from ..registry import get_dataset

logger = logging.getLogger(__name__)

__all__ = [
    "z_two_sided", "z_one_sided", "wald_interval", "exact_interval", "ErrorRate", "error_rate",
    "wrong_from_predictions", "JointCounts", "joint_counts", "paired_worse", "max_bonferroni_k",
    "mcnemar_exact", "PairedTest", "paired_test", "Bootstrap", "probability_of_improvement",
    "probability_of_improvement_from_counts", "probability_of_improvement_resampled",
    "Comparison", "compare_systems", "error_overlap", "majority_vote", "plurality_vote",
    "plot_poi", "check_test_set", "format_k", "MAX_K", "MAX_COUNT",
]


# --------------------------------------------------------------------------- quantiles

def _eta(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ConfigError("confidence out of range", expected="a number strictly between 0 and 1 "
                          "(e.g. 0.95)", found=confidence)
    return 1.0 - confidence


def z_two_sided(confidence: float = 0.95) -> float:
    """Two-sided normal quantile ``sqrt(2) * erfcinv(eta)``, ``eta = 1 - confidence``.

    Examples
    --------
    >>> round(z_two_sided(0.95), 4)
    1.96
    """
    return math.sqrt(2.0) * float(special.erfcinv(_eta(confidence)))


def z_one_sided(confidence: float = 0.95) -> float:
    """One-sided normal quantile ``sqrt(2) * erfcinv(2 * eta)``.

    Examples
    --------
    >>> round(z_one_sided(0.95), 4)
    1.6449
    """
    return math.sqrt(2.0) * float(special.erfcinv(2.0 * _eta(confidence)))


# --------------------------------------------------------------------------- one system
#: largest count (errors, samples, disagreements, comparisons) accepted: beyond any test set, and
#: where floats stop holding integers exactly
MAX_COUNT = 2**53
#: largest Bonferroni ``K`` reported: any larger one says the same (no correction undoes the
#: verdict), and Python refuses to print an integer of more than 4,300 digits
MAX_K = 10**1000


def _count(value: Any, what: str) -> int:
    """``value`` as a count in ``0..MAX_COUNT``, or a :class:`ConfigError` naming it."""
    try:
        v = int(value)
    except (TypeError, ValueError, OverflowError):   # None, "x", inf, nan
        v = -1
    if not 0 <= v <= MAX_COUNT or (isinstance(value, float) and value != v):
        raise ConfigError(f"invalid {what}", expected=f"a whole number in 0..{MAX_COUNT:,}",
                          found=repr(value))
    return v


def format_k(k: int) -> str:
    """A Bonferroni ``K`` as shown: whole below a million, else its magnitude.

    >>> format_k(63), format_k(10**200), format_k(MAX_K)
    ('63', '1e+200', '>= 1e1000')
    """
    return str(k) if k < 10**6 else f"{float(k):.2g}" if k < 10**300 else (
        ">= 1e1000" if k >= MAX_K else f"~1e{len(str(k)) - 1}")


def _check_count(errors: Any, n: Any) -> tuple[int, int]:
    errors, n = _count(errors, "error count"), _count(n, "test-set size")
    if n <= 0 or not 0 <= errors <= n:
        raise ConfigError("invalid error count", expected="0 <= errors <= n and n > 0",
                          found=f"errors={errors}, n={n}")
    return errors, n


def wald_interval(errors: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wald interval ``p +/- z*sqrt(p(1-p)/n)`` of an error rate, clipped to [0, 1].

    Unreliable near 0 errors (it collapses to a point at 0); see :func:`exact_interval`.

    Examples
    --------
    >>> lo, hi = wald_interval(100, 10000)
    >>> round(lo, 5), round(hi, 5)
    (0.00805, 0.01195)
    """
    errors, n = _check_count(errors, n)
    p = errors / n
    h = z_two_sided(confidence) * math.sqrt(p * (1.0 - p) / n)
    return max(0.0, p - h), min(1.0, p + h)


def exact_interval(errors: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of an error rate from beta quantiles.

    Examples
    --------
    >>> lo, hi = exact_interval(0, 10000)
    >>> lo, round(hi, 6)
    (0.0, 0.000369)
    """
    errors, n = _check_count(errors, n)
    a = _eta(confidence) / 2.0
    lo = 0.0 if errors == 0 else float(stats.beta.ppf(a, errors, n - errors + 1))
    hi = 1.0 if errors == n else float(stats.beta.ppf(1.0 - a, errors + 1, n - errors))
    return lo, hi


@dataclass(frozen=True)
class ErrorRate:
    """Error count and rate of one system, with Wald and exact intervals."""

    errors: int
    n: int
    confidence: float
    rate: float
    wald: tuple[float, float]
    exact: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["wald"], d["exact"] = list(self.wald), list(self.exact)
        return d

    def __str__(self) -> str:
        c = round(self.confidence * 100, 2)
        return (f"{self.errors}/{self.n} = {100 * self.rate:.2f} % "
                f"(Wald {c:g} %: {100 * self.wald[0]:.2f}-{100 * self.wald[1]:.2f} %, "
                f"exact: {100 * self.exact[0]:.2f}-{100 * self.exact[1]:.2f} %)")


def error_rate(wrong_or_errors: npt.ArrayLike, n: int | None = None, confidence: float = 0.95) -> ErrorRate:
    """Summarise one system from its wrong-vector, or from ``errors`` and ``n``.

    Examples
    --------
    >>> r = error_rate(np.array([True, False, False, False]))
    >>> r.errors, r.n, r.rate
    (1, 4, 0.25)
    """
    errors: npt.ArrayLike   # a count (checked below)
    if n is None:
        wrong = _as_wrong(wrong_or_errors)
        errors, n = int(wrong.sum()), wrong.size
    else:
        errors = wrong_or_errors
    errors, n = _check_count(errors, n)
    return ErrorRate(errors, n, float(confidence), errors / n,
                     wald_interval(errors, n, confidence), exact_interval(errors, n, confidence))


def _as_wrong(wrong: npt.ArrayLike, name: str = "wrong") -> np.ndarray:
    w = np.asarray(wrong)
    if w.ndim != 1:
        raise ConfigError(f"{name} vector has the wrong shape", expected="a 1-D vector (one "
                          "entry per test sample)", found=f"shape {w.shape}")
    if w.dtype != bool:
        if w.size and not np.isin(w, (0, 1)).all():
            raise ConfigError(f"{name} vector is not boolean", expected="True/False or 0/1 "
                              "(True where the system errs)", found=f"values of dtype {w.dtype}")
        w = w.astype(bool)
    return w


def wrong_from_predictions(predictions: npt.ArrayLike, labels: npt.ArrayLike) -> np.ndarray:
    """Boolean vector, ``True`` where ``predictions != labels``.

    Examples
    --------
    >>> wrong_from_predictions([1, 2, 3], [1, 0, 3])
    array([False,  True, False])
    """
    p, y = np.asarray(predictions), np.asarray(labels)
    if p.shape != y.shape or p.ndim != 1:
        raise ConfigError("predictions and labels do not match", expected="two 1-D vectors of "
                          "the same length", found=f"shapes {p.shape} and {y.shape}")
    wrong: np.ndarray = p != y
    return wrong


# --------------------------------------------------------------------------- paired tests
@dataclass(frozen=True)
class JointCounts:
    """The four joint outcomes of two systems on the same samples.

    ``n12`` (only the first wrong) and ``n21`` (only the second wrong) carry all the
    information a paired comparison uses.
    """

    both_right: int
    n12: int
    n21: int
    both_wrong: int

    @property
    def n(self) -> int:
        return self.both_right + self.n12 + self.n21 + self.both_wrong

    @property
    def errors_a(self) -> int:
        return self.n12 + self.both_wrong

    @property
    def errors_b(self) -> int:
        return self.n21 + self.both_wrong


def joint_counts(wrong_a: npt.ArrayLike, wrong_b: npt.ArrayLike) -> JointCounts:
    """Count both-right, only-A-wrong (``n12``), only-B-wrong (``n21``), both-wrong.

    Examples
    --------
    >>> joint_counts([1, 1, 0, 0, 0], [1, 0, 1, 0, 0])
    JointCounts(both_right=2, n12=1, n21=1, both_wrong=1)
    """
    a, b = _as_wrong(wrong_a, "first"), _as_wrong(wrong_b, "second")
    if a.shape != b.shape:
        raise ConfigError("systems were not run on the same test set", expected="wrong-vectors "
                          "of equal length", found=f"{a.size} and {b.size} samples")
    both = int(np.count_nonzero(a & b))
    n12 = int(np.count_nonzero(a)) - both
    n21 = int(np.count_nonzero(b)) - both
    return JointCounts(a.size - both - n12 - n21, n12, n21, both)


def paired_worse(n12: int, n21: int, confidence: float = 0.95, k: int = 1) -> bool:
    """Yadav-Bottou test: is system 1 worse than system 2 at ``confidence``?

    True when ``n12 - n21 >= z * sqrt(n12 + n21)`` with the one-sided ``z`` for
    ``eta / k`` (Bonferroni correction for ``k`` simultaneous comparisons).  With no
    disagreement at all (``n12 = n21 = 0``) nothing can be concluded: False.

    Examples
    --------
    >>> paired_worse(30, 10), paired_worse(20, 12)
    (True, False)
    """
    n12, n21, k = _count(n12, "n12"), _count(n21, "n21"), _count(k, "number of comparisons")
    if k < 1:
        raise ConfigError("invalid number of comparisons", expected="k >= 1", found=k)
    if n12 <= n21:
        return False
    eta = _eta(confidence) / k
    z = math.sqrt(2.0) * float(special.erfcinv(2.0 * eta))
    return (n12 - n21) >= z * math.sqrt(n12 + n21)


def max_bonferroni_k(n12: int, n21: int, confidence: float = 0.95) -> int:
    """Largest ``K`` for which "system 1 is worse" survives a Bonferroni correction.

    The largest integer ``K`` with ``n12 - n21 >= z(eta/K) * sqrt(n12 + n21)``;
    0 when the conclusion does not hold even for ``K = 1``; at most :data:`MAX_K`.  Solved in closed form,
    ``K <= eta / Phi(-(n12 - n21) / sqrt(n12 + n21))``, then checked against
    :func:`paired_worse` at the boundary so both always agree.

    Examples
    --------
    >>> max_bonferroni_k(30, 10), max_bonferroni_k(20, 12)
    (63, 0)
    """
    n12, n21 = _count(n12, "n12"), _count(n21, "n21")
    eta = _eta(confidence)
    if n12 <= n21 or not paired_worse(n12, n21, confidence):
        return 0
    x = (n12 - n21) / math.sqrt(n12 + n21)
    log_k = math.log(eta) - float(special.log_ndtr(-x))
    if log_k >= math.log(MAX_K):   # (at most MAX_K: see there)
        return MAX_K
    if log_k > 700:  # beyond float range: report the (astronomical) bound from the logarithm
        return int(decimal.Decimal(log_k).exp().to_integral_value(decimal.ROUND_FLOOR))
    k = max(1, int(math.floor(math.exp(log_k))))
    if k < 2 ** 52:  # exact boundary with the test itself (float rounding at the edge)
        while paired_worse(n12, n21, confidence, k + 1):
            k += 1
        while k > 1 and not paired_worse(n12, n21, confidence, k):
            k -= 1
    return k


def mcnemar_exact(n12: int, n21: int, alternative: str = "two-sided") -> float:
    """Exact McNemar p-value: binomial test of ``n12`` out of ``n12 + n21`` at 1/2.

    ``alternative="greater"`` tests "system 1 is worse" one-sidedly.

    Examples
    --------
    >>> round(mcnemar_exact(10, 2), 4)
    0.0386
    """
    n12, n21 = _count(n12, "n12"), _count(n21, "n21")
    if n12 + n21 == 0:
        return 1.0
    return float(stats.binomtest(n12, n12 + n21, 0.5, alternative=alternative).pvalue)


@dataclass(frozen=True)
class PairedTest:
    """Paired comparison of system A against system B (A worse = positive difference)."""

    counts: JointCounts
    confidence: float
    a_worse: bool
    b_worse: bool
    max_bonferroni_k: int
    mcnemar_p: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["counts"] = asdict(self.counts)
        return d


def paired_test(wrong_a: npt.ArrayLike, wrong_b: npt.ArrayLike, confidence: float = 0.95) -> PairedTest:
    """Run the Yadav-Bottou and exact McNemar tests on two wrong-vectors.

    ``max_bonferroni_k`` refers to whichever conclusion holds (A worse or B worse);
    it is 0 when neither does.

    Examples
    --------
    >>> t = paired_test([1] * 30 + [0] * 10, [0] * 30 + [1] * 10)
    >>> t.a_worse, t.b_worse, t.max_bonferroni_k
    (True, False, 63)
    """
    c = joint_counts(wrong_a, wrong_b)
    a_worse = paired_worse(c.n12, c.n21, confidence)
    b_worse = paired_worse(c.n21, c.n12, confidence)
    k = max(max_bonferroni_k(c.n12, c.n21, confidence), max_bonferroni_k(c.n21, c.n12, confidence))
    return PairedTest(c, float(confidence), a_worse, b_worse, k, mcnemar_exact(c.n12, c.n21))


# --------------------------------------------------------------------------- bootstrap
@dataclass(frozen=True)
class Bootstrap:
    """Bootstrap probability that A makes fewer errors than B on a resampled test set.

    ``poi`` counts ties half; ``poi_strict`` counts only resamples where A makes strictly
    fewer errors (``poi = poi_strict + ties / 2``); ``ties`` is the fraction of resamples
    with equal errors; ``diff_interval`` is the percentile interval of
    ``errors_a - errors_b`` (counts).
    """

    poi: float
    ties: float
    resamples: int
    diff_interval: tuple[float, float]
    confidence: float
    poi_strict: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["diff_interval"] = list(self.diff_interval)
        return d


def _rng(seed: int | Sequence[int] | np.random.Generator) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _check_resamples(resamples: int) -> int:
    resamples = int(resamples)
    if resamples < 1:
        raise ConfigError("invalid number of bootstrap resamples", expected="B >= 1",
                          found=resamples)
    return resamples


def _summarise(da: np.ndarray, resamples: int, confidence: float) -> Bootstrap:
    # da = errors_a - errors_b per resample; A better when negative
    better = np.count_nonzero(da < 0)
    ties = np.count_nonzero(da == 0)
    a = _eta(confidence) / 2.0
    lo, hi = np.quantile(da, [a, 1.0 - a])
    return Bootstrap(float((better + 0.5 * ties) / resamples), float(ties / resamples), resamples,
                     (float(lo), float(hi)), float(confidence), float(better / resamples))


def probability_of_improvement_from_counts(counts: JointCounts, resamples: int = 100_000,
                                           seed: int | Sequence[int] | np.random.Generator = 0,
                                           confidence: float = 0.95) -> Bootstrap:
    """POI of A over B from the four joint-outcome counts by a multinomial draw.

    A paired resample of ``n`` samples is a multinomial draw over the four joint
    outcomes with probabilities ``count / n``; the difference in errors is
    ``only-A-wrong - only-B-wrong`` of that draw, so the cost is O(B), not O(B*n).

    Examples
    --------
    >>> c = JointCounts(both_right=9900, n12=20, n21=40, both_wrong=40)
    >>> round(probability_of_improvement_from_counts(c, 10_000, seed=0).poi, 2)
    0.99
    """
    resamples = _check_resamples(resamples)
    n = counts.n
    if n <= 0:
        raise ConfigError("empty test set", expected="at least one sample", found=n)
    rng = _rng(seed)
    # both-right and both-wrong merge: neither changes the difference
    p = np.array([counts.n12, counts.n21, counts.both_right + counts.both_wrong], float) / n
    draw = rng.multinomial(n, p, size=resamples)
    return _summarise(draw[:, 0] - draw[:, 1], resamples, confidence)


def probability_of_improvement(wrong_a: npt.ArrayLike, wrong_b: npt.ArrayLike, resamples: int = 100_000,
                               seed: int | Sequence[int] | np.random.Generator = 0,
                               confidence: float = 0.95) -> Bootstrap:
    """Bootstrap probability of improvement of A over B (paired, ties counted half).

    Parameters
    ----------
    wrong_a, wrong_b : array_like of bool
        ``True`` where each system errs, on the same test samples.
    resamples : int
        Number of bootstrap resamples ``B``.
    seed : int or numpy.random.Generator
        Seeds :func:`numpy.random.default_rng`; the same seed gives the same result.

    Examples
    --------
    >>> a = np.zeros(1000, bool); a[:10] = True
    >>> probability_of_improvement(a, a).poi
    0.5
    """
    return probability_of_improvement_from_counts(joint_counts(wrong_a, wrong_b), resamples,
                                                  seed, confidence)


def probability_of_improvement_resampled(wrong_a: npt.ArrayLike, wrong_b: npt.ArrayLike, resamples: int = 10_000,
                                         seed: int | Sequence[int] | np.random.Generator = 0,
                                         confidence: float = 0.95,
                                         batch_elements: int = 1 << 24) -> Bootstrap:
    """Reference implementation: resample whole index vectors (O(B*n)).

    Draws ``B`` vectors of ``n`` indices with replacement, the same for both systems,
    and counts errors on each.  Same distribution as
    :func:`probability_of_improvement`; kept to show the two agree (tests, benchmark).

    Examples
    --------
    >>> a = np.zeros(100, bool); a[:5] = True
    >>> probability_of_improvement_resampled(a, a, 100).poi
    0.5
    """
    a, b = _as_wrong(wrong_a, "first"), _as_wrong(wrong_b, "second")
    joint_counts(a, b)  # shape checks
    resamples = _check_resamples(resamples)
    rng = _rng(seed)
    n = a.size
    d = a.astype(np.int8) - b.astype(np.int8)  # +1 only A wrong, -1 only B wrong
    rows = max(1, batch_elements // max(n, 1))
    out = np.empty(resamples, np.int64)
    for start in range(0, resamples, rows):
        m = min(rows, resamples - start)
        idx = rng.integers(0, n, size=(m, n), dtype=np.int32 if n < 2 ** 31 else np.int64)
        out[start:start + m] = d[idx].sum(axis=1, dtype=np.int64)
    return _summarise(out, resamples, confidence)


# --------------------------------------------------------------------------- many systems
def _pair_seed(seed: int, a: str, b: str) -> list[int]:
    # Stable per unordered pair, so a pair's POI does not depend on the other systems listed.
    x, y = sorted((a, b))
    return [int(seed), zlib.crc32(x.encode()), zlib.crc32(y.encode())]


def _stack(wrong: Mapping[str, npt.ArrayLike] | Sequence[npt.ArrayLike]) -> tuple[list[str], np.ndarray]:
    if isinstance(wrong, dict):
        names = [str(k) for k in wrong]
        rows = [_as_wrong(v, k) for k, v in wrong.items()]
    else:
        rows = [_as_wrong(v) for v in wrong]
        names = [f"system{i + 1}" for i in range(len(rows))]
    if not rows:
        raise ConfigError("no systems given", expected="at least one wrong-vector", found=0)
    sizes = {r.size for r in rows}
    if len(sizes) != 1:
        raise ConfigError("systems were not run on the same test set",
                          expected="wrong-vectors of equal length",
                          found=", ".join(f"{n}: {r.size}" for n, r in zip(names, rows)))
    if len(set(names)) != len(names):
        raise ConfigError("duplicate system names", expected="distinct names", found=names)
    return names, np.stack(rows)


@dataclass
class Comparison:
    """Pairwise tables for a set of systems on one test set (see :func:`compare_systems`).

    Matrices are indexed ``[a, b]`` in the order of ``names``: ``n12[a, b]`` samples only
    ``a`` gets wrong, ``poi[a, b]`` probability that ``a`` beats ``b`` (ties half;
    ``poi_strict[a, b]`` without the ties), ``worse[a, b]``
    whether ``a`` is worse than ``b`` at ``confidence``, ``max_k[a, b]`` the largest
    Bonferroni ``K`` for that conclusion, ``mcnemar[a, b]`` the two-sided exact p-value.
    """

    names: list[str]
    n: int
    confidence: float
    resamples: int
    seed: int
    rates: list[ErrorRate]
    n12: np.ndarray
    poi: np.ndarray
    worse: np.ndarray
    worse95: np.ndarray
    max_k: np.ndarray
    mcnemar: np.ndarray
    ties: np.ndarray = field(repr=False)
    poi_strict: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)

    @property
    def errors(self) -> np.ndarray:
        return np.array([r.errors for r in self.rates])

    def pairs(self) -> list[dict[str, Any]]:
        """One dict per ordered pair ``(a, b)``, ``a != b`` (the JSON rows)."""
        out: list[dict[str, Any]] = []
        for i, a in enumerate(self.names):
            for j, b in enumerate(self.names):
                if i == j:
                    continue
                ea, eb = int(self.rates[i].errors), int(self.rates[j].errors)
                out.append({
                    "a": a, "b": b, "errors_a": ea, "errors_b": eb,
                    "n12": int(self.n12[i, j]), "n21": int(self.n12[j, i]),
                    "poi_a_better": float(self.poi[i, j]), "ties": float(self.ties[i, j]),
                    "poi_a_better_strict": float(self.poi_strict[i, j]),
                    "error_diff": (ea - eb) / self.n, "error_diff_count": ea - eb,
                    "paired_worse_at_95": bool(self.worse95[i, j]),
                    "paired_worse": bool(self.worse[i, j]),
                    "max_bonferroni_k": int(self.max_k[i, j]),
                    "mcnemar_p": float(self.mcnemar[i, j]),
                })
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n, "confidence": self.confidence, "bootstrap": self.resamples,
            "seed": self.seed, "ties": "counted half",
            "systems": [{"name": nm, **r.to_dict()} for nm, r in zip(self.names, self.rates)],
            "pairs": self.pairs(),
        }


def compare_systems(wrong: Mapping[str, npt.ArrayLike] | Sequence[npt.ArrayLike], resamples: int = 100_000,
                    seed: int = 0, confidence: float = 0.95) -> Comparison:
    """Pairwise POI, error differences and paired-test verdicts for many systems.

    Parameters
    ----------
    wrong : dict of name -> bool vector, or a sequence of bool vectors
        ``True`` where each system errs, all on the same test samples.
    resamples, seed, confidence
        Bootstrap size, seed (each unordered pair gets its own stream derived from the
        seed and both names, so ``poi[a, b] + poi[b, a] == 1`` exactly) and confidence.

    Examples
    --------
    >>> a = np.zeros(1000, bool); a[:30] = True
    >>> b = np.zeros(1000, bool); b[25:35] = True
    >>> c = compare_systems({"A": a, "B": b}, resamples=1000)
    >>> int(c.n12[0, 1]), int(c.n12[1, 0]), bool(c.worse[0, 1])
    (25, 5, True)
    """
    names, w = _stack(wrong)
    m, n = w.shape
    rates = [error_rate(w[i], confidence=confidence) for i in range(m)]
    wi = w.astype(np.int32)
    both = wi @ wi.T
    err = np.diag(both)
    n12 = err[:, None] - both
    poi = np.full((m, m), 0.5)
    strict = np.zeros((m, m))
    ties = np.ones((m, m))
    worse = np.zeros((m, m), bool)
    worse95 = np.zeros((m, m), bool)
    max_k = np.zeros((m, m), object)  # Python ints: K can exceed 64 bits
    mcn = np.ones((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            # draw in name order so the pair's result is independent of the listing order
            x, y = (i, j) if names[i] <= names[j] else (j, i)
            c = JointCounts(int(n - err[x] - err[y] + both[x, y]), int(n12[x, y]),
                            int(n12[y, x]), int(both[x, y]))
            bs = probability_of_improvement_from_counts(
                c, resamples, np.random.default_rng(_pair_seed(seed, names[x], names[y])),
                confidence)
            poi[x, y], poi[y, x] = bs.poi, 1.0 - bs.poi
            strict[x, y], strict[y, x] = bs.poi_strict, 1.0 - bs.poi_strict - bs.ties
            ties[i, j] = ties[j, i] = bs.ties
            for x, y in ((i, j), (j, i)):
                worse[x, y] = paired_worse(n12[x, y], n12[y, x], confidence)
                worse95[x, y] = paired_worse(n12[x, y], n12[y, x], 0.95)
                max_k[x, y] = max_bonferroni_k(n12[x, y], n12[y, x], confidence)
            mcn[i, j] = mcn[j, i] = mcnemar_exact(n12[i, j], n12[j, i])
    return Comparison(names, n, float(confidence), int(resamples), int(seed), rates,
                      n12, poi, worse, worse95, max_k, mcn, ties, strict)


def error_overlap(wrong: Mapping[str, npt.ArrayLike] | Sequence[npt.ArrayLike]) -> dict[str, Any]:
    """Which samples are wrong for all systems, for any, and only for each one.

    Returns a dict with 0-based index arrays ``common`` (wrong for all), ``union``
    (wrong for at least one), ``unique`` (name -> wrong only for that system) and
    ``histogram`` (``histogram[k]`` = samples wrong for exactly ``k`` systems).

    Examples
    --------
    >>> o = error_overlap({"A": [1, 1, 0, 0], "B": [1, 0, 1, 0]})
    >>> o["common"].tolist(), o["union"].tolist(), o["unique"]["A"].tolist()
    ([0], [0, 1, 2], [1])
    """
    names, w = _stack(wrong)
    k = w.sum(axis=0)
    return {
        "names": names,
        "common": np.flatnonzero(k == len(names)),
        "union": np.flatnonzero(k > 0),
        "unique": {nm: np.flatnonzero(w[i] & (k == 1)) for i, nm in enumerate(names)},
        "histogram": np.bincount(k, minlength=len(names) + 1),
    }


def majority_vote(wrong: Mapping[str, npt.ArrayLike] | Sequence[npt.ArrayLike],
                  tie_breaker: str | int | None = None) -> np.ndarray:
    """Combine correctness-only outputs by majority; a tie takes the tie-breaker's outcome.

    With only right/wrong known (as in published error lists) a sample counts as
    right for the combination when more than half of the systems are right; on an even
    split the ``tie_breaker`` system (name or position; by default the system with the
    fewest errors) decides.  Returns the combination's wrong-vector.

    Examples
    --------
    >>> majority_vote({"A": [1, 1, 0], "B": [1, 0, 1], "C": [0, 1, 1], "D": [0, 1, 0]}, "D")
    array([False,  True, False])
    """
    names, w = _stack(wrong)
    t = _index_of(names, tie_breaker, w)
    k = w.sum(axis=0)
    m = len(names)
    vote: np.ndarray = np.where(2 * k == m, w[t], 2 * k > m)
    return vote


def _index_of(names: list[str], who: str | int | None, w: np.ndarray) -> int:
    if who is None:
        return int(np.argmin(w.sum(axis=1)))
    if isinstance(who, (int, np.integer)) and not isinstance(who, bool):
        if not 0 <= who < len(names):
            raise ConfigError("tie-breaker out of range", expected=f"0..{len(names) - 1}",
                              found=who)
        return int(who)
    if who not in names:
        raise ConfigError("unknown tie-breaker system", expected="one of " + ", ".join(names),
                          found=who)
    return names.index(who)


def plurality_vote(predictions: Mapping[str, npt.ArrayLike] | npt.ArrayLike, tie_breaker: str | int | None = None,
                   names: Iterable[str] | None = None) -> np.ndarray:
    """Combine predicted labels by plurality; ties go to the tie-breaker's label.

    ``predictions`` is ``systems x n`` (or a dict name -> labels).  When the most voted
    labels tie, the tie-breaker's label wins if it is among them; otherwise the first
    system (in order) whose label is among them decides.

    Examples
    --------
    >>> plurality_vote([[1, 2, 3], [1, 4, 5], [7, 4, 6]], tie_breaker=2).tolist()
    [1, 4, 6]
    """
    if isinstance(predictions, dict):
        names = list(predictions)
        p = np.stack([np.asarray(v) for v in predictions.values()])
    else:
        p = np.asarray(predictions)
        names = list(names) if names is not None else [f"system{i + 1}" for i in range(len(p))]
    if p.ndim != 2 or p.shape[0] < 1:
        raise ConfigError("predictions have the wrong shape", expected="systems x samples",
                          found=f"shape {p.shape}")
    m, n = p.shape
    if tie_breaker is None:
        t = 0
    else:
        t = _index_of(names, tie_breaker, np.zeros((m, 1)))
    classes, codes = np.unique(p, return_inverse=True)
    codes = codes.reshape(m, n)
    c = len(classes)
    votes = np.zeros((n, c), np.int32)
    cols = np.arange(n)
    for s in range(m):
        np.add.at(votes, (cols, codes[s]), 1)
    top = votes == votes.max(axis=1, keepdims=True)
    chosen = np.full(n, -1)
    for s in [t] + [s for s in range(m) if s != t]:
        pick = (chosen < 0) & top[cols, codes[s]]
        chosen[pick] = codes[s][pick]
    labels: np.ndarray = classes[chosen]
    return labels


def check_test_set(test: str, n: int, labels: npt.ArrayLike | None = None, *,
                   cache: StrPath | None = None) -> None:
    """Refuse a test set ``test`` (``NAME[:SPLIT]`` or a folder) that is not the one the systems'
    ``n`` outcomes (and, from prediction files, ``labels``) were made on.

    The size comes from the registry (a slice included) or from the loaded split; the labels
    are compared when the split can be had without the network (a registry split not in the
    cache: the size alone is checked, and the log says so).  Raises
    :class:`~mnistforge.errors.TestSetMismatchError` naming both sides.
    """
    name, split, root = resolve_target(test, default_split="test")
    count = None
    if root is None:
        base, rows = parse_split(split)
        count = get_dataset(name).split(base).count
        if rows and count:
            sl = rows_of(rows, count)
            count = sl.stop - sl.start
    if count is not None and count != n:   # no load needed to see it
        raise TestSetMismatchError(f"--test-set {test} does not match the predictions",
                                   expected=f"{n} samples (what the systems were scored on)",
                                   found=f"{count} samples in {name}:{split}",
                                   hint="give the test set the systems were run on (a slice such "
                                        f"as {name}:test[:{n}] for a part of it)")
    if labels is None and count is not None:
        return
    try:
        ds = load(name, split, root=root, download=False, cache=cache)
    except (MissingFileError, DownloadError) as e:
        if count is None:
            raise
        logger.info("--test-set %s: labels not compared (%s)", test, e)
        return
    if len(ds) != n:
        raise TestSetMismatchError(f"--test-set {test} does not match the predictions",
                                   expected=f"{n} samples (what the systems were scored on)",
                                   found=f"{len(ds)} samples in {ds.source or test}",
                                   hint="give the test set the systems were run on")
    if labels is not None:
        y = np.asarray(labels).ravel()
        diff = np.flatnonzero(np.asarray(ds.labels) != y)
        if diff.size:
            i = int(diff[0])
            raise TestSetMismatchError(
                f"--test-set {test} does not match the predictions' labels",
                expected=f"the {n} labels of the prediction files",
                found=f"{diff.size} rows differ (first row {i}: file {y[i]}, test set "
                      f"{int(ds.labels[i])})",
                hint="give the test set the systems were run on, or leave --test-set out")


def plot_poi(comparison: Comparison, path: StrPath, title: str | None = None) -> None:
    """Draw the POI matrix as a heat map (needs matplotlib, the ``[plot]`` extra).

    Rows beat columns with the probability shown; the diagonal is 0.5 by definition.
    """
    plt = pyplot("the POI heat map (or drop --plot)")

    names, poi = comparison.names, comparison.poi
    m = len(names)
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * m, 1.0 + 0.8 * m))
    im = ax.imshow(poi, vmin=0, vmax=1, cmap="RdBu")
    ax.set_xticks(range(m), names, rotation=45, ha="right")
    ax.set_yticks(range(m), names)
    for i in range(m):
        for j in range(m):
            ax.text(j, i, f"{poi[i, j]:.2f}", ha="center", va="center",
                    color="white" if abs(poi[i, j] - 0.5) > 0.35 else "black", fontsize=8)
    ax.set_xlabel("column system")
    ax.set_ylabel("row system")
    ax.set_title(title or f"P(row beats column), B={comparison.resamples}")
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    suffix = str(path).rsplit(".", 1)[-1] if "." in str(path) else "png"
    with atomic_file(path, "wb") as f:
        fig.savefig(f, format=suffix, dpi=120, metadata={"Software": None}
                    if suffix == "png" else None)
    plt.close(fig)
