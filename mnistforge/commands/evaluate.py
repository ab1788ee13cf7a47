"""``mnistforge evaluate CLASSIFIER --train T --test T``: reference classifiers on any split."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

from .common import add_inputs, add_cache, add_json, add_offline, add_progress, lazy_import, write_json
from . import argtypes

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..classifiers.base import Classifier
    from ..evaluators.protocol import Evaluation

# loaded when the command runs: `mnistforge --help` stays free of NumPy
el = lazy_import("mnistforge.evaluators.errorlists")
pr = lazy_import("mnistforge.evaluators.protocol")

NAME = "evaluate"
HELP = "fit a reference classifier (linear, elm, knn, lenet) on one split and test it on another"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "train", "test", "validation", "load_model", "mnist", "qmnist")
    p.add_argument("classifier", metavar="CLASSIFIER", nargs="?", default=None,
                   help="spec such as linear, linear:ridge=1, knn:k=3, elm:hidden=2000,seed=0, "
                        "lenet:epochs=10, cnn (lenet/cnn need the [torch] extra); optional "
                        "with --load-model")
    p.add_argument("--train", default=None, metavar="NAME[:SPLIT]",
                   help="training set: dataset name or folder of idx files (default split train)")
    p.add_argument("--test", default=None, metavar="NAME[:SPLIT]",
                   help="test set: dataset name or folder (default split test)")
    p.add_argument("--deskew", action="store_true", help="deskew train and test images first")
    p.add_argument("--limit-train", type=argtypes.int_in(1, 10**9), default=None, metavar="N",
                   help="use only the first N training samples")
    p.add_argument("--limit-test", type=argtypes.int_in(1, 10**9), default=None, metavar="N",
                   help="use only the first N test samples")
    p.add_argument("--confidence", type=argtypes.confidence, default=0.95,
                   help="confidence of the printed intervals (JSON always has 95 %% too)")
    add_json(p)
    p.add_argument("--predictions", default=None, metavar="OUT",
                   help="write per-sample predictions (TSV, .gz compresses); with --protocol, "
                        "a folder receiving one file per combination")
    p.add_argument("--protocol", choices=["qmnist"], default=None,
                   help="run the six QMNIST train/test combinations (TMTM ... TQTQ50)")
    p.add_argument("--mnist", default="mnist", metavar="NAME|FOLDER",
                   help="MNIST source for --protocol qmnist (default: the official files)")
    p.add_argument("--qmnist", default="qmnist", metavar="NAME|FOLDER",
                   help="QMNIST source for --protocol qmnist (default: the official files)")
    p.add_argument("--bootstrap", type=argtypes.int_in(0, 10**7), default=100_000, metavar="B",
                   help="bootstrap resamples for the protocol's POI (default 100000)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None,
                   help="lenet/cnn: where to train and predict (default: the spec's, auto = "
                        "cuda when available)")
    p.add_argument("--validation", default=None, metavar="NAME[:SPLIT]",
                   help="lenet/cnn: early stopping on this set (e.g. emnist-balanced:validation "
                        "with --train emnist-balanced:train-without-validation)")
    p.add_argument("--save-model", default=None, metavar="PATH",
                   help="lenet/cnn: save the trained model as PATH.npz + PATH.json (no pickle)")
    p.add_argument("--load-model", default=None, metavar="PATH",
                   help="lenet/cnn: test a saved model instead of training (no --train)")
    add_offline(p)
    add_cache(p)
    add_progress(p)


def _fmt(e: Evaluation) -> str:
    c = f"{100 * e.confidence:g} %"
    return (f"{e.errors}/{e.n_test} errors = {100 * e.error_rate:.2f} %  "
            f"(Wald {c}: {100 * e.wald[0]:.2f}-{100 * e.wald[1]:.2f} %, "
            f"exact {c}: {100 * e.exact[0]:.2f}-{100 * e.exact[1]:.2f} %)  "
            f"fit {e.fit_seconds:.1f} s, predict {e.predict_seconds:.1f} s")


def _run_protocol(args: argparse.Namespace) -> int:
    from pathlib import Path

    train = {"TM": f"{args.mnist}:train", "TQ": f"{args.qmnist}:train"}
    test = {"TM": f"{args.mnist}:test", "TQ10": f"{args.qmnist}:test10k", "TQ50": f"{args.qmnist}:test50k"}
    res = pr.run_qmnist_protocol(args.classifier, train=train, test=test, deskew=args.deskew,
                                 confidence=args.confidence, resamples=args.bootstrap, limit_train=args.limit_train)
    print(f"QMNIST protocol, classifier {args.classifier}" + (" (deskewed)" if args.deskew else ""))
    for code, e in res.runs.items():
        print(f"  {code:<7} {_fmt(e)}")
    print("paired comparisons (A worse than B at 95 %: n12 - n21 >= 1.645 sqrt(n12 + n21)):")
    for c in res.comparisons:
        verdict = ("A worse" if c["paired_worse_at_95"] else
                   "B worse" if c["b_worse_at_95"] else "no significant difference")
        print(f"  {c['a']:<7} vs {c['b']:<7} n12={c['n12']:<5d} n21={c['n21']:<5d} "
              f"POI(A better)={c['poi_a_better']:.3f}  {verdict}  ({c['paired_on']})")
    if args.predictions:
        out = Path(args.predictions)
        for code, e in res.runs.items():
            el.write_predictions(out / f"{code}.tsv.gz", e.predictions, e.labels, name=code,
                                 metadata={"classifier": e.classifier, "train": e.train,
                                           "train_size": e.n_train, "test": e.test})
        print(f"wrote predictions to {out}/")
    if args.json:
        _write_json(args, res.to_dict())
    return 0


def _neural_options(args: argparse.Namespace) -> tuple[Classifier | None, str]:
    """Check the neural-only flags; return ``(classifier or None, spec)`` before any loading."""
    from ..classifiers.base import make_classifier
    from ..classifiers.neural import NeuralClassifier, load_model

    if args.load_model:
        if args.train or args.protocol or args.save_model or args.validation:
            raise ConfigError("--load-model tests a trained model", expected="--test only",
                              found="--train, --protocol, --save-model or --validation too")
        # a loaded or a neural classifier: its own attributes (name, resolve_device) are used
        clf: Any = load_model(args.load_model, device=args.device or "auto")
        if args.classifier and args.classifier.split(":")[0].strip().lower() not in (
                clf.name, "lenet5" if clf.name == "lenet" else clf.name):
            raise ConfigError("the loaded model is another classifier", expected=clf.name,
                              found=args.classifier, hint="drop CLASSIFIER with --load-model")
        return clf, clf.spec()
    if not args.classifier:
        raise ConfigError("missing classifier", expected="CLASSIFIER (e.g. knn:k=3) or "
                          "--load-model PATH", found="neither")
    overrides = {"device": args.device} if args.device else {}
    clf = make_classifier(args.classifier)  # usage errors before any loading
    neural = isinstance(clf, NeuralClassifier)
    if not neural and (overrides or args.save_model or args.validation):
        raise ConfigError("--device, --validation and --save-model apply to lenet and cnn", found=args.classifier)
    if neural:
        clf = make_classifier(args.classifier, **overrides)
        clf.resolve_device()  # a missing GPU or torch is reported before loading data
    if args.save_model and args.json:
        from pathlib import Path

        from ..classifiers.neural import model_paths
        if Path(args.json).resolve() in [p.resolve() for p in model_paths(args.save_model)]:
            raise ConfigError("--json would overwrite the saved model's description",
                              expected="another --json path than --save-model's .json", found=args.json)
    if args.protocol and (args.save_model or args.validation):
        raise ConfigError("--protocol trains two models", expected="no --save-model or "
                          "--validation", found="one of them")
    return None, clf.spec() if overrides else args.classifier


def _check_outputs(args: argparse.Namespace) -> None:
    """Before any work: the files this run writes (``--predictions`` with ``--protocol``: a
    folder) are checked, and none of them is an input (the data, the model loaded)."""
    from ..classifiers.neural import model_paths
    from ..io.outputs import check_apart, check_output_file, check_output_path
    from .common import input_paths

    inputs = input_paths(args)
    if args.load_model:
        inputs += [str(p) for p in model_paths(args.load_model)]
    if args.predictions:
        (check_output_path if args.protocol else check_output_file)(args.predictions)
        check_apart(args.predictions, inputs, "--predictions output")
    if args.save_model:
        for p in model_paths(args.save_model):
            check_output_file(p, "--save-model")
            check_apart(p, inputs, "--save-model output")


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    loaded, spec = _neural_options(args)
    if loaded is not None:
        return _run_loaded(args, loaded)
    args.classifier = spec
    if args.protocol == "qmnist":
        if args.train or args.test:
            raise ConfigError("--protocol qmnist chooses the train and test sets itself",
                              expected="--mnist/--qmnist to point at other files", found="--train/--test")
        return _run_protocol(args)
    if not args.train or not args.test:
        raise ConfigError("missing data", expected="--train NAME[:SPLIT] and --test NAME[:SPLIT] "
                          "(or --protocol qmnist)", found="only one or neither")
    Xtr, ytr, trname = pr.load_target(args.train, "train")
    Xte, yte, tename = pr.load_target(args.test, "test")
    if args.limit_train:
        Xtr, ytr = Xtr[:args.limit_train], ytr[:args.limit_train]
    if args.limit_test:
        Xte, yte = Xte[:args.limit_test], yte[:args.limit_test]
    validation = None
    if args.validation:
        Xv, yv, _ = pr.load_target(args.validation, "validation")
        validation = (Xv, yv)
    from ..checks.overlap import leakage
    from ..classifiers.base import make_classifier

    check_label_space(ytr, yte, trname, tename)
    if shared := leakage(args.train, args.test, (args.limit_train, args.limit_test)):
        print(f"warning: {shared}")
    clf: Any = make_classifier(args.classifier)  # a neural one has best_epoch_, history_, save
    e = pr.evaluate_classifier(clf, Xtr, ytr, Xte, yte, train_name=trname, spec=args.classifier,
                               test_name=tename, deskew=args.deskew, confidence=args.confidence, validation=validation)
    print(f"{args.classifier}: train {trname} ({e.n_train}), test {tename}" + (" (deskewed)" if args.deskew else ""))
    if getattr(clf, "best_epoch_", None) and validation is not None:
        print(f"  early stopping: best validation epoch {clf.best_epoch_} of "
              f"{len(clf.history_)} run")
    print(f"  {_fmt(e)}")
    known = _known_label_problems(args.test, e)
    if args.save_model:
        print(f"wrote {clf.save(args.save_model)} (+ .json)")
    return _write_outputs(args, e, args.classifier, trname, tename, known)


def _run_loaded(args: argparse.Namespace, clf: Classifier) -> int:
    if not args.test:
        raise ConfigError("missing data", expected="--test NAME[:SPLIT] with --load-model", found="no --test")
    if args.limit_train is not None:
        raise ConfigError("--limit-train needs training", expected="no --limit-train with "
                          "--load-model", found=args.limit_train)
    Xte, yte, tename = pr.load_target(args.test, "test")
    if args.limit_test is not None:
        Xte, yte = Xte[:args.limit_test], yte[:args.limit_test]
    trname = f"model {args.load_model}"
    check_label_space(getattr(clf, "classes_", None), yte, trname, tename)
    e = pr.evaluate_classifier(clf, None, None, Xte, yte, train_name=trname, test_name=tename,
                               deskew=args.deskew, confidence=args.confidence, fitted=True)
    print(f"{e.classifier}: loaded from {args.load_model} (trained on {e.n_train}), "
          f"test {tename}" + (" (deskewed)" if args.deskew else ""))
    print(f"  {_fmt(e)}")
    return _write_outputs(args, e, e.classifier, trname, tename, _known_label_problems(args.test, e))


def check_label_space(train_labels: npt.ArrayLike | None, test_labels: npt.ArrayLike, trname: str, tename: str) -> None:
    """Refuse a test set with labels the classifier never saw (a letters model on digits).

    >>> import numpy as np
    >>> check_label_space(np.arange(10), np.array([3, 4]), "a", "b")
    >>> check_label_space(np.arange(1, 27), np.arange(10), "letters", "digits")
    Traceback (most recent call last):
    ...
    mnistforge.errors.ConfigError: the test labels are not in the classifier's label space: ...
    """
    import numpy as np

    if train_labels is None:
        return
    known = np.unique(np.asarray(train_labels))
    unseen = np.setdiff1d(np.unique(np.asarray(test_labels)), known)
    if unseen.size:
        shown = ", ".join(str(int(v)) for v in unseen[:5]) + (", ..." if unseen.size > 5 else "")
        raise ConfigError("the test labels are not in the classifier's label space",
                          expected=f"labels among {int(known.min())}..{int(known.max())} "
                                   f"({trname})", found=f"{shown} in {tename}",
                          hint="train and test on the same kind of dataset")


def _known_label_problems(test: str, e: Evaluation) -> dict[str, Any] | None:
    """Print and return how many errors fall on MNIST test's known label problems (else None)."""
    from ..evaluators.label_issues import evaluation_account

    found = evaluation_account(test, e.wrong, e.labels, e.confidence, name=e.classifier, predictions=e.predictions)
    if found is None:
        return None
    for line in found[1]:
        print(f"  {line}")
    return found[0]


def _write_outputs(args: argparse.Namespace, e: Evaluation, name: str, trname: str, tename: str,
                   known: dict[str, Any] | None = None) -> int:
    if args.predictions:
        el.write_predictions(args.predictions, e.predictions, e.labels, name=name,
                             metadata={"classifier": e.classifier, "train": trname,
                                       "train_size": e.n_train, "test": tename, "deskew": e.deskew})
        print(f"wrote {args.predictions}")
    if args.json:
        doc = e.to_dict()
        if known is not None:
            doc["known_label_problems"] = known
        _write_json(args, doc)
    return 0


def _write_json(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    if path := write_json(args, doc):
        print(f"wrote {path}")
