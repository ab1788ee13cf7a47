"""The bootstrap probability of improvement (Bisani & Ney 2004): computed from the four
joint-outcome counts by a multinomial draw (O(B)), with the reference implementation that
resamples whole index vectors (O(B*n))."""
from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError
from .intervals import _as_wrong, _eta
from .paired import JointCounts, joint_counts

Seed = int | Sequence[int] | np.random.Generator


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


def pair_seed(seed: int, a: str, b: str) -> list[int]:
    """The seed of the pair ``a``, ``b``: stable per unordered pair, so a pair's POI does not
    depend on the other systems listed."""
    x, y = sorted((a, b))
    return [int(seed), zlib.crc32(x.encode()), zlib.crc32(y.encode())]


def _check_resamples(resamples: int) -> int:
    resamples = int(resamples)
    if resamples < 1:
        raise ConfigError("invalid number of bootstrap resamples", expected="B >= 1", found=resamples)
    return resamples


def _summarise(da: np.ndarray, resamples: int, confidence: float) -> Bootstrap:
    # da = errors_a - errors_b per resample; A better when negative
    better = np.count_nonzero(da < 0)
    ties = np.count_nonzero(da == 0)
    a = _eta(confidence) / 2.0
    lo, hi = np.quantile(da, [a, 1.0 - a])
    return Bootstrap(float((better + 0.5 * ties) / resamples), float(ties / resamples), resamples,
                     (float(lo), float(hi)), float(confidence), float(better / resamples))


def probability_of_improvement_from_counts(counts: JointCounts, resamples: int = 100_000, seed: Seed = 0,
                                           confidence: float = 0.95) -> Bootstrap:
    """POI of A over B from the four joint-outcome counts by a multinomial draw.

    A paired resample of ``n`` samples is a multinomial draw over the four joint
    outcomes with probabilities ``count / n``; the difference in errors is
    ``only-A-wrong - only-B-wrong`` of that draw, so the cost is O(B), not O(B*n).

    >>> c = JointCounts(both_right=9900, n12=20, n21=40, both_wrong=40)
    >>> round(probability_of_improvement_from_counts(c, 10_000, seed=0).poi, 2)
    0.99
    """
    resamples = _check_resamples(resamples)
    n = counts.n
    if n <= 0:
        raise ConfigError("empty test set", expected="at least one sample", found=n)
    # both-right and both-wrong merge: neither changes the difference
    p = np.array([counts.n12, counts.n21, counts.both_right + counts.both_wrong], float) / n
    draw = np.random.default_rng(seed).multinomial(n, p, size=resamples)
    return _summarise(draw[:, 0] - draw[:, 1], resamples, confidence)


def probability_of_improvement(wrong_a: npt.ArrayLike, wrong_b: npt.ArrayLike, resamples: int = 100_000,
                               seed: Seed = 0, confidence: float = 0.95) -> Bootstrap:
    """Bootstrap probability of improvement of A over B (paired, ties counted half) from their
    wrong-vectors on the same test samples, with ``resamples`` (``B``) drawn from
    ``numpy.random.default_rng(seed)`` (the same seed gives the same result).

    >>> a = np.zeros(1000, bool); a[:10] = True
    >>> probability_of_improvement(a, a).poi
    0.5
    """
    return probability_of_improvement_from_counts(joint_counts(wrong_a, wrong_b), resamples, seed, confidence)


def probability_of_improvement_resampled(wrong_a: npt.ArrayLike, wrong_b: npt.ArrayLike, resamples: int = 10_000,
                                         seed: Seed = 0, confidence: float = 0.95,
                                         batch_elements: int = 1 << 24) -> Bootstrap:
    """Reference implementation: resample whole index vectors (O(B*n)).

    Draws ``B`` vectors of ``n`` indices with replacement, the same for both systems,
    and counts errors on each.  Same distribution as
    :func:`probability_of_improvement`; kept to show the two agree (tests, benchmark).

    >>> a = np.zeros(100, bool); a[:5] = True
    >>> probability_of_improvement_resampled(a, a, 100).poi
    0.5
    """
    a, b = _as_wrong(wrong_a, "first"), _as_wrong(wrong_b, "second")
    joint_counts(a, b)  # shape checks
    resamples = _check_resamples(resamples)
    rng = np.random.default_rng(seed)
    n = a.size
    d = a.astype(np.int8) - b.astype(np.int8)  # +1 only A wrong, -1 only B wrong
    rows = max(1, batch_elements // max(n, 1))
    out = np.empty(resamples, np.int64)
    for start in range(0, resamples, rows):
        m = min(rows, resamples - start)
        idx = rng.integers(0, n, size=(m, n), dtype=np.int32 if n < 2 ** 31 else np.int64)
        out[start:start + m] = d[idx].sum(axis=1, dtype=np.int64)
    return _summarise(out, resamples, confidence)
