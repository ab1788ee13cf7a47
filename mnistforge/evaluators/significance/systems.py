"""Many systems on one test set: pairwise tables (:func:`compare_systems`), error overlaps,
majority and plurality votes, the POI heat map, and the check that a test set is the one the
systems were scored on."""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError, DownloadError, MissingFileError, TestSetMismatchError
from ...io.atomic import atomic_file
from ...io.types import StrPath
from ...io.workers import parallel_tasks
from ...loaders import load, resolve_target
from ...loaders.names import parse_split, rows_of
from ...plotting import pyplot
from ...registry import get_dataset
from .bootstrap import pair_seed, probability_of_improvement_from_counts
from .intervals import ErrorRate, _as_wrong, error_rate
from .paired import JointCounts, max_bonferroni_k, mcnemar_exact, paired_worse

logger = logging.getLogger(__name__)


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
                    seed: int = 0, confidence: float = 0.95, workers: int | None = None) -> Comparison:
    """Pairwise POI, error differences and paired-test verdicts for many systems: ``wrong`` maps
    names to (or lists) bool vectors, ``True`` where each system errs, all on the same test
    samples.  Each unordered pair is a joblib task drawing ``resamples`` from its own stream
    (:func:`.pair_seed`), so ``poi[a, b] + poi[b, a] == 1`` exactly and ``workers`` (see
    :func:`~mnistforge.io.workers.parallel_tasks`) changes nothing in the result.

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
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    # each pair drawn in name order, so its result is independent of the listing order
    drawn = [(i, j) if names[i] <= names[j] else (j, i) for i, j in pairs]
    tasks = [(JointCounts(int(n - err[x] - err[y] + both[x, y]), int(n12[x, y]), int(n12[y, x]), int(both[x, y])),
              resamples, pair_seed(seed, names[x], names[y]), confidence) for x, y in drawn]
    boots = parallel_tasks(probability_of_improvement_from_counts, tasks, "bootstrapping the pairs", workers)
    for (i, j), (x, y), bs in zip(pairs, drawn, boots):
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
            raise ConfigError("tie-breaker out of range", expected=f"0..{len(names) - 1}", found=who)
        return int(who)
    if who not in names:
        raise ConfigError("unknown tie-breaker system", expected="one of " + ", ".join(names), found=who)
    return names.index(who)


def plurality_vote(predictions: Mapping[str, npt.ArrayLike] | npt.ArrayLike, tie_breaker: str | int | None = None,
                   names: Iterable[str] | None = None) -> np.ndarray:
    """Combine predicted labels by plurality; ties go to the tie-breaker's label.

    ``predictions`` is ``systems x n`` (or a dict name -> labels).  When the most voted
    labels tie, the tie-breaker's label wins if it is among them; otherwise the first
    system (in order) whose label is among them decides.

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
    t = 0 if tie_breaker is None else _index_of(names, tie_breaker, np.zeros((m, 1)))
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
    copy = Path(test).is_file()   # a third-party copy (.npz, .csv, ...): loaded and mapped below
    name, split, root = (str(test), "test", None) if copy else resolve_target(test, default_split="test")
    count = None
    if root is None and not copy:
        base, rows = parse_split(split)
        count = get_dataset(name).split(base).count
        if rows and count:
            sl = rows_of(rows, count)
            count = sl.stop - sl.start
    def mismatch(found: int, where: str) -> TestSetMismatchError:
        return TestSetMismatchError(f"--test-set {test} does not match the predictions", found=f"{found} samples in "
                                    f"{where}", expected=f"{n} samples (what the systems were scored on)",
                                    hint=f"give the test set the systems were run on (a slice such as "
                                         f"{name}:test[:{n}] for a part of it)")

    if count is not None and count != n:   # no load needed to see it
        raise mismatch(count, f"{name}:{split}")
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
        raise mismatch(len(ds), ds.source or test)
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
        fig.savefig(f, format=suffix, dpi=120, metadata={"Software": None} if suffix == "png" else None)
    plt.close(fig)
