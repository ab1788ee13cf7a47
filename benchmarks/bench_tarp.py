"""TARP speed: vectorised n-TARP nodes vs a straightforward per-direction loop.

B_k^n for n = 100, k = 0..5 on 12,000 MNIST-sized images (the real MNIST test set
repeated with noise when ../shared is present, random digits-like data otherwise).
Both sides run the same trees (same seeds, same results); the ratio is printed.

Usage: python benchmarks/bench_tarp.py [--runs 100] [--naive-runs 5]
"""
from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

from mnistforge.evaluators import tarp

REF = Path(__file__).resolve().parents[1].parent / "shared/reference/mnist"


def load_data(n=12000):
    rng = np.random.default_rng(0)
    if (REF / "t10k-images-idx3-ubyte.gz").is_file():
        from mnistforge.io.idx import read_idx
        im = read_idx(REF / "t10k-images-idx3-ubyte.gz").astype(np.float32) / 255
        lab = np.asarray(read_idx(REF / "t10k-labels-idx1-ubyte.gz"))
        reps = math.ceil(n / len(lab))
        X = np.concatenate([im.reshape(len(lab), -1)] * reps)[:n]
        X = X + rng.normal(0, 0.05, X.shape).astype(np.float32)
        y = (np.concatenate([lab] * reps)[:n] % 2).astype(np.int64)
        return X, y, "MNIST test digits, even vs odd"
    X = rng.random((n, 784), dtype=np.float32)
    y = (X[:, :392].sum(1) > X[:, 392:].sum(1)).astype(np.int64)
    return X, y, "random 784-d data"


def naive_best_split(X, y, n, rng, parent_label):
    """One direction at a time: projection, Gaussian fit, threshold, Gini."""
    m, n1 = y.size, int(y.sum())
    if n1 == 0 or n1 == m:
        return None
    R = rng.uniform(-1.0, 1.0, size=(X.shape[1], n)).astype(X.dtype, copy=False)
    best = None
    for j in range(n):
        p = np.array([float(np.dot(x, R[:, j])) for x in X])[:, None]
        t = float(tarp.gaussian_thresholds(p, y)[0])
        right = p[:, 0] > t
        cr, cr1 = right.sum(), (right & (y == 1)).sum()
        cl, cl1 = m - cr, n1 - cr1
        g = lambda c1, c: 0.0 if c == 0 else 2 * (c1 / c) * (1 - c1 / c)
        gain = g(n1, m) - (cl * g(cl1, cl) + cr * g(cr1, cr)) / m
        if best is None or gain > best[0]:
            best = (gain, j, t, cl1, cl, cr1, cr)
    gain, j, t, cl1, cl, cr1, cr = best
    return tarp.NodeSplit(R[:, j].copy(), t, tarp.majority_from_counts(cl1, cl, parent_label),
                          tarp.majority_from_counts(cr1, cr, parent_label), gain)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--naive-runs", type=int, default=2)
    a = ap.parse_args()
    X, y, what = load_data()
    print(f"data: {what}, {len(y)} samples, n=100, k=0..5; load %.2f %.2f %.2f"
          % os.getloadavg())
    t = time.perf_counter()
    res = tarp.tarp_bounds(X, y, ns=[100], ks=range(6), runs=a.runs, seed=0, progress=True)
    t_par = time.perf_counter() - t
    t = time.perf_counter()
    tarp.tarp_bounds(X, y, ns=[100], ks=range(6), runs=a.naive_runs, seed=0, workers=1,
                     progress=True)
    t_vec1 = (time.perf_counter() - t) / a.naive_runs
    orig = tarp.best_split
    tarp.best_split = naive_best_split
    try:
        t = time.perf_counter()
        tarp.tarp_bounds(X, y, ns=[100], ks=range(6), runs=a.naive_runs, seed=0, workers=1,
                         progress=True)
        t_naive = (time.perf_counter() - t) / a.naive_runs
    finally:
        tarp.best_split = orig
    for r in res.results:
        print(f"  B_{r['k']}^100 = {r['mean']:.4f} +- {r['stderr']:.4f}")
    print(f"vectorised, all cores: {a.runs} runs in {t_par:.1f} s ({t_par / a.runs:.3f} s/run)")
    print(f"vectorised, 1 core: {t_vec1:.3f} s/run; per-direction loop, 1 core: {t_naive:.3f} s/run")
    print(f"ratio per-direction loop / vectorised (1 core): {t_naive / t_vec1:.1f}x; "
          f"/ vectorised (all cores): {t_naive / (t_par / a.runs):.1f}x")


if __name__ == "__main__":
    main()
