"""Benchmark: k-NN and ELM fitting against naive NumPy (and scikit-learn when installed).

* k-NN, ``--test`` x ``--train`` (default 10,000 x 60,000, 784-D, random uint8 images):
  our blocked float32 product + argpartition vs a naive NumPy version (per test row, full
  float64 distance vector and argsort), timed on ``--naive-rows`` (50) rows and extrapolated;
  and ``sklearn.neighbors.KNeighborsClassifier(algorithm="brute")`` when scikit-learn is
  installed (the ``bench`` extra).
* ELM fit, ``--elm-n`` (10,000) samples x ``--hidden`` (1,500) units: blocked normal equations (float64
  ``dsyrk`` accumulation) vs naive NumPy (whole float64 hidden matrix, then
  ``numpy.linalg.lstsq``), and vs the OPIUM streaming solver.

Ratios are printed. ``--quick`` shrinks everything for a smoke run.

    python benchmarks/bench_classifiers.py [--quick] [--train 60000 --test 10000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mnistforge.classifiers.elm import ELMClassifier
from mnistforge.classifiers.knn import KNNClassifier


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def naive_knn(Xtr, ytr, Xte, k):
    A = Xtr.reshape(len(Xtr), -1).astype(np.float64) / 255
    out = np.empty(len(Xte), ytr.dtype)
    for i, x in enumerate(Xte.reshape(len(Xte), -1).astype(np.float64) / 255):
        d = ((A - x) ** 2).sum(axis=1)
        nn = np.argsort(d, kind="stable")[:k]
        votes = np.bincount(ytr[nn])
        tied = np.flatnonzero(votes == votes.max())
        out[i] = next(lab for lab in ytr[nn] if lab in tied)  # same tie rule: nearest
    return out


def naive_elm_fit(clf, X, y):
    H = clf._design(X).astype(np.float64)
    Y = (y[:, None] == np.unique(y)).astype(np.float64)
    m = H.shape[1]
    A = np.vstack([H, np.sqrt(clf.ridge) * np.eye(m)])
    return np.linalg.lstsq(A, np.vstack([Y, np.zeros((m, Y.shape[1]))]), rcond=None)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=60_000)
    ap.add_argument("--test", type=int, default=10_000)
    ap.add_argument("--naive-rows", type=int, default=50)
    ap.add_argument("--elm-n", type=int, default=10_000)
    ap.add_argument("--hidden", type=int, default=1_500)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.train, args.test, args.naive_rows, args.elm_n, args.hidden = 5000, 1000, 50, 3000, 300

    rng = np.random.default_rng(0)
    # smooth-ish random "images" so neighbours are not all equidistant
    Xtr = rng.integers(0, 256, (args.train, 28, 28), dtype=np.uint8)
    ytr = rng.integers(0, 10, args.train)
    Xte = rng.integers(0, 256, (args.test, 28, 28), dtype=np.uint8)

    print(f"== k-NN (k=3), {args.test} test x {args.train} training images")
    clf = KNNClassifier(k=3).fit(Xtr, ytr)
    ours, t_ours = timed(clf.predict, Xte)
    print(f"mnistforge blocked k-NN:     {t_ours:8.2f} s")
    sub = Xte[:args.naive_rows]
    naive, t_naive = timed(naive_knn, Xtr, ytr, sub, 3)
    t_naive_full = t_naive * args.test / len(sub)
    agree = float((naive == ours[:len(sub)]).mean())
    print(f"naive NumPy, {len(sub)} rows:      {t_naive:8.2f} s -> {t_naive_full:.1f} s "
          f"extrapolated (agreement {agree:.3f})")
    print(f"ratio naive/ours: {t_naive_full / t_ours:.1f}x")
    try:
        from sklearn.neighbors import KNeighborsClassifier
    except ImportError:
        print("scikit-learn not installed: skipping its brute-force k-NN (pip install "
              "'mnistforge[bench]')")
    else:
        sk = KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(
            Xtr.reshape(len(Xtr), -1).astype(np.float32) / 255, ytr)
        skp, t_sk = timed(sk.predict, Xte.reshape(len(Xte), -1).astype(np.float32) / 255)
        print(f"scikit-learn brute k-NN:     {t_sk:8.2f} s (agreement {(skp == ours).mean():.3f})")
        print(f"ratio sklearn/ours: {t_sk / t_ours:.2f}x")

    print(f"\n== ELM fit, {args.elm_n} samples x {args.hidden} hidden units")
    X = Xtr[:args.elm_n]
    y = ytr[:args.elm_n]
    normal, t_normal = timed(ELMClassifier(hidden=args.hidden, seed=0).fit, X, y)
    print(f"blocked normal equations:    {t_normal:8.2f} s")
    W, t_lstsq = timed(naive_elm_fit, normal, X, y)
    H = normal._design(X[:2000]).astype(np.float64)
    agree = float(((H @ W).argmax(1) == normal.predict(X[:2000])).mean())
    print(f"naive NumPy lstsq (float64): {t_lstsq:8.2f} s (max |dW| "
          f"{np.abs(W - normal.coef_).max():.1e}, prediction agreement {agree:.4f})")
    print(f"ratio naive/ours: {t_lstsq / t_normal:.1f}x")
    n_op = min(len(X), 5000)
    _, t_op = timed(ELMClassifier(hidden=args.hidden, seed=0, solver="opium", block=512).fit,
                    X[:n_op], y[:n_op])
    print(f"OPIUM streaming, {n_op} samples: {t_op:8.2f} s -> "
          f"{t_op * len(X) / n_op:.1f} s extrapolated; ratio OPIUM/normal "
          f"{t_op * len(X) / n_op / t_normal:.1f}x")


if __name__ == "__main__":
    main()
