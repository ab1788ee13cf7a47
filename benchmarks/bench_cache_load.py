"""Loading an official file through the cache: first load, repeat loads, gz folders.

Measured in one run on Fashion-MNIST train (Debian's ``dataset-fashion-mnist``, the
published ``.gz`` files, which match the registry):

* first load: ``mnistforge.load`` into an empty cache holding only the ``.gz``
  (verify, decompress into a raw copy, memory-map it) vs ``read_idx`` on the
  ``.gz`` (the floor: decompress once, no hashing).  Target: within 1.3x.
* repeat load: ``mnistforge.load`` again (sidecar trusted, memory map) vs
  ``numpy.load(mmap_mode="r")`` of the same bytes as ``.npy``, per call, in alternating
  batches of 100 calls.  Target: within 1.5x.
* writes: a repeat load must not write anything (sidecars keep their mtime).
* a folder of ``.gz`` files given as ``root=`` (Debian's folder itself): a plain load
  (decompresses every time) vs ``keep_raw=True`` (decompressed copies kept in the cache,
  ``<cache>/local-raw/``, never in the folder): its first load (into an empty cache) vs the
  plain load, its repeat loads vs ``numpy.load(mmap_mode="r")``, and what the repeat loads
  wrote (cache and folder).

Usage: ``python benchmarks/bench_cache_load.py [--repeat 5]``
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FASHION = Path("/usr/share/datasets/fashion-mnist")


def timed(fn, repeat: int, setup=None) -> float:
    times = []
    for _ in range(repeat):
        if setup:
            setup()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def timed_pair(a, b, samples: int, batch: int = 100) -> tuple[float, float]:
    """Per-call medians of ``a`` and ``b`` (sub-millisecond calls), timed in alternating batches
    of ``batch`` calls so that both see the same machine."""
    ta, tb = [], []
    for _ in range(samples):
        for fn, out in ((a, ta), (b, tb)):
            t = time.perf_counter()
            for _ in range(batch):
                fn()
            out.append((time.perf_counter() - t) / batch)
    return statistics.median(ta), statistics.median(tb)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if not (FASHION / "train-images-idx3-ubyte.gz").is_file():
        print("skipped: Debian's dataset-fashion-mnist is not installed")
        return 0
    os.environ["MNISTFORGE_PROGRESS"] = "0"
    import mnistforge
    from mnistforge.io.idx import read_idx

    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cache = tmp / "cache"
        group = cache / "fashion-mnist"

        def fresh_cache():
            shutil.rmtree(cache, ignore_errors=True)
            group.mkdir(parents=True)
            for f in FASHION.glob("*.gz"):
                shutil.copy(f, group / f.name)

        def first():
            mnistforge.load("fashion-mnist", "train", cache=cache, download=False)

        def floor():
            read_idx(FASHION / "train-images-idx3-ubyte.gz")
            read_idx(FASHION / "train-labels-idx1-ubyte.gz")

        t_first = timed(first, args.repeat, setup=fresh_cache)
        t_floor = timed(floor, args.repeat)
        # repeat loads from the cache left by the last first load
        ds = mnistforge.load("fashion-mnist", "train", cache=cache, download=False)
        np.save(tmp / "images.npy", np.asarray(ds.images))
        np.save(tmp / "labels.npy", np.asarray(ds.labels))

        # the baseline at its cheapest: string paths made once (a Path per call costs ~50 % more)
        npy_images, npy_labels = str(tmp / "images.npy"), str(tmp / "labels.npy")

        def npy():
            np.load(npy_images, mmap_mode="r")
            np.load(npy_labels, mmap_mode="r")

        marks = {p: p.stat().st_mtime_ns for p in group.iterdir()}
        t_repeat, t_npy = timed_pair(first, npy, args.repeat * 4)
        written = [p.name for p in group.iterdir() if marks.get(p) != p.stat().st_mtime_ns]

        def folder_plain():
            mnistforge.load("fashion-mnist", "train", root=FASHION)

        fcache = tmp / "folder-cache"

        def folder_kept():
            mnistforge.load("fashion-mnist", "train", root=FASHION, cache=fcache, keep_raw=True)

        t_folder = timed(folder_plain, args.repeat)
        t_kept_first = timed(folder_kept, args.repeat,
                             setup=lambda: shutil.rmtree(fcache, ignore_errors=True))
        before = {p: p.stat().st_mtime_ns for p in [*fcache.rglob("*"), *FASHION.iterdir()]}
        t_kept, t_npy2 = timed_pair(folder_kept, npy, args.repeat * 4)
        after = {p: p.stat().st_mtime_ns for p in [*fcache.rglob("*"), *FASHION.iterdir()]}
        kept_written = sorted(str(p) for p in after if before.get(p) != after[p])

    print(f"first load (verify + raw copy)  {t_first * 1e3:8.1f} ms   read_idx on the .gz {t_floor * 1e3:8.1f} ms"
          f"   ratio {t_first / t_floor:5.2f}x (target <= 1.3x)")
    print(f"repeat load (sidecar, mmap)     {t_repeat * 1e3:8.2f} ms   np.load mmap .npy   {t_npy * 1e3:8.2f} ms"
          f"   ratio {t_repeat / t_npy:5.2f}x (target <= 1.5x)")
    print(f"files written by repeat loads: {written or 'none'}")
    print(f"root= folder of .gz, plain      {t_folder * 1e3:8.1f} ms   read_idx on the .gz {t_floor * 1e3:8.1f} ms"
          f"   ratio {t_folder / t_floor:5.2f}x (every load)")
    print(f"root= folder, keep_raw: first   {t_kept_first * 1e3:8.1f} ms   plain folder load   {t_folder * 1e3:8.1f} ms"
          f"   ratio {t_kept_first / t_folder:5.2f}x")
    print(f"root= folder, keep_raw: repeat  {t_kept * 1e3:8.2f} ms   np.load mmap .npy   {t_npy2 * 1e3:8.2f} ms"
          f"   ratio {t_kept / t_npy2:5.2f}x (plain folder load: {t_folder / t_kept:.0f}x slower)")
    print(f"files written by keep_raw repeat loads (cache and folder): {kept_written or 'none'}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    sys.exit(main())
