"""Benchmark: MNIST preprocessing, vectorised batch vs the per-image oracle.

Usage::

    python benchmarks/bench_mnist_prepro.py [--oracle 300] [--batch 4000] [--scale 0.005]
    python benchmarks/bench_mnist_prepro.py --build SD19_FOLDER [--qmnist-labels DIR]

The default run (about a minute) writes a small synthetic SD19 to a temporary
folder, decodes its digits, and times on the same images

* the oracle :func:`preprocess_one` (a Python loop per image) on ``--oracle`` images,
* the batch :func:`preprocess` on ``--batch`` images (warm: weight tables built),
* decoding alone (``SD19Source.read``, all cores), to show which of the two
  dominates a build,

checks the two implementations agree byte for byte, and prints images per second
and the ratio (target: at least 20x).  ``--build`` additionally times a full
``build qmnist`` from the given SD19 folder (target: under 10 minutes on 2 cores
for a full-scale source).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mnistforge.builders.mnist_prepro import preprocess, preprocess_one  # noqa: E402


def timed(fn, *a, repeat=1, **kw):
    best, out = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*a, **kw)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--oracle", type=int, default=300, help="images for the oracle")
    ap.add_argument("--batch", type=int, default=4000, help="images for the batch version")
    ap.add_argument("--scale", type=float, default=0.005, help="synthetic SD19 scale")
    ap.add_argument("--pipeline", type=int, default=16000,
                    help="images (the digits repeated) for the decode+preprocess strategies")
    ap.add_argument("--build", default=None, help="also time `build qmnist` from this SD19 folder")
    ap.add_argument("--qmnist-labels", default=None, help="published tables for --build")
    args = ap.parse_args(argv)
    os.environ.setdefault("MNISTFORGE_PROGRESS", "0")

    from mnistforge.sd19.reader import open_sd19
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        path = synthesize_sd19(Path(tmp) / "sd19", SynthConfig(
            scale=args.scale, fields="d", hierarchies=("by_write",), by_write_cls=True), progress=False)
        src = open_sd19(path, progress=False)
        rows = src.digits()
        print(f"synthetic SD19: {rows.size} digits ({time.perf_counter() - t:.1f} s to write and index)")
        t_dec, imgs = timed(src.read_all, rows, workers=1)
        print(f"decode alone (1 process)     : {rows.size / t_dec:9.0f} img/s")
        from mnistforge.builders.mnist_prepro import MnistPreproConfig
        from mnistforge.builders.qmnist import mnist_product
        many = np.tile(rows, max(1, args.pipeline // rows.size))
        from mnistforge.settings import current
        t_s, _ = timed(src.make, [mnist_product(MnistPreproConfig())], many, progress=False)
        print(f"decode+preprocess {many.size} images in worker processes: "
              f"{many.size / t_s:7.0f} img/s ({current().workers} processes)")

    reps = -(-args.batch // len(imgs))
    batch = np.concatenate([imgs] * reps)[: args.batch]
    sub = imgs[: args.oracle]

    preprocess(batch[:500])                               # build the weight tables once
    t_fast, fast = timed(preprocess, batch, repeat=2)
    t_slow, slow = timed(lambda: np.stack([preprocess_one(im) for im in sub]))
    same = np.array_equal(fast[: len(sub)], slow)
    fast_rate, slow_rate = len(batch) / t_fast, len(sub) / t_slow
    print(f"oracle preprocess_one        : {slow_rate:9.0f} img/s  ({len(sub)} images)")
    print(f"batch preprocess (1 process) : {fast_rate:9.0f} img/s  ({len(batch)} images)")
    print(f"byte-identical on the shared images: {same}")
    print(f"ratio batch/oracle: {fast_rate / slow_rate:.1f}x (target >= 20x)")
    print(f"decode/preprocess time per image (1 process): {fast_rate / (rows.size / t_dec):.2f} "
          "(>1: decoding dominates a build)")

    if args.build:
        from mnistforge.builders.qmnist import QmnistBuildConfig, build_qmnist
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            build_qmnist(args.build, Path(tmp) / "qmnist",
                         QmnistBuildConfig(qmnist_labels=args.qmnist_labels, progress=False))
            print(f"build qmnist from {args.build}: {time.perf_counter() - t:.0f} s "
                  "(target < 600 s for a full-scale source on 2 cores)")
    return 0 if same else 1


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    raise SystemExit(main())
