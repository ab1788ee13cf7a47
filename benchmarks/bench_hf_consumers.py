"""A plain `datasets` user: the train split of an export as one uint8 array, with and without --pixels.

Fashion-MNIST train (Debian's ``dataset-fashion-mnist``) is exported twice, with the
``pixels`` column and as a Hub-style PNG-only parquet (the ``ylecun/mnist`` layout); each is
loaded with ``datasets.load_dataset`` (first call: builds the Arrow cache) and turned into a
``(60000, 28, 28)`` uint8 array: from ``pixels`` with ``with_format("numpy", dtype="uint8")``,
from the PNGs with Pillow per image and with ``with_format("numpy")``.  Target (issue 21):
>= 10x faster than the PNG anchor.

Usage: ``python benchmarks/bench_hf_consumers.py``
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FASHION = Path("/usr/share/datasets/fashion-mnist")


def main() -> int:
    if not (FASHION / "train-images-idx3-ubyte.gz").is_file():
        print("skipped: Debian's dataset-fashion-mnist is not installed")
        return 0
    os.environ.setdefault("MNISTFORGE_PROGRESS", "0")
    import datasets

    from mnistforge.hub import ExportConfig, SplitData, export_hf
    from mnistforge.io.idx import read_idx

    datasets.disable_progress_bars()
    imgs = np.asarray(read_idx(FASHION / "train-images-idx3-ubyte.gz"))
    labs = np.asarray(read_idx(FASHION / "train-labels-idx1-ubyte.gz"))
    d = Path(tempfile.mkdtemp(prefix="bench-hf-consumers-"))
    for px in (True, False):
        cfg = ExportConfig("fm", {"train": SplitData(imgs, labs)}, [str(i) for i in range(10)])
        export_hf(d / f"r{px}", [cfg], pixels=px, croissant=False)
    print(f"load average before: {os.getloadavg()}")
    rows = {}
    for px, how in ((True, "pixels"), (False, "pillow"), (False, "numpy")):
        t = time.perf_counter()
        ds = datasets.load_dataset(str(d / f"r{px}"), "fm", split="train", cache_dir=str(d / f"c{how}"))
        t_load = time.perf_counter() - t
        t = time.perf_counter()
        if how == "pixels":
            a = ds.with_format("numpy", columns=["pixels"], dtype="uint8")[:]["pixels"]
        elif how == "pillow":
            a = np.stack([np.asarray(im) for im in ds["image"]])
        else:
            a = ds.with_format("numpy", columns=["image"])[:]["image"].astype(np.uint8)
        t_arr = time.perf_counter() - t
        assert a.dtype == np.uint8 and np.array_equal(a, imgs)
        rows[how] = (t_load, t_arr)
        print(f"{how:7s}  load_dataset {t_load:6.2f} s   to the array {t_arr:6.2f} s   total {t_load + t_arr:6.2f} s")
    size = {px: sum(p.stat().st_size for p in (d / f"r{px}" / "data").rglob("*.parquet")) for px in (True, False)}
    print(f"on disk: with pixels {size[True] / 2**20:.1f} MiB, PNG only {size[False] / 2**20:.1f} MiB")
    px_l, px_a = rows["pixels"]
    for how in ("pillow", "numpy"):
        lo, ar = rows[how]
        print(f"{how} / pixels: to the array {ar / px_a:.1f}x, total {(lo + ar) / (px_l + px_a):.1f}x")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
