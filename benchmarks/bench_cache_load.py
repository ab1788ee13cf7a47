"""Loading an official file through the cache: first load, repeat loads, gz folders.

Measured in one run on Fashion-MNIST train (Debian's ``dataset-fashion-mnist``, the
published ``.gz`` files, which match the registry):

* first load: ``mnistforge.load`` into an empty cache holding only the ``.gz``
  (verify, decompress into a raw copy, memory-map it) vs ``read_idx`` on the
  ``.gz`` (the floor: decompress once, no hashing).  Target: within 1.3x.
* repeat load: ``mnistforge.load`` again (sidecar trusted, memory map) vs
  ``numpy.load(mmap_mode="r")`` of the same bytes as ``.npy``.  Target: within 1.5x.
* writes: a repeat load must not write anything (sidecars keep their mtime).
* a folder of ``.gz`` files given as ``root=``: plain vs with ``keep_raw=True``
  (an opt-in raw cache next to the folder's files is not written: the raw copy lives in
  the cache, keyed by the file's content).

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
        marks = {p: p.stat().st_mtime_ns for p in group.iterdir()}
        t_repeat = timed(first, args.repeat * 4)
        written = [p.name for p in group.iterdir() if marks.get(p) != p.stat().st_mtime_ns]
        ds = mnistforge.load("fashion-mnist", "train", cache=cache, download=False)
        np.save(tmp / "images.npy", np.asarray(ds.images))
        np.save(tmp / "labels.npy", np.asarray(ds.labels))
        t_npy = timed(lambda: (np.load(tmp / "images.npy", mmap_mode="r"),
                               np.load(tmp / "labels.npy", mmap_mode="r")), args.repeat * 4)

        def folder_plain():
            mnistforge.load("fashion-mnist", "train", root=FASHION)
        t_folder = timed(folder_plain, args.repeat)

    print(f"first load (verify + raw copy)  {t_first * 1e3:8.1f} ms   read_idx on the .gz {t_floor * 1e3:8.1f} ms"
          f"   ratio {t_first / t_floor:5.2f}x (target <= 1.3x)")
    print(f"repeat load (sidecar, mmap)     {t_repeat * 1e3:8.2f} ms   np.load mmap .npy   {t_npy * 1e3:8.2f} ms"
          f"   ratio {t_repeat / t_npy:5.2f}x (target <= 1.5x)")
    print(f"files written by repeat loads: {written or 'none'}")
    print(f"folder of .gz files as root=    {t_folder * 1e3:8.1f} ms")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
