"""Evaluating a classifier on a split, and the QMNIST generalisation protocol.

:func:`evaluate_classifier` fits on one set, predicts another and reports the error
with Wald and exact intervals and the timings.  :func:`run_qmnist_protocol` runs the six
train/test combinations of the QMNIST paper (Yadav & Bottou 2019) for one classifier:
train on MNIST (``TM``) or QMNIST (``TQ``), test on MNIST's test set (``TM``), QMNIST10K
(``TQ10``, the reconstruction of the same 10,000 images, same order) and QMNIST50K
(``TQ50``, the lost 50,000), i.e. TMTM, TMTQ10, TMTQ50, TQTM, TQTQ10, TQTQ50, plus the
paired comparisons between runs on test sets of the same size.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..classifiers.base import Classifier, make_classifier
from ..classifiers.preprocess import deskew as deskew_images
from ..loaders import load, resolve_target
from . import significance as sg

logger = logging.getLogger(__name__)

QMNIST_TRAIN = {"TM": "mnist:train", "TQ": "qmnist:train"}
QMNIST_TEST = {"TM": "mnist:test", "TQ10": "qmnist:test10k", "TQ50": "qmnist:test50k"}


@dataclass
class Evaluation:
    """One classifier fitted on ``train`` and tested on ``test``."""

    classifier: str
    train: str
    test: str
    n_train: int
    n_test: int
    errors: int
    error_rate: float
    wald95: list[float]
    exact95: list[float]
    fit_seconds: float
    predict_seconds: float
    confidence: float = 0.95
    wald: list[float] = field(default_factory=list)
    exact: list[float] = field(default_factory=list)
    deskew: bool = False
    predictions: np.ndarray | None = field(default=None, repr=False)
    labels: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("predictions")
        d.pop("labels")
        return d

    @property
    def wrong(self) -> np.ndarray:
        assert self.predictions is not None and self.labels is not None, "an evaluation that kept its arrays"
        wrong: np.ndarray = self.predictions != self.labels
        return wrong


def load_target(target: str, default_split: str) -> tuple[np.ndarray, np.ndarray, str]:
    """``(images, labels, canonical "name:split")`` of a CLI target (name or folder)."""
    name, split, root = resolve_target(target, default_split=default_split)
    ds = load(name, split, root=root)
    label = f"{name}:{split}" if root is None else f"{root}:{name}:{split}"
    return np.asarray(ds.images), np.asarray(ds.labels), label


def evaluate_classifier(clf: Classifier | str, train_images: np.ndarray | None, train_labels: np.ndarray | None,
                        test_images: np.ndarray, test_labels: np.ndarray, *,
                        train_name: str = "train", test_name: str = "test",
                        deskew: bool = False, confidence: float = 0.95, spec: str | None = None, fitted: bool = False,
                        validation: tuple[np.ndarray, np.ndarray] | None = None) -> Evaluation:
    """Fit ``clf`` (a classifier or a spec string), predict the test set, report errors.

    ``fitted=True`` skips the fit (a loaded model; the training arrays may be None);
    ``validation=(images, labels)`` is passed to ``fit`` (early stopping of the neural
    classifiers).  A classifier with ``check_labels`` refuses test labels it does not know.

    >>> X = np.array([[0.], [1.], [5.], [6.]]); y = np.array([0, 0, 1, 1])
    >>> e = evaluate_classifier("knn:k=1", X, y, X, y)
    >>> e.errors, e.exact95[0]
    (0, 0.0)
    """
    if isinstance(clf, str):
        spec = spec or clf
        clf = make_classifier(clf)
    spec = spec or clf.spec()
    if deskew:
        test_images = deskew_images(test_images)
        if not fitted:
            assert train_images is not None, "a classifier to fit needs its training images"
            train_images = deskew_images(train_images)
        if validation is not None:
            validation = (deskew_images(validation[0]), validation[1])
    t0 = time.perf_counter()
    if not fitted:
        fit: Any = clf.fit  # validation= is the neural classifiers' alone (not Classifier.fit's)
        if validation is not None:
            fit(train_images, train_labels, validation=validation)
        else:
            fit(train_images, train_labels)
    t1 = time.perf_counter()
    if hasattr(clf, "check_labels"):
        clf.check_labels(test_labels)
    pred = np.asarray(clf.predict(test_images))
    t2 = time.perf_counter()
    y = np.asarray(test_labels)
    wrong = pred != y
    r95 = sg.error_rate(wrong, confidence=0.95)
    rc = sg.error_rate(wrong, confidence=confidence)
    logger.info("%s on %s: %d/%d errors", spec, test_name, r95.errors, r95.n)
    n_train = len(train_labels) if train_labels is not None else getattr(clf, "n_train_", 0)
    return Evaluation(spec, train_name, test_name, int(n_train or 0), int(y.size),
                      r95.errors, r95.rate, list(r95.wald), list(r95.exact),
                      round(t1 - t0, 3), round(t2 - t1, 3), float(confidence),
                      list(rc.wald), list(rc.exact), bool(deskew), pred, y)


@dataclass
class ProtocolResult:
    """The six QMNIST combinations and their paired comparisons."""

    classifier: str
    runs: dict[str, Evaluation]
    comparisons: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"classifier": self.classifier, "protocol": "qmnist",
                "runs": {k: v.to_dict() for k, v in self.runs.items()}, "comparisons": self.comparisons}


def run_qmnist_protocol(spec: str, *, train: dict[str, str] | None = None, test: dict[str, str] | None = None,
                        loader: Callable[[str, str], tuple[np.ndarray, np.ndarray, str]] | None = None,
                        deskew: bool = False, confidence: float = 0.95, resamples: int = 100_000, seed: int = 0,
                        limit_train: int | None = None) -> ProtocolResult:
    """Run the six train/test combinations of the QMNIST paper for the classifier ``spec``
    (``"knn:k=3"``, ``"lenet:epochs=10"`` ...; a fresh one fitted per training set).

    ``train``, ``test``: the targets per code (defaults :data:`QMNIST_TRAIN`, :data:`QMNIST_TEST`), names or folders of
    idx files as on the command line, read by ``loader(target, default_split) -> (images, labels, label)`` (default
    :func:`load_target`; tests pass arrays this way).  Paired comparisons are made between runs whose test sets have the
    same size: the same test set with the two training sets, and MNIST vs QMNIST10K test sets (the same images,
    reconstructed) with the same training set.
    """
    train = dict(QMNIST_TRAIN if train is None else train)
    test = dict(QMNIST_TEST if test is None else test)
    loader = loader or load_target
    make_classifier(spec)  # fail early on a bad spec
    tests = {code: loader(t, "test") for code, t in test.items()}
    runs: dict[str, Evaluation] = {}
    for tcode, ttarget in train.items():
        Xtr, ytr, trname = loader(ttarget, "train")
        if limit_train:
            Xtr, ytr = Xtr[:limit_train], ytr[:limit_train]
        if deskew:
            Xtr = deskew_images(Xtr)
        clf = make_classifier(spec)
        t0 = time.perf_counter()
        clf.fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
        for ecode, (Xte, yte, tename) in tests.items():
            ev = evaluate_classifier(clf, Xtr, ytr, Xte, yte, train_name=trname, test_name=tename,
                                     deskew=deskew, confidence=confidence, spec=spec, fitted=True)
            ev.fit_seconds = round(fit_s, 3)
            runs[tcode + ecode] = ev
    comparisons: list[dict[str, Any]] = []
    names = list(runs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ra, rb = runs[a], runs[b]
            if ra.n_test != rb.n_test:
                continue
            same_test = ra.test == rb.test
            same_train = ra.train == rb.train
            if not (same_test or same_train):
                continue
            t = sg.paired_test(ra.wrong, rb.wrong, confidence)
            c = t.counts
            bs = sg.probability_of_improvement_from_counts(c, resamples, sg.pair_seed(seed, a, b), confidence)
            comparisons.append({
                "a": a, "b": b, "errors_a": ra.errors, "errors_b": rb.errors,
                "n12": c.n12, "n21": c.n21, "poi_a_better": bs.poi, "error_diff": (ra.errors - rb.errors) / ra.n_test,
                "paired_worse_at_95": sg.paired_worse(c.n12, c.n21, 0.95),
                "b_worse_at_95": sg.paired_worse(c.n21, c.n12, 0.95),
                "max_bonferroni_k": t.max_bonferroni_k, "mcnemar_p": t.mcnemar_p,
                "paired_on": "same test set" if same_test else "same images (MNIST vs QMNIST10K)",
            })
    return ProtocolResult(spec, runs, comparisons)

