"""Loading a 60,000-image gz idx file: mnistforge vs python-mnist vs the practical floor.

Times, in one run and on the same file:

* ``mnistforge``: ``read_idx`` on the ``.gz`` (images and labels);
* ``python-mnist``: its ``MNIST.load`` parser (``pip install python-mnist``; the
  column is skipped when it is not installed);
* ``floor``: ``gzip.decompress`` + ``numpy.frombuffer`` (no checks at all);
* ``raw open``: ``read_idx`` on the decompressed copy (a memory map), and a full
  ``mnistforge.load`` served from the cache's raw copy.

Targets (issue 2): >= 10x faster than python-mnist, within 1.3x of the floor,
raw open < 5 ms.  The file is Debian's Fashion-MNIST train set when installed
(``/usr/share/datasets/fashion-mnist``), else a synthetic 60,000-image file.

Usage: ``python benchmarks/bench_idx.py [--repeat 3] [--file images.gz --labels labels.gz]``
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FASHION = Path("/usr/share/datasets/fashion-mnist")


def best(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def synthetic(folder: Path):
    from mnistforge.io.idx import write_idx
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(0)
    base = np.zeros((60000, 28, 28), np.float32)
    base[:, 6:22, 6:22] = rng.random((60000, 16, 16)) > 0.7
    imgs = (gaussian_filter(base, (0, 1, 1)) * 400).clip(0, 255).astype(np.uint8)
    img, lab = folder / "train-images-idx3-ubyte.gz", folder / "train-labels-idx1-ubyte.gz"
    write_idx(img, imgs)
    write_idx(lab, rng.integers(0, 10, 60000).astype(np.uint8))
    return img, lab


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--file", type=Path, default=None, help="images .gz (60,000 x 28 x 28)")
    ap.add_argument("--labels", type=Path, default=None, help="labels .gz")
    args = ap.parse_args(argv)

    from mnistforge.io.idx import read_idx

    tmp = Path(tempfile.mkdtemp(prefix="bench_idx."))
    try:
        if args.file:
            img, lab = args.file, args.labels
        elif (FASHION / "train-images-idx3-ubyte.gz").is_file():
            img, lab = FASHION / "train-images-idx3-ubyte.gz", FASHION / "train-labels-idx1-ubyte.gz"
        else:
            img, lab = synthetic(tmp)
        print(f"file: {img} ({img.stat().st_size:,} bytes)")

        def ours():
            return read_idx(img), read_idx(lab)

        def floor():
            a = np.frombuffer(gzip.decompress(img.read_bytes()), np.uint8, offset=16)
            b = np.frombuffer(gzip.decompress(lab.read_bytes()), np.uint8, offset=8)
            return a.reshape(-1, 28, 28), b

        t_ours, (x, y) = best(ours, args.repeat)
        t_floor, (fx, fy) = best(floor, args.repeat)
        assert np.array_equal(x, fx) and np.array_equal(y, fy)
        rows = [("mnistforge read_idx (.gz)", t_ours), ("gzip.decompress + frombuffer", t_floor)]

        t_pm = None
        try:
            from mnist import MNIST  # python-mnist
        except ImportError:
            print("python-mnist not installed: column skipped (pip install python-mnist)")
        else:
            mn = MNIST(str(img.parent), gz=True)
            # its opener appends ".gz" itself
            t_pm, (pi, pl) = best(lambda: mn.load(str(img)[:-3], str(lab)[:-3]), 1)
            assert np.array_equal(np.asarray(pl), y) and list(pi[123]) == x[123].ravel().tolist()
            del pi, pl
            rows.append(("python-mnist MNIST.load", t_pm))

        # raw copy: a memory map
        raw = tmp / "train-images-idx3-ubyte"
        with gzip.open(img) as src, open(raw, "wb") as dst:
            shutil.copyfileobj(src, dst)
        opens = []
        for _ in range(50):
            t = time.perf_counter()
            m = read_idx(raw)
            opens.append(time.perf_counter() - t)
            del m
        t_raw = statistics.median(opens)
        rows.append(("read_idx raw (memory map), median of 50", t_raw))

        # full mnistforge.load from a cache holding a raw copy
        t_load = None
        if img.parent == FASHION:
            import mnistforge
            os.environ["MNISTFORGE_HOME"] = str(tmp / "cache")
            os.environ["MNISTFORGE_OFFLINE"] = "1"
            (tmp / "cache" / "fashion-mnist").mkdir(parents=True)
            for f in FASHION.iterdir():
                shutil.copy(f, tmp / "cache" / "fashion-mnist" / f.name)
            t_first, _ = best(lambda: mnistforge.load("fashion-mnist", "train"), 1)
            t_load, ds = best(lambda: mnistforge.load("fashion-mnist", "train"), 10)
            assert np.array_equal(ds.images, x)
            rows.append(("mnistforge.load, first (verify + raw copy)", t_first))
            rows.append(("mnistforge.load, later (raw copy, best of 10)", t_load))

        print(f"\n{'what':<48} {'seconds':>10}")
        for name, t in rows:
            print(f"{name:<48} {t:>10.4f}")
        print()
        print(f"mnistforge / floor          = {t_ours / t_floor:6.2f}x  (target <= 1.3)")
        if t_pm is not None:
            print(f"python-mnist / mnistforge   = {t_pm / t_ours:6.1f}x  (target >= 10)")
        print(f"raw open                    = {t_raw * 1e3:6.2f} ms (target < 5 ms)")
        if t_load is not None:
            print(f"load() from raw copy        = {t_load * 1e3:6.2f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    sys.exit(main())
