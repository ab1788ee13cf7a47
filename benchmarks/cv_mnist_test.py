"""5-fold cross-validation on the real MNIST test set (docs/classifiers.md, "MNIST" table).

The 10,000 test images are cut into 5 folds by a seeded permutation (``default_rng(0)``,
the same folds as ``tests/test_classifiers.py``): train on 8,000, test on 2,000, five
times, so every image is predicted once.  Per classifier it prints the pooled errors with
Wald and exact 95 % intervals and the summed fit time, and writes the pooled predictions
(in test-set order) for ``mnistforge significance``.

    python benchmarks/cv_mnist_test.py --root ../shared/reference/mnist --out cv \\
        cnn lenet knn:k=3 elm:hidden=2000,seed=0
    mnistforge significance cv/cnn.tsv.gz cv/knn_k_3.tsv.gz cv/elm_hidden_2000_seed_0.tsv.gz

Not part of ``make bench`` (it measures errors, not speed).
"""
from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

import numpy as np

import mnistforge
from mnistforge.classifiers.base import make_classifier
from mnistforge.evaluators import errorlists as el
from mnistforge.evaluators import significance as sg


def folds(n: int, k: int = 5):
    perm = np.random.default_rng(0).permutation(n)
    return np.array_split(perm, k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+", metavar="SPEC")
    ap.add_argument("--root", default="../shared/reference/mnist")
    ap.add_argument("--out", default="cv")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    ds = mnistforge.load("mnist", "test", root=args.root)
    X, y = np.asarray(ds.images), np.asarray(ds.labels)
    parts = folds(len(y), args.folds)
    print(f"MNIST test set, {args.folds}-fold CV ({len(y) - len(parts[0])} train / "
          f"{len(parts[0])} test per fold); load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")
    for spec in args.specs:
        pred = np.empty_like(y)
        fit_s = 0.0
        for test in parts:
            train = np.setdiff1d(np.arange(len(y)), test)
            clf = make_classifier(spec)
            t0 = time.perf_counter()
            clf.fit(X[train], y[train])
            fit_s += time.perf_counter() - t0
            pred[test] = clf.predict(X[test])
        r = sg.error_rate(pred != y, confidence=0.95)
        out = Path(args.out) / (re.sub(r"[^A-Za-z0-9]+", "_", spec).strip("_") + ".tsv.gz")
        el.write_predictions(out, pred, y, name=spec,
                             metadata={"classifier": spec, "protocol": f"{args.folds}-fold CV "
                                       "on the MNIST test set, folds from default_rng(0)"})
        print(f"{spec:28s} {r.errors:5d} / {r.n} = {100 * r.rate:5.2f} %  Wald "
              f"{100 * r.wald[0]:.2f}-{100 * r.wald[1]:.2f}  exact {100 * r.exact[0]:.2f}-"
              f"{100 * r.exact[1]:.2f}  fit {fit_s:7.1f} s (5 folds)  -> {out}")


if __name__ == "__main__":
    main()
