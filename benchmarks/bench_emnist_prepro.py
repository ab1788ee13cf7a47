"""Benchmark: batched EMNIST conversion vs the per-image SciPy/Pillow definition, and a full build.

1. Conversion of ``--n`` handwriting-like 128x128 characters (the synthetic
   SD19 glyph renderer): :func:`convert_batch` (one thread, and the build's
   thread pool over ``--workers``) against :func:`convert_reference` (SciPy
   ``gaussian_filter`` + Pillow ``BICUBIC``, one image at a time).  Prints
   images/s, the ratio and the largest pixel difference.
2. A build of all six datasets from a synthetic SD19 at ``--scale`` (default
   0.01, ~8,100 characters), timed end to end (reading the zips, converting,
   writing), then extrapolated linearly to the 814,255 characters of a complete
   SD19 -- an extrapolation, printed as such.  ``--scale 1`` synthesises and
   builds the full-scale replica (tens of minutes for the synthesis alone, ~3 GB
   of disk in a temporary folder).

    python benchmarks/bench_emnist_prepro.py [--n 4000] [--scale 0.01] [--workers 2]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from mnistforge.builders.emnist_prepro import convert_batch, convert_reference

SD19_TOTAL = 814_255


def glyphs(n: int, seed: int = 0) -> np.ndarray:
    from mnistforge.sd19.glyphs import draw_writer_style, render_characters

    rng = np.random.default_rng(seed)
    codes = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                          np.uint8)
    out = []
    while sum(len(o) for o in out) < n:
        out.append(render_characters(rng.choice(codes, 50), draw_writer_style(rng), rng))
    return np.concatenate(out)[:n]


def best_of(fn, repeat):
    """Best wall time and best CPU time (process_time: robust on a shared machine)."""
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        res = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(times), min(cpu), res


def threaded(x, workers, batch=1024):
    with cf.ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(convert_batch, [x[i:i + batch] for i in range(0, len(x), batch)]))
    return np.concatenate(parts)


def bench_conversion(args):
    x = glyphs(args.n)
    n_ref = min(args.n, args.ref_n)
    t_batch, c_batch, y = best_of(lambda: convert_batch(x), args.repeat)
    t_thr, c_thr, y2 = best_of(lambda: threaded(x, args.workers), args.repeat)
    t_ref, c_ref, ref = best_of(lambda: np.stack([convert_reference(im) for im in x[:n_ref]]), 1)
    diff = np.abs(y[:n_ref].astype(int) - ref)
    assert np.array_equal(y, y2)
    r_batch, r_thr, r_ref = args.n / t_batch, args.n / t_thr, n_ref / t_ref
    print(f"conversion of {args.n} synthetic characters (128x128 -> 28x28); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("                                        wall images/s   per CPU-second")
    print(f"  per-image SciPy + Pillow reference : {r_ref:9,.0f}     {n_ref / c_ref:9,.0f}"
          f"   ({n_ref} images)")
    print(f"  batched, 1 thread                  : {r_batch:9,.0f}     {args.n / c_batch:9,.0f}")
    print(f"  batched, {args.workers} threads                 : {r_thr:9,.0f}     "
          f"{args.n / c_thr:9,.0f}")
    print(f"  ratio batched/reference            : {r_batch / r_ref:9.1f}x    "
          f"{(args.n / c_batch) / (n_ref / c_ref):9.1f}x  (threads, wall: {r_thr / r_ref:.1f}x)")
    print(f"  agreement: max |diff| {diff.max()} grey level, "
          f"{(diff > 0).mean() * 100:.4f}% of pixels differ")
    return r_thr


def bench_build(args):
    from mnistforge.builders.emnist import build_emnist
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    base = Path(tempfile.mkdtemp(prefix="bench-emnist-"))
    try:
        t0 = time.perf_counter()
        sd = synthesize_sd19(base / "sd19", SynthConfig(
            scale=args.scale, seed=0, hierarchies=("by_write", "by_class"),
            workers=args.workers), progress=None)
        t_synth = time.perf_counter() - t0
        # First open builds and caches the index (a one-off per source): time it apart.
        from mnistforge.sd19 import open_sd19
        t0 = time.perf_counter()
        src = open_sd19(sd)
        t_index = time.perf_counter() - t0
        n = len(src.index)
        import resource

        def cpu_all():
            a = resource.getrusage(resource.RUSAGE_SELF)
            b = resource.getrusage(resource.RUSAGE_CHILDREN)
            return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

        t0, c0, ca = time.perf_counter(), time.process_time(), cpu_all()
        m = build_emnist(src, base / "emnist", workers=args.workers)
        t_build, c_build = time.perf_counter() - t0, time.process_time() - c0
        c_all = cpu_all() - ca
        size = sum(v["bytes"] for v in m.outputs.values())
        print(f"full build of all six datasets, synthetic SD19 scale {args.scale:g} "
              f"({n:,} characters, {args.workers} workers)")
        print(f"  synthesis {t_synth:.1f} s (not part of the build); first open + index "
              f"{t_index:.1f} s")
        print(f"  build (read zips, convert once, write {len(m.outputs)} files, "
              f"{size / 1e6:.1f} MB): {t_build:.1f} s = {n / t_build:,.0f} characters/s "
              f"(main process CPU {c_build:.1f} s; load average {os.getloadavg()[0]:.1f})")
        print(f"  CPU time of the build, all processes (reader workers included): {c_all:.1f} s "
              f"= {c_all / n * 1e3:.3f} ms/character")
        if n < SD19_TOTAL:
            f = SD19_TOTAL / n
            print(f"  EXTRAPOLATED (linear) to {SD19_TOTAL:,} characters: build "
                  f"{t_build * f / 60:.1f} min wall at this load, {c_all * f / 60:.1f} CPU-min "
                  f"(~{c_all * f / 60 / args.workers:.1f} min wall on {args.workers} idle cores); "
                  f"index {t_index * f / 60:.1f} min (measured on {n:,}; not a full-scale run)")
        else:
            print(f"  measured at full scale: build {t_build / 60:.1f} min")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000, help="characters for the conversion timing")
    ap.add_argument("--ref-n", type=int, default=1500, help="of which through the reference")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--scale", type=float, default=0.01, help="synthetic SD19 scale for the build")
    ap.add_argument("--no-build", action="store_true", help="only time the conversion")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    bench_conversion(args)
    if not args.no_build:
        bench_build(args)


if __name__ == "__main__":
    main()
