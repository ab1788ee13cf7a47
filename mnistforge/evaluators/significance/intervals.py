"""One system's error rate: normal quantiles, Wald and exact (Clopper-Pearson) intervals, and the
per-sample "wrong" vectors everything in :mod:`.significance` works from."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from ...errors import ConfigError

#: largest count (errors, samples, disagreements, comparisons) accepted: beyond any test set, and
#: where floats stop holding integers exactly
MAX_COUNT = 2**53


def _eta(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ConfigError("confidence out of range", expected="a number strictly between 0 and 1 "
                          "(e.g. 0.95)", found=confidence)
    return 1.0 - confidence


def z_two_sided(confidence: float = 0.95) -> float:
    """Two-sided normal quantile ``sqrt(2) * erfcinv(eta)``, ``eta = 1 - confidence``.

    >>> round(z_two_sided(0.95), 4)
    1.96
    """
    return math.sqrt(2.0) * float(special.erfcinv(_eta(confidence)))


def z_one_sided(confidence: float = 0.95) -> float:
    """One-sided normal quantile ``sqrt(2) * erfcinv(2 * eta)``.

    >>> round(z_one_sided(0.95), 4)
    1.6449
    """
    return math.sqrt(2.0) * float(special.erfcinv(2.0 * _eta(confidence)))


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


def _check_count(errors: Any, n: Any) -> tuple[int, int]:
    errors, n = _count(errors, "error count"), _count(n, "test-set size")
    if n <= 0 or not 0 <= errors <= n:
        raise ConfigError("invalid error count", expected="0 <= errors <= n and n > 0",
                          found=f"errors={errors}, n={n}")
    return errors, n


def wald_interval(errors: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wald interval ``p +/- z*sqrt(p(1-p)/n)`` of an error rate, clipped to [0, 1].

    Unreliable near 0 errors (it collapses to a point at 0); see :func:`exact_interval`.

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

    >>> wrong_from_predictions([1, 2, 3], [1, 0, 3])
    array([False,  True, False])
    """
    p, y = np.asarray(predictions), np.asarray(labels)
    if p.shape != y.shape or p.ndim != 1:
        raise ConfigError("predictions and labels do not match", expected="two 1-D vectors of "
                          "the same length", found=f"shapes {p.shape} and {y.shape}")
    wrong: np.ndarray = p != y
    return wrong
