"""The MNIST 5-fold cross-validation table of docs/classifiers.md, and its paired comparisons.

The 10,000 real MNIST test images (``../shared/reference/mnist``) are cut into 5 folds by
``default_rng(0).permutation``; each classifier trains on 8,000 and is tested on 2,000, five
times.  Prints the table rows (errors, Wald and exact 95 % intervals) and the POI
(ties counted half) of every pair, then the comparisons quoted in the docs.

Run: ``.venv/bin/python benchmarks/table_mnist_cv.py [--no-elm]``  (about a minute on 2 cores)
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MNIST = ROOT.parent / "shared" / "reference" / "mnist"

ROWS = [("knn1", "k-NN, k = 1"), ("knn3", "k-NN, k = 3"), ("knn5", "k-NN, k = 5"),
        ("linear", "linear (ridge LS)"), ("elm", "ELM, 2,000 sigmoid units"),
        ("dknn1", "deskewed k-NN, k = 1"), ("dknn3", "deskewed k-NN, k = 3"),
        ("dlinear", "deskewed linear")]


def cv_wrong(X, y, elm: bool = True) -> dict:
    """Per-image wrong flags of each classifier over the 5 folds."""
    from mnistforge.classifiers.base import make_classifier
    from mnistforge.classifiers.knn import KNNClassifier
    from mnistforge.classifiers.linear import LinearClassifier
    from mnistforge.classifiers.preprocess import deskew

    Xd = deskew(X)
    perm = np.random.default_rng(0).permutation(len(y))
    wrong = {k: np.zeros(len(y), bool) for k, _ in ROWS if elm or k != "elm"}
    for part in np.array_split(perm, 5):
        te = np.zeros(len(y), bool)
        te[part] = True
        for pre, XX, ks in (("", X, (1, 3, 5)), ("d", Xd, (1, 3))):
            sweep = KNNClassifier().fit(XX[~te], y[~te]).predict_sweep(XX[te], ks)
            for k in ks:
                wrong[f"{pre}knn{k}"][te] = sweep[k] != y[te]
            pred = LinearClassifier().fit(XX[~te], y[~te]).predict(XX[te])
            wrong[f"{pre}linear"][te] = pred != y[te]
        if elm:
            pred = make_classifier("elm:hidden=2000").fit(X[~te], y[~te]).predict(X[te])
            wrong["elm"][te] = pred != y[te]
    return wrong


def row_text(name: str, w: np.ndarray) -> str:
    """``| name | errors | rate | Wald | exact |`` as in the docs table."""
    from mnistforge.evaluators.significance import error_rate

    r = error_rate(w)
    return (f"| {name} | {r.errors:,} | {100 * r.rate:.2f} % | {100 * r.wald[0]:.2f}-"
            f"{100 * r.wald[1]:.2f} | {100 * r.exact[0]:.2f}-{100 * r.exact[1]:.2f} |")


def main(argv=None):
    from mnistforge.evaluators import significance as sg
    from mnistforge.io.idx import read_idx

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-elm", action="store_true")
    args = ap.parse_args(argv)
    X = np.asarray(read_idx(MNIST / "t10k-images-idx3-ubyte.gz"))
    y = np.asarray(read_idx(MNIST / "t10k-labels-idx1-ubyte.gz"))
    wrong = cv_wrong(X, y, elm=not args.no_elm)
    names = dict(ROWS)
    for k, w in wrong.items():
        print(row_text(names[k], w))
    c = sg.compare_systems(wrong, resamples=100_000, seed=0)
    print("\nPOI(row beats column), ties counted half")
    for i, a in enumerate(c.names):
        print(f"{a:>8} " + " ".join(f"{c.poi[i, j]:6.3f}" for j in range(len(c.names))))
    pairs = {(p["a"], p["b"]): p for p in c.pairs()}
    for a, b in (("knn3", "knn5"), ("elm", "knn3")):
        if (a, b) in pairs:
            p = pairs[(a, b)]
            print(f"{a} vs {b}: n12 = {p['n12']}, n21 = {p['n21']}, POI({a} better) = "
                  f"{p['poi_a_better']:.3f}, K = {p['max_bonferroni_k']}, McNemar p = "
                  f"{p['mcnemar_p']:.3f}")
    print("load %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
