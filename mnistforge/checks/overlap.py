"""What two splits of the MNIST family share: exact from the rows' SD19 identities (:mod:`.identity`),
or expected for sets drawn at random (official EMNIST): ``docs/provenance-mnist-qmnist.md``.

>>> e = expected_overlap(10_000, 697_932, 814_255)
>>> round(e.mean), [round(x) for x in e.interval]
(8571, [8503, 8640])
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import settings
from ..errors import ConfigError, MnistforgeError
from ..loaders import resolve_target
from ..registry import get_dataset
from .identity import Identities, PathArg, official, row_identities

logger = logging.getLogger(__name__)


@dataclass
class Overlap:
    """What two splits share; ``shared_rows``: each side's rows whose character (or writer, ``level``)
    is on the other side; ``key``: the id characters were compared by (None: not comparable)."""
    a: str
    b: str
    level: str
    key: str | None
    shared_characters: int | None
    shared_writers: int | None
    shared_rows: dict[str, list[int]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    writers: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "level": self.level, "character_key": self.key,
                "rows": self.rows, "writers": self.writers,
                "shared_rows": {s: len(r) for s, r in self.shared_rows.items()},
                "shared_characters": self.shared_characters, "shared_writers": self.shared_writers,
                "shared_row_lists": self.shared_rows}

    def summary(self) -> str:
        c, w = ("unknown" if v is None else f"{v:,}" for v in (self.shared_characters, self.shared_writers))
        r = ", ".join(f"{len(v):,} of {self.rows[s]:,} rows of {s}" for s, v in self.shared_rows.items())
        return f"{self.a} and {self.b} share {c} characters and {w} writers ({self.level} level: {r})"


def compare(a: Identities, b: Identities, level: str = "character") -> Overlap:
    """The :class:`Overlap` of two splits' identities."""
    if level not in ("character", "writer"):
        raise ConfigError("unknown overlap level", expected="character or writer", found=repr(level))
    key = next((k for k in ("character", "digit") if a.known(k) and b.known(k)), None)
    if level == "character" and key is None:
        raise ConfigError(f"{a.target} and {b.target} cannot be compared character by character",
                          expected="SD19 character ids (or NIST digit indices) on both sides",
                          found=f"{a.source}; {b.source}", hint="give the SD19 source (--sd19) to "
                          "tie NIST digit indices to SD19 characters, or use --level writer")
    writers = a.known("writer") and b.known("writer")
    if level == "writer" and not writers:
        raise ConfigError(f"{a.target} or {b.target} has no writer per row",
                          found=f"{a.source}; {b.source}", expected="writer ids on both sides")
    side = key if level == "character" else "writer"
    pairs = (("a", a, b), ("b", b, a))
    return Overlap(a.target, b.target, level, key,
                   None if key is None else int(np.intersect1d(a.rows[key], b.rows[key]).size),
                   int(np.intersect1d(a.rows["writer"], b.rows["writer"]).size) if writers else None,
                   {n: np.flatnonzero(np.isin(x.rows[side], y.rows[side])).tolist() for n, x, y in pairs},
                   {n: len(x.rows) for n, x, _ in pairs},
                   {n: int(np.unique(x.rows["writer"]).size) for n, x, _ in pairs if writers})


def overlap(a: PathArg, b: PathArg, level: str = "character", *, tables: PathArg | None = None,
            sd19: PathArg | None = None) -> Overlap:
    """What splits ``a`` and ``b`` (``mnist:test``, ``FOLDER:NAME:SPLIT``) share; ``tables``: the
    published QMNIST tables' folder; ``sd19``: an SD19 source (ties digit indices to SD19 rows)."""
    return compare(row_identities(a, tables=tables, sd19=sd19), row_identities(b, tables=tables, sd19=sd19), level)


