"""A results card: every number a test error of one system says, computed by the evaluators.

:func:`build_card` takes the carded system (and any others) on one loaded test split and
returns a :class:`Card`, a typed record of the numbers (intervals, the difference needed for
significance, known label errors, paired comparisons, the QMNIST test10k/test50k gap, the
error gallery and confusion matrix, provenance); :mod:`.card_html` renders it as HTML and
Markdown.  Definitions: ``docs/card.md`` and the pages it links.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MnistforgeError, TestSetMismatchError
from ..io.hashing import sha256_parts
from ..loaders.split import DatasetSplit
from ..loaders.writers import row_writers
from . import label_issues as kli
from . import significance as sg
from .errorlists import SystemOutput, load_example

__all__ = ["Card", "GalleryItem", "build_card", "significant_difference", "qmnist_gap",
           "confusion_matrix", "GALLERY_RULE"]

#: how the gallery is ordered (said on the page)
GALLERY_RULE = ("known label errors first, then by test-set row (0-based), the first "
                "{limit} of {total} errors")


@dataclass(frozen=True)
class GalleryItem:
    """One misclassified test image (0-based ``row``); ``predicted`` -1 where unknown."""

    row: int
    label: int
    predicted: int
    label_name: str
    predicted_name: str
    label_issue: bool


@dataclass
class Card:
    """Every number the card shows (JSON: :meth:`to_dict`)."""

    system: str
    source: str
    test: str
    n: int
    confidence: float
    rate: sg.ErrorRate
    #: smallest n12 - n21 a paired test calls significant when the systems disagree on
    #: as many samples as this one errs (``significant_difference``)
    significant_difference: int
    provenance: dict[str, Any]
    known_labels: dict[str, Any] | None
    known_labels_note: str
    comparison: dict[str, Any] | None
    comparison_note: str
    combination: dict[str, Any] | None
    qmnist: dict[str, Any] | None
    qmnist_note: str
    gallery: list[GalleryItem]
    gallery_rule: str
    confusion: list[list[int]] | None
    classes: list[str]
    resamples: int
    seed: int
    notes: list[str] = field(default_factory=list)
    #: one entry per class: index, name, test images, errors, rate
    per_class: list[dict[str, Any]] = field(default_factory=list)
    #: training-set size of each system shown (None: not given)
    training: dict[str, int | None] = field(default_factory=dict)
    #: writer-clustered intervals: ``system``, ``strata`` and ``pairs`` (None: writers unknown, why)
    clustered: dict[str, Any] | None = None
    clustered_note: str = ""
    #: the warning that the training set shares SD19 characters or writers with the test set ("": none known)
    training_overlap: str = ""
    #: several runs per system (:func:`.significance.runs_table`; None: one run each)
    runs: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rate"] = self.rate.to_dict()
        d["gallery"] = [asdict(g) for g in self.gallery]
        return d


def significant_difference(disagreements: int, confidence: float = 0.95) -> int:
    """Smallest ``n12 - n21`` the paired test (:func:`~.significance.paired_worse`) calls
    significant when two systems disagree on ``disagreements`` samples (0: none can be).

    >>> significant_difference(100), significant_difference(0)   # 1.645 * sqrt(100) = 16.4
    (18, 0)
    """
    m = int(disagreements)
    for d in range(m % 2, m + 1, 2):   # n12 + n21 = m fixes the parity of n12 - n21
        if sg.paired_worse((m + d) // 2, (m - d) // 2, confidence):
            return d
    return 0


def qmnist_gap(wrong: np.ndarray, boundary: int = 10_000, confidence: float = 0.95,
               names: tuple[str, str] = ("test10k", "test50k"), writers: npt.ArrayLike | None = None) -> dict[str, Any]:
    """Error on rows ``[:boundary]`` (QMNIST test10k) minus rows ``[boundary:]`` (test50k), with
    the Wald interval of the difference of two independent rates and, given each row's writer
    (the two parts share writers), the writer-clustered one (``clustered``: :func:`.clustered_gap`),
    which then decides ``significant``.

    >>> w = np.zeros(60_000, bool); w[:100] = True; w[10_000:10_250] = True
    >>> g = qmnist_gap(w); g["test10k"]["errors"], g["test50k"]["errors"], round(g["gap"], 4)
    (100, 250, 0.005)
    """
    a = sg.error_rate(wrong[:boundary], confidence=confidence)
    b = sg.error_rate(wrong[boundary:], confidence=confidence)
    gap = a.rate - b.rate
    h = sg.z_two_sided(confidence) * math.sqrt(a.rate * (1 - a.rate) / a.n + b.rate * (1 - b.rate) / b.n)
    c = None if writers is None else sg.clustered_gap(wrong, np.arange(wrong.size) < boundary, writers,
                                                       confidence, "writer").to_dict()
    return {"names": list(names), "boundary": int(boundary), names[0]: a.to_dict(),
            names[1]: b.to_dict(), "gap": gap, "interval": [gap - h, gap + h], "clustered": c,
            "significant": bool(abs(gap) > h if c is None else not c["interval"][0] <= 0 <= c["interval"][1])}


def _gap_views(ds: Any) -> tuple[str, str, int] | None:  # any split: one without .info is none
    """The registry's two views splitting ``ds``'s split at one row (QMNIST: test10k, test50k)."""
    try:
        views = [s for s in ds.info.splits.values() if s.of == ds.split and s.rows is not None]
    except AttributeError:
        return None
    for head in views:
        tail = [s for s in views if s.rows == (head.rows[1], None)]
        if head.rows[0] == 0 and head.rows[1] and tail and 0 < head.rows[1] < len(ds):
            return head.name, tail[0].name, int(head.rows[1])
    return None


def confusion_matrix(labels: npt.ArrayLike, predictions: npt.ArrayLike, k: int) -> np.ndarray:
    """``k x k`` counts, rows the true class, columns the predicted one.

    >>> confusion_matrix([0, 1, 1], [0, 0, 1], 2).tolist()
    [[1, 0], [1, 1]]
    """
    y, p = np.asarray(labels, np.int64), np.asarray(predictions, np.int64)
    ok = (y >= 0) & (y < k) & (p >= 0) & (p < k)
    return np.bincount(y[ok] * k + p[ok], minlength=k * k).reshape(k, k)


def provenance(ds: DatasetSplit) -> dict[str, Any]:
    """Which test set, identified by its content (hashes of the arrays as loaded)."""
    images = np.ascontiguousarray(ds.images)
    labels = np.ascontiguousarray(np.asarray(ds.labels).astype("<i8"))
    try:
        split = ds.info.split(ds.split)
        registry_hash = split.order_free_sha256
    except Exception:  # a split the registry does not list (a folder's own name)
        registry_hash = None
    return {"name": ds.name, "split": ds.split, "rows": len(ds), "source": ds.source,
            "status": dict(ds.status), "synthetic": bool(ds.synthetic),
            "changes": [str(getattr(c, "description", c)) for c in ds.changes],
            # NumPy's stubs give ndarray the buffer protocol (__buffer__) on Python >= 3.12 only
            "images_sha256": sha256_parts(images), "labels_sha256": sha256_parts(labels),  # type: ignore[arg-type]
            "registry_order_free_sha256": registry_hash}


def _class_name(classes: Sequence[object], k: int) -> str:
    return str(classes[k]) if 0 <= k < len(classes) else "?"


def _known_labels(test: str, system: SystemOutput, labels: np.ndarray
                  ) -> tuple[kli.KnownProblems | None, dict[str, Any] | None, str]:
    why: list[str] = []
    problems = kli.known_problems(test, system.n, labels, download=False, why=why)
    if problems is None:
        return None, None, (why[0] if why else f"no study of label errors applies to {test}")
    pred = {system.name: system.predictions} if system.predictions is not None else None
    acc = kli.account({system.name: system.wrong}, problems, predictions=pred)
    s = acc["systems"][system.name]
    return problems, {"label_issues": acc["label_issues"], "keysers_common": acc["keysers_common"],
                      "errors": s["errors"], "on_label_issues": s["on_label_issues"],
                      "on_keysers_common": s["on_keysers_common"],
                      "rest": s["errors"] - s["on_label_issues"],
                      "on_label_issues_majority": s.get("on_label_issues_majority"),
                      "without_label_issues": s["without_label_issues"],
                      "rows": (np.flatnonzero(system.wrong & problems.label_issue)).tolist()}, ""


#: the training set of every Keysers (2006) system: MNIST's training split
KEYSERS_TRAIN_SIZE = 60_000


def _train_size(s: SystemOutput) -> int | None:
    """The training-set size a system's file states (``# train_size:``), else None."""
    v = str(s.metadata.get("train_size", ""))
    return int(v) if v.isdigit() else None


