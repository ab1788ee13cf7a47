"""Manitest speed (batched vs per node; path refinement vs march only) and accuracy.

Workload: the linear classifier and the dilation+rotation group on MNIST (the real test
set from ../shared/reference when present: trained on its first 5,000 images, scored on
images from the last 5,000) or, without it, on synthetic bar images.  Both runs use the same
fast marching; the alternative evaluates the warp, metric and classifier for each node on
its own (what a straightforward implementation does), ours in batches of newly created
nodes.  The march distances found must agree; the ratio of speeds is printed.

Before/after the path refinement (issue 19): the march alone (what was reported as the
distance before) against ``score_image`` with ``refine=False`` (the straight path to the
march's ``t*``) and the default (shortest of straight, grid and refined two-segment paths,
near-tied changed nodes included), and ``flip=True`` (``t*`` moved off the grid to where the
label changes along that path).

``--accuracy N``: on N MNIST test digits (5000, 5001, ... plus 6384 and 9666), both 2-D
groups, the reported distance and the march value against the independent reference
geodesic of ``tests/manitest_reference.py`` (SciPy warps, two-segment Nelder-Mead), and
against the chord ``||I_t* - I||``: the table of docs/manitest.md.

Run: ``.venv/bin/python benchmarks/bench_manitest.py [--images 40] [--group dilation-rotation]
[--accuracy 30]``
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mnistforge.classifiers.base import make_classifier  # noqa: E402
from mnistforge.evaluators.manitest import (get_group, score_image, spline_image,  # noqa: E402
                                            warp_nodes)
from mnistforge.evaluators.manitest.marching import fast_march  # noqa: E402
from mnistforge.evaluators.manitest.warp import as_float_images  # noqa: E402

MNIST = ROOT.parent / "shared" / "reference" / "mnist"


def load_data():
    if (MNIST / "t10k-images-idx3-ubyte.gz").is_file():
        from mnistforge.io.idx import read_idx
        X = np.asarray(read_idx(MNIST / "t10k-images-idx3-ubyte.gz"))
        y = np.asarray(read_idx(MNIST / "t10k-labels-idx1-ubyte.gz"))
        return X[:5000], y[:5000], X[5000:], "MNIST test set (train 0:5000, score 5000:)"
    rng = np.random.default_rng(0)
    X = np.zeros((2000, 28, 28))
    y = rng.integers(0, 2, 2000)
    for i in range(2000):
        prof = np.exp(-((np.arange(28) - rng.uniform(10, 17)) / rng.uniform(1.5, 3)) ** 2)
        X[i] = np.outer(prof, np.ones(28)) if y[i] == 0 else np.outer(np.ones(28), prof)
    X = (X * 255).astype(np.uint8)
    return X[:1000], y[:1000], X[1000:], "synthetic bars (MNIST reference absent)"


def score_per_node(image, clf, group, cap):
    """The same march, evaluating one node at a time (the unbatched alternative)."""
    img = as_float_images(image)
    spl = spline_image(img)
    steps = np.asarray(group.steps)
    label = clf.predict(img[None])[0]

    def evaluate(K):
        Gs, labels = [], []
        for k in K:
            out, J = warp_nodes(spl, group, (k * steps)[None])
            Gs.append(J[0].T @ J[0])
            labels.append(clf.predict(out)[0])
        return np.array(Gs), np.array(labels)

    lo, hi = group.grid_limits()
    # block_side=1: nodes are created only when the front reaches them
    res = fast_march(group.steps, lo, hi, evaluate, cap=cap, stop=lambda lab: lab != label,
                     block_side=1)
    return res.values[res.stop_node] if res.stop_node else None, res.created


def march_only(image, clf, group, cap):
    """The march alone, batched as in score_image: what was reported before the paths."""
    img = as_float_images(image)
    spl = spline_image(img)
    steps = np.asarray(group.steps)
    label = clf.predict(img[None])[0]

    def evaluate(K):
        out, J = warp_nodes(spl, group, K * steps)
        return np.matmul(J.transpose(0, 2, 1), J), clf.predict(out)

    lo, hi = group.grid_limits()
    res = fast_march(group.steps, lo, hi, evaluate, cap=cap, stop=lambda lab: lab != label)
    return res.values[res.stop_node] if res.stop_node else None


def accuracy(n, clf, Xte, offset):
    """Reported distance and march value against the independent reference geodesic."""
    sys.path.insert(0, str(ROOT / "tests"))
    from manitest_reference import reference_geodesic

    idx = list(range(5000, 5000 + n - 2)) + [6384, 9666]
    print(f"accuracy on MNIST test digits {idx[0]}-{idx[-3]}, 6384, 9666 (linear classifier)")
    print("| group | images | reported / reference: min, median, max | reported / chord: min "
          "| march / reference: min, max | march below the chord |")
    print("|---|---|---|---|---|---|")
    for g in ("translation", "dilation-rotation"):
        rows = []
        for i in idx:
            r = score_image(Xte[i - offset], clf, g)
            ref, straight, chord = reference_geodesic(Xte[i - offset], g, r.params)
            rows.append((r.distance / ref, r.distance / chord, r.march_distance / ref,
                         r.march_distance < chord))
        a = np.array(rows, float)
        print(f"| {g} | {len(idx)} | {a[:, 0].min():.4f}, {np.median(a[:, 0]):.4f}, "
              f"{a[:, 0].max():.4f} | {a[:, 1].min():.3f} | {a[:, 2].min():.3f}, "
              f"{a[:, 2].max():.3f} | {int(a[:, 3].sum())} of {len(idx)} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=40)
    ap.add_argument("--group", default="dilation-rotation")
    ap.add_argument("--cap", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--long-cap", type=int, default=2000, help="node cap of the long searches")
    ap.add_argument("--accuracy", type=int, default=0, metavar="N",
                    help="compare N MNIST digits with the reference geodesic (needs ../shared)")
    args = ap.parse_args(argv)
    Xtr, ytr, Xte, what = load_data()
    clf = make_classifier("linear").fit(Xtr, ytr)
    if args.accuracy:
        if not what.startswith("MNIST"):
            print("--accuracy needs the MNIST test set in ../shared/reference/mnist")
            return 2
        accuracy(max(args.accuracy, 3), clf, Xte, 5000)
        return 0
    group = get_group(args.group)
    idx = np.random.default_rng(args.seed).choice(len(Xte), args.images, replace=False)
    print(f"workload: {what}; linear classifier; group {group.describe()}; "
          f"{args.images} images")

    print("load %.2f %.2f %.2f" % os.getloadavg())
    t0 = time.perf_counter()
    before = [march_only(Xte[i], clf, group, args.cap) for i in idx]
    t_march = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = [score_image(Xte[i], clf, group, cap=args.cap, refine=False) for i in idx]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = [score_image(Xte[i], clf, group, cap=args.cap) for i in idx]
    t_full = time.perf_counter() - t0
    t0 = time.perf_counter()
    flip = [score_image(Xte[i], clf, group, cap=args.cap, flip=True) for i in idx]
    t_flip = time.perf_counter() - t0
    t0 = time.perf_counter()
    base = [score_per_node(Xte[i], clf, group, args.cap) for i in idx]
    t_base = time.perf_counter() - t0

    diffs = [abs(a.march_distance - b[0]) / max(a.march_distance, 1e-12)
             for a, b in zip(ours, base) if a.distance is not None and b[0] is not None]
    same = all(d < 1e-9 for d in diffs) and len(diffs) == sum(a.distance is not None for a in ours)
    same = same and all(b is None or abs(b - a.march_distance) < 1e-9 * b
                        for a, b in zip(ours, before))
    nodes = sum(r.created for r in ours)
    visited = sum(r.visited for r in ours)
    print(f"batched   : {args.images / t_ours:8.2f} images/s ({t_ours:.2f} s; "
          f"{nodes} nodes evaluated, {visited} visited)")
    print(f"per node  : {args.images / t_base:8.2f} images/s ({t_base:.2f} s; "
          f"{sum(b[1] for b in base)} nodes evaluated)")
    print(f"ratio (batched / per node): {t_base / t_ours:.2f}x; same march distances: {same}")
    print(f"march only (the distance reported before): {args.images / t_march:8.2f} images/s; "
          f"+ straight path (refine=False): {args.images / t_ours:8.2f} images/s "
          f"({t_ours / t_march:.2f}x the time); default refinement: "
          f"{args.images / t_full:8.2f} images/s ({t_full / t_march:.2f}x the time)")
    shrink = [f.distance / g.distance for f, g in zip(flip, full) if g.distance]
    print(f"flip=True (t* off the grid): {args.images / t_flip:8.2f} images/s "
          f"({t_flip / t_march:.2f}x the march's time); distance / grid distance: median "
          f"{np.median(shrink):.3f}, min {min(shrink):.3f}")
    moved = [f.params != o.params for f, o in zip(full, ours) if f.params is not None]
    print(f"refinement moved t* to a near-tied changed node on {sum(moved)} of {len(moved)} "
          f"images; load %.2f %.2f %.2f" % os.getloadavg())

    # long searches: a classifier as costly as the linear one that never changes its label,
    # so every image runs to the node cap (the case batching is for)
    class Invariant:
        def predict(self, x):
            clf.predict(x)
            return np.zeros(len(x), int)

    inv, n_long, cap = Invariant(), max(2, args.images // 10), args.long_cap
    t0 = time.perf_counter()
    long_ours = [score_image(Xte[i], inv, group, cap=cap) for i in idx[:n_long]]
    t_lo = time.perf_counter() - t0
    t0 = time.perf_counter()
    long_base = [score_per_node(Xte[i], inv, group, cap) for i in idx[:n_long]]
    t_lb = time.perf_counter() - t0
    assert all(r.status != "changed" and b[0] is None for r, b in zip(long_ours, long_base))
    print(f"long searches ({n_long} images to the {cap}-node cap): batched "
          f"{n_long * cap / t_lo:8.0f} nodes/s, per node {n_long * cap / t_lb:8.0f} nodes/s, "
          f"ratio {t_lb / t_lo:.2f}x")
    return 0 if same else 1


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    raise SystemExit(main())
