"""Benchmark of ``mnistforge verify``.

1. The near-duplicate search, 10,000 test images against 60,000 training
   images: our blocked search (pooled pre-filter + float32 matrix products +
   exact check of the candidates) against a brute-force NumPy loop (one query
   at a time, full 784-pixel distances).  The loop is timed on a sample of
   queries and extrapolated to 10,000 (it would take minutes); both must give
   the same pairs on that sample.
2. A full ``verify`` of a 70,000-image build folder (60,000 train + 10,000 test).

Data: the real MNIST test images when ``../shared/reference/mnist`` is present
(the training set is made of shifted and lightly perturbed copies of them, so
the search finds real near-duplicates), else synthetic strokes.

Run: ``.venv/bin/python benchmarks/bench_verify.py [--queries-brute 100]``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MNIST = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared")) / "reference" / "mnist"


def test_images(rng):
    from mnistforge.io.idx import read_idx

    p = MNIST / "t10k-images-idx3-ubyte.gz"
    if p.is_file():
        return np.asarray(read_idx(p)), np.asarray(read_idx(MNIST / "t10k-labels-idx1-ubyte.gz")), \
            "real MNIST test images"
    x = np.zeros((10000, 28, 28), np.uint8)
    for k in range(10000):
        r = np.clip(np.rint(np.linspace(rng.uniform(4, 8), rng.uniform(20, 24), 60)), 1, 26)
        c = np.clip(np.rint(14 + np.cumsum(rng.normal(0, 0.4, 60))), 2, 25)
        x[k, r.astype(int), c.astype(int)] = 255
        x[k, r.astype(int), c.astype(int) + 1] = 160
    return x, rng.integers(0, 10, 10000).astype(np.uint8), "synthetic strokes"


def train_from(test, rng, n=60000):
    """60,000 images: copies of the test images, some shifted (+-2 px), ink lightly perturbed."""
    idx = rng.integers(0, len(test), n)
    out = np.empty((n, 28, 28), np.uint8)
    for s in range(0, n, 5000):
        blk = test[idx[s:s + 5000]].copy()
        # A third of the blocks stay in place (near-duplicates to find), the
        # rest move by up to two pixels (far under L2, like different drawings).
        dy, dx = rng.integers(-2, 3, 2) if (s // 5000) % 3 else (0, 0)
        blk = np.roll(blk, (int(dy), int(dx)), axis=(1, 2))
        noise = rng.integers(-3, 4, blk.shape) * (rng.random(blk.shape) < 0.05) * (blk > 0)
        out[s:s + 5000] = np.clip(blk.astype(np.int16) + noise, 0, 255)
    return out, idx


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries-brute", type=int, default=100,
                    help="queries timed with the brute-force loop (extrapolated to 10,000)")
    ap.add_argument("--threshold", type=float, default=None, help="L2 radius (default 128)")
    args = ap.parse_args(argv)

    from mnistforge.checks import verify
    from mnistforge.checks.duplicates import (DEFAULT_NEAR_L2, find_near_duplicates,
                                              nearest_brute_force)
    from mnistforge.io.idx import write_idx
    from mnistforge.io.manifest import write_manifest

    t = args.threshold or DEFAULT_NEAR_L2
    rng = np.random.default_rng(0)
    test, test_labels, what = test_images(rng)
    train, idx = train_from(test, rng)
    print(f"data: {what}; train = 60,000 shifted/perturbed copies; threshold L2 {t:g}")

    t0 = time.perf_counter()
    fast = find_near_duplicates(test, train, t, progress_bar=False)
    t_fast = time.perf_counter() - t0
    print(f"blocked search 10,000 x 60,000: {t_fast:.2f} s, {len(fast)} pairs, "
          f"{fast.queries.size} test images with a near-duplicate, "
          f"{fast.candidates} candidates after the pre-filter")

    q = args.queries_brute
    t0 = time.perf_counter()
    slow = nearest_brute_force(test[:q], train, t)
    t_slow = time.perf_counter() - t0
    t_slow_full = t_slow * len(test) / q
    sub = fast.pairs[fast.pairs[:, 0] < q]
    assert sub.tolist() == slow.pairs.tolist(), "blocked search and brute force disagree"
    print(f"brute-force loop: {t_slow:.2f} s for {q} queries -> {t_slow_full:.1f} s for 10,000 "
          f"(extrapolated); same pairs on the sample")
    print(f"ratio (brute force / blocked): {t_slow_full / t_fast:.1f}x")

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "mnist70k"
        d.mkdir()
        train_labels = test_labels[idx]
        write_idx(d / "train-images-idx3-ubyte.gz", train)
        write_idx(d / "train-labels-idx1-ubyte.gz", train_labels)
        write_idx(d / "t10k-images-idx3-ubyte.gz", test)
        write_idx(d / "t10k-labels-idx1-ubyte.gz", test_labels)
        write_manifest(d, kind="mnist", inputs={"bench": True}, parameters={})
        t0 = time.perf_counter()
        rep = verify(d, near_threshold=t)
        t_ver = time.perf_counter() - t0
    c = rep.counts()
    print(f"full verify of 70,000 images: {t_ver:.2f} s ({c['pass']} passed, {c['warn']} "
          f"warnings, {c['fail']} failed: the copies are meant to be found)")
    for r in rep.results:
        if r.status != "pass":
            print(f"  {r.status.upper()} {r.name}: {r.message}")


if __name__ == "__main__":
    main()