def _training_notes(system: SystemOutput, compared: Sequence[SystemOutput]) -> list[str]:
    """A warning when the carded system's training-set size is not given, or not theirs."""
    sizes = {n for n in map(_train_size, compared) if n is not None}
    own = _train_size(system)
    if not sizes:
        return []
    theirs = " or ".join(f"{x:,}" for x in sorted(sizes))
    if own is None:
        return [f"warning: the training-set size of {system.name} is not given (a prediction "
                f"file of evaluate states it); the systems compared trained on {theirs} images"]
    if sizes != {own}:
        return [f"warning: {system.name} trained on {own:,} images, the systems compared on "
                f"{theirs}: part of any difference is one of data, not of method"]
    return []


def _others(test_name: str, split: str, n: int,
            others: Iterable[SystemOutput]) -> tuple[list[SystemOutput], str, set[str]]:
    """``(systems to compare, what they are, names left out of the vote)``."""
    if others:
        return list(others), "the other systems given", set()
    if test_name == "mnist" and split == "test" and n == 10_000:
        # CC is Keysers' own vote of the four: it is compared, but does not vote again
        keysers = load_example("keysers2006")
        for s in keysers:   # all trained on MNIST's 60,000 training images (Keysers 2006)
            s.metadata["train_size"] = str(KEYSERS_TRAIN_SIZE)
        return keysers, ("the Keysers (2006) published systems "
                         "(`significance --example keysers2006`)"), {"CC"}
    return [], "no other system given (on MNIST test the Keysers 2006 systems are used)", set()