def leakage(train: str, test: str, limits: tuple[int | None, int | None] = (None, None)) -> str | None:
    """The warning for a classifier trained on ``train`` (its first ``limits[0]`` rows) and tested
    on ``test`` when they share SD19 characters or writers (official EMNIST ByClass/ByMerge: the
    expectation); None when they share none or it is unknown (official tables: the cache only)."""
    try:
        (n1, s1, r1), (n2, s2, r2) = resolve_target(train, "train"), resolve_target(test, "test")
        if not (get_dataset(n1).from_sd19 and get_dataset(n2).from_sd19):
            return None
        with settings.using(offline=True):  # no download for a warning: the cache or nothing
            if r1 is None and not official(n1) or r2 is None and not official(n2):
                e = expected_for(test, f"{n1}:{s1}") if r1 is None else expected_for(train, f"{n2}:{s2}")
                return None if e is None else f"{train} and {test} share SD19 characters: {e.summary()}"
            a, b = (row_identities(t, default_split=s) for t, s in ((train, "train"), (test, "test")))
        a.rows, b.rows = a.rows[:limits[0]], b.rows[:limits[1]]
        o = compare(a, b, "writer" if a.known("writer") and b.known("writer") else "character")
    except MnistforgeError as e:
        logger.info("no overlap check of %s and %s: %s", train, test, e)
        return None
    said = [f"{n:,} {what if n > 1 else what[:-1]}" for n, what in (
        (o.shared_characters or 0, "SD19 characters"), (o.shared_writers or 0, "writers")) if n]
    return None if not said else (
        f"the training set {a.target} and the test set {b.target} share {' and '.join(said)} "
        f"({len(o.shared_rows['b']):,} of the {o.rows['b']:,} test rows by a shared {o.level}): "
        "those test rows are not independent of the training set")


@dataclass(frozen=True)
class Expected:
    """Expected shared characters with its normal-approximation interval (an expectation)."""
    mean: float
    sd: float
    interval: tuple[float, float]
    formula: str

    def summary(self) -> str:
        return (f"{self.mean:,.0f} characters expected, 95 % interval {self.interval[0]:,.0f}-"
                f"{self.interval[1]:,.0f} ({self.formula}): an expectation, not a count")


def expected_overlap(n: Any, drawn: Any, pool: Any, z: float = 1.959964) -> Expected:
    """Characters of a fixed set of ``n`` (all in the pool) expected in ``drawn`` of the ``pool`` drawn at
    random: hypergeometric (mean ``n d / N``, variance ``n p (1-p) (N-n) / (N-1)``, ``p = d / N``);
    arrays, one entry per class drawn on its own, are summed (a stratified split varies a little less)."""
    n, d, N = (np.atleast_1d(np.asarray(v, np.float64)) for v in (n, drawn, pool))
    if (n < 0).any() or (d < 0).any() or (n > N).any() or (d > N).any() or (N < 2).any():
        raise ConfigError("expected overlap out of range", expected="0 <= n, drawn <= pool, pool >= 2",
                          found=f"n={n.tolist()}, drawn={d.tolist()}, pool={N.tolist()}")
    p = d / N
    mean, sd = float((n * p).sum()), math.sqrt(float((n * p * (1 - p) * (N - n) / (N - 1)).sum()))
    return Expected(mean, sd, (max(0.0, mean - z * sd), min(float(n.sum()), mean + z * sd)),
                    "sum over classes of n_c x d_c / N_c" if len(n) > 1 else f"{n[0]:.0f} x {d[0]:.0f} / {N[0]:.0f}")


def expected_for(a: PathArg, b: PathArg, tables: PathArg | None = None) -> Expected | None:
    """The characters of ``a`` expected in ``b``, a side of a ``random_sd19_split`` release, else None."""
    name, split, root = resolve_target(b, default_split="test")
    if root is not None or not (info := get_dataset(name)).random_sd19_split or split not in info.splits:
        return None
    return expected_overlap(len(row_identities(a, tables=tables).rows), info.splits[split].count,
                            sum(sp.count for sp in info.splits.values() if not sp.is_view))


__all__ = ["Overlap", "Expected", "overlap", "compare", "expected_overlap", "expected_for", "leakage"]
