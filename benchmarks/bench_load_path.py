"""The load path of issue 40 (resolve, read once, admit, serve) against what it cannot beat.

Three ratios, each measured against its alternative in the same run, alternating:

* ``first .gz``: ``load("fashion-mnist", "train", root=FOLDER)`` of Debian's ``.gz`` files with
  nothing recorded (a new cache each time) / reading the two files once, inflating them with
  zlib and hashing the content with sha256 (bound: 1.3x);
* ``repeat cache``: a repeat ``load(name, "test")`` from the cache (raw copies kept) /
  ``np.load(mmap_mode="r")`` of the same arrays saved as ``.npy`` (bound: 3x);
* ``fresh process``: a new Python process that loads MNIST's test set from the cache / the same
  one-shot script reading the two ``.gz`` files with ``idx2numpy`` (the ``[bench]`` extra;
  bound: 1.3x).

Prints the date, the load average before and after, each median and ratio.  No assertion: the
figures go to ``docs/loading.md`` with the command and the load.

Usage: ``python benchmarks/bench_load_path.py [--samples 9]``
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MNIST = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared")) / "reference" / "mnist"
FASHION = Path("/usr/share/datasets/fashion-mnist")
TRAIN = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
TEST = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def alternate(a, b, samples: int) -> tuple[float, float]:
    """Medians (s) of ``a()`` and ``b()`` run in turn ``samples`` times each."""
    ta, tb = [], []
    for _ in range(samples):
        for fn, out in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def show(label: str, a: float, b: float, bound: float) -> None:
    ratio = a / b
    print(f"{label:14} {a * 1e3:10.1f} ms {b * 1e3:10.1f} ms {ratio:7.2f}x  (bound {bound}x: "
          f"{'met' if ratio <= bound else 'NOT met'})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=9)
    args = ap.parse_args(argv)
    if not (FASHION / TRAIN[0]).is_file() or not (MNIST / TEST[0]).is_file():
        print(f"skipped: needs Debian's Fashion-MNIST ({FASHION}) and MNIST's test set ({MNIST})")
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-load-path-"))
    os.environ["MNISTFORGE_HOME"] = str(work / "cache")
    import mnistforge

    print(f"{datetime.date.today()}; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    print(f"{'case':14} {'mnistforge':>13} {'alternative':>13} {'ratio':>8}")

    # 1. first load of a .gz folder / read + inflate + sha256 of each file once
    folder = work / "fashion"
    folder.mkdir()
    for f in TRAIN:
        shutil.copy(FASHION / f, folder / f)
    n = [0]

    def first_load():
        n[0] += 1
        mnistforge.load("fashion-mnist", "train", root=folder, cache=work / f"c{n[0]}")

    def inflate_and_hash():
        for f in TRAIN:
            content = zlib.decompress((folder / f).read_bytes(), wbits=31)
            hashlib.sha256(content).hexdigest()

    first_load()   # the page cache warm for both
    show("first .gz", *alternate(first_load, inflate_and_hash, args.samples), 1.3)

    # 2. repeat load from the cache / np.load(mmap_mode="r")
    group = work / "cache" / "mnist"
    group.mkdir(parents=True)
    for f in TEST:
        shutil.copy(MNIST / f, group / f)
    ds = mnistforge.load("mnist", "test", download=False)   # verified, raw copies made
    np.save(work / "x.npy", np.asarray(ds.images))
    np.save(work / "y.npy", np.asarray(ds.labels))
    x, y = str(work / "x.npy"), str(work / "y.npy")
    show("repeat cache", *alternate(lambda: mnistforge.load("mnist", "test", download=False),
                                    lambda: (np.load(x, mmap_mode="r"), np.load(y, mmap_mode="r")),
                                    args.samples * 10), 3)

    # 3. a fresh process: mnistforge from the cache / idx2numpy on the .gz files
    try:
        import idx2numpy  # noqa: F401 - only its presence is asked here
    except ImportError:
        print("fresh process: skipped (pip install 'mnistforge[bench]' for idx2numpy)")
    else:
        env = dict(os.environ)
        ours = "import mnistforge\nds = mnistforge.load('mnist', 'test', download=False)\n" \
               "assert len(ds) == 10000"
        theirs = ("import gzip, idx2numpy\n" + "".join(
            f"a = idx2numpy.convert_from_file(gzip.open({str(MNIST / f)!r}))\n" for f in TEST))
        run = lambda code: subprocess.run([sys.executable, "-c", code], env=env, check=True)  # noqa: E731
        show("fresh process", *alternate(lambda: run(ours), lambda: run(theirs), args.samples), 1.3)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