def _writers(test: str, ds: DatasetSplit) -> tuple[Any, Any]:
    """Each row's writer and NIST series (None where unknown): the split's metadata, else the registry's tables."""
    meta = ds.metadata if ds.metadata is not None and "writer" in (ds.metadata.dtype.names or ()) else None
    return (meta["writer"], meta["hsf"] if "hsf" in (meta.dtype.names or ()) else None) \
        if meta is not None else row_writers(test, download=False)


def _clustered(test: str, ds: DatasetSplit, wrong: dict[str, np.ndarray], resamples: int, seed: int,
               confidence: float, workers: int | None) -> tuple[dict[str, Any] | None, str, Any]:
    """The writer-clustered intervals of the first system and of its differences with the others,
    and the rows' writers (None: unknown)."""
    try:
        groups, hsf = _writers(test, ds)
        per, pairs = sg.clustered_table(wrong, groups, None if hsf is None else [f"hsf_{h}" for h in hsf],
                                        "writer", resamples, seed, confidence, workers)
    except MnistforgeError as e:
        return None, f"the writers of {test}'s rows are not known here ({e})", None
    first = next(iter(wrong))
    return {"by": "writer", "system": per[first],
            "pairs": [{"a": a, "b": b, **c} for (a, b), c in pairs.items() if a == first]}, "", groups


