"""Paired tests on the samples where two systems disagree: Yadav & Bottou (2019) with its
Bonferroni bound, and the exact McNemar test.  ``n12`` counts samples only the first system
gets wrong, ``n21`` samples only the second gets wrong."""
from __future__ import annotations

import decimal
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from ...errors import ConfigError
from .intervals import _as_wrong, _count, _eta

#: largest Bonferroni ``K`` reported: any larger one says the same (no correction undoes the
#: verdict), and Python refuses to print an integer of more than 4,300 digits
MAX_K = 10**1000


def format_k(k: int) -> str:
    """A Bonferroni ``K`` as shown: whole below a million, else its magnitude.

    >>> format_k(63), format_k(10**200), format_k(MAX_K)
    ('63', '1e+200', '>= 1e1000')
    """
    return str(k) if k < 10**6 else f"{float(k):.2g}" if k < 10**300 else (
        ">= 1e1000" if k >= MAX_K else f"~1e{len(str(k)) - 1}")


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
        return asdict(self)   # counts too: asdict recurses


def paired_test(wrong_a: npt.ArrayLike, wrong_b: npt.ArrayLike, confidence: float = 0.95) -> PairedTest:
    """Run the Yadav-Bottou and exact McNemar tests on two wrong-vectors.

    ``max_bonferroni_k`` refers to whichever conclusion holds (A worse or B worse);
    it is 0 when neither does.

    >>> t = paired_test([1] * 30 + [0] * 10, [0] * 30 + [1] * 10)
    >>> t.a_worse, t.b_worse, t.max_bonferroni_k
    (True, False, 63)
    """
    c = joint_counts(wrong_a, wrong_b)
    a_worse = paired_worse(c.n12, c.n21, confidence)
    b_worse = paired_worse(c.n21, c.n12, confidence)
    k = max(max_bonferroni_k(c.n12, c.n21, confidence), max_bonferroni_k(c.n21, c.n12, confidence))
    return PairedTest(c, float(confidence), a_worse, b_worse, k, mcnemar_exact(c.n12, c.n21))