def build_card(system: SystemOutput, ds: DatasetSplit, others: Sequence[SystemOutput] = (), *, test: str | None = None,
               resamples: int = 10_000, seed: int = 0, confidence: float = 0.95,
               gallery_limit: int = 200, workers: int | None = None, training_overlap: str = "",
               runs: Sequence[tuple[str, Sequence[str], Sequence[np.ndarray]]] | None = None) -> Card:
    """Compute the card of ``system`` on loaded split ``ds`` (``others``: systems to compare).

    ``test`` is the target as typed (for the label-error study; default ``name:split``); the pairs'
    bootstraps are joblib tasks (``workers``: see :func:`~.significance.compare_systems`);
    ``training_overlap``: the warning of :func:`mnistforge.checks.overlap.leakage`, shown first;
    ``runs``: ``(name, run names, wrong-vectors)`` of each system given as several runs (the
    systems passed are then each one's first run), bootstrapped over runs x writers where known.
    """
    labels = np.asarray(ds.labels)
    n = len(labels)
    for s in (system, *others):
        if s.n != n:
            raise TestSetMismatchError(f"{s.name} does not match the test set",
                                       expected=f"{n} rows", found=f"{s.n}", path=s.source)
    test = test or f"{ds.name}:{ds.split}"
    rate = sg.error_rate(system.wrong, confidence=confidence)
    problems, known, known_note = _known_labels(test, system, labels)

    compared, where, abstain = _others(ds.name, ds.split, n, others)
    comparison = combination = None
    wrong = {system.name: system.wrong, **{s.name: s.wrong for s in compared}}
    notes: list[str] = _training_notes(system, compared)
    if compared:
        base = [s for s in compared if s.name not in abstain]
        vote = sg.majority_vote({system.name: system.wrong, **{s.name: s.wrong for s in base}}, system.name)
        if np.array_equal(vote, system.wrong):   # two systems: the tie-breaker decides every tie
            notes.append(f"no vote row: the majority vote of {system.name} and "
                         f"{', '.join(s.name for s in base)} ({system.name} breaking ties) is "
                         f"{system.name} itself")
        else:
            r = sg.error_rate(vote, confidence=confidence)
            combination = {"name": "vote", "members": [system.name] + [s.name for s in base],
                           "tie_breaker": system.name, "rate": r.to_dict()}
            wrong["vote"] = vote
        comp = sg.compare_systems(wrong, resamples, seed, confidence, workers)
        comparison = {**comp.to_dict(), "names": comp.names, "poi": comp.poi.tolist(),
                      "descriptions": {s.name: s.description for s in compared}}

    qmnist = None
    qnote = (f"not applicable: {ds.name}:{ds.split} is not split by the registry into two "
             "parts (as QMNIST's test into test10k and test50k)")
    clustered, cnote, writers = _clustered(test, ds, wrong, resamples, seed, confidence, workers)
    views = _gap_views(ds) if ds.indices is None else None
    if views is not None:
        qmnist, qnote = qmnist_gap(system.wrong, views[2], confidence, views[:2], writers), ""

    flagged = problems.label_issue if problems is not None else np.zeros(n, bool)
    rows = np.flatnonzero(system.wrong)
    rows = rows[np.lexsort((rows, ~flagged[rows]))]
    limit = min(int(gallery_limit), rows.size)
    classes = list(ds.classes)
    pred = system.predictions
    gallery = [GalleryItem(int(i), int(labels[i]), -1 if pred is None else int(pred[i]),
                           _class_name(classes, int(labels[i])),
                           "?" if pred is None else _class_name(classes, int(pred[i])),
                           bool(flagged[i])) for i in rows[:limit]]
    conf = (confusion_matrix(labels, pred, len(classes)).tolist() if pred is not None else None)
    k = max(len(classes), int(labels.max()) + 1 if n else 0)
    per_n = np.bincount(labels, minlength=k)
    per_err = np.bincount(labels[system.wrong], minlength=k)
    per_class = [{"class": c, "name": _class_name(classes, c), "n": int(per_n[c]),
                  "errors": int(per_err[c]), "rate": float(per_err[c] / per_n[c]) if per_n[c] else None}
                 for c in range(k)]
    training = {s.name: _train_size(s) for s in (system, *compared)}
    if pred is None:
        notes.append(f"{system.name} gives right/wrong only (an error list): no predicted "
                     "classes, no confusion matrix")
    return Card(system.name, str(system.source), test, n, float(confidence), rate,
                significant_difference(rate.errors, confidence), provenance(ds), known,
                known_note, comparison, "" if compared else where, combination, qmnist, qnote,
                gallery, GALLERY_RULE.format(limit=limit, total=rows.size), conf, classes,
                int(resamples), int(seed), notes + ([f"compared with {where}"] if compared else []),
                per_class, training, clustered, cnote, training_overlap,
                None if runs is None else sg.runs_table(runs, writers, resamples, seed, confidence, workers))
