"""A plain `datasets` user: the train split of an export as one uint8 array, with and without --pixels.

Fashion-MNIST train (Debian's ``dataset-fashion-mnist``) is exported three times: with
``--pixels bytes``, with ``--pixels array`` and as a Hub-style PNG-only parquet (the
``ylecun/mnist`` layout, the anchor).  Each is loaded with ``datasets.load_dataset`` (first
call: builds the Arrow cache, timed) and turned into a ``(60000, 28, 28)`` uint8 array:

- anchor: Pillow per image (``ds["image"]``), and ``with_format("numpy")``;
- ``pixels`` columns: every column loaded, and only ``columns=["pixels", "label"]`` (the
  card's recipe: the PNG column is neither read nor cached); bytes are viewed as uint8
  (``with_format("numpy")[:]["pixels"].view("uint8")``), Array2D read with ``dtype="uint8"``.

A throw-away ``load_dataset`` + formatting of a 10-row export runs first, so that
``datasets``' one-time lazy imports are charged to no row.  Target (issue 21): >= 10x faster
than the anchor, end to end (``load_dataset`` + array).  Also printed: sizes on disk and
export times.

Usage: ``python benchmarks/bench_hf_consumers.py``
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FASHION = Path("/usr/share/datasets/fashion-mnist")
COLS = ["pixels", "label"]


def to_array(ds, how: str) -> np.ndarray:
    if how == "pillow":
        return np.stack([np.asarray(im) for im in ds["image"]])
    if how == "numpy":
        return ds.with_format("numpy", columns=["image"])[:]["image"].astype(np.uint8)
    if how == "bytes":
        return ds.with_format("numpy", columns=["pixels"])[:]["pixels"].view("uint8").reshape(-1, 28, 28)
    return ds.with_format("numpy", columns=["pixels"], dtype="uint8")[:]["pixels"]


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
    try:
        print(f"load average before: {os.getloadavg()}; datasets {datasets.__version__}")
        t_export, size = {}, {}
        for layout in ("png", "bytes", "array"):
            cfg = ExportConfig("fm", {"train": SplitData(imgs, labs)}, [str(i) for i in range(10)])
            t = time.perf_counter()
            export_hf(d / layout, [cfg], pixels=None if layout == "png" else layout, croissant=False)
            t_export[layout] = time.perf_counter() - t
            size[layout] = sum(p.stat().st_size for p in (d / layout / "data").rglob("*.parquet"))
        # warm-up: datasets' lazy imports and formatters, on a 10-row export of each layout
        for layout in ("png", "bytes", "array"):
            cfg = ExportConfig("fm", {"train": SplitData(imgs[:10], labs[:10])}, [str(i) for i in range(10)])
            export_hf(d / f"warm-{layout}", [cfg], pixels=None if layout == "png" else layout,
                      croissant=False, workers=1)
            ds = datasets.load_dataset(str(d / f"warm-{layout}"), "fm", split="train",
                                       cache_dir=str(d / "c-warm"))
            for how in (("pillow", "numpy") if layout == "png" else (layout,)):
                to_array(ds, how)
        rows = {}
        runs = [("png", "pillow", None), ("png", "numpy", None),
                ("bytes", "bytes", None), ("bytes", "bytes", COLS),
                ("array", "array", None), ("array", "array", COLS)]
        for layout, how, cols in runs:
            kw = {"columns": cols} if cols else {}
            t = time.perf_counter()
            ds = datasets.load_dataset(str(d / layout), "fm", split="train",
                                       cache_dir=str(d / f"c-{layout}-{how}-{bool(cols)}"), **kw)
            t_load = time.perf_counter() - t
            t = time.perf_counter()
            a = to_array(ds, how)
            t_arr = time.perf_counter() - t
            assert a.dtype == np.uint8 and np.array_equal(a, imgs)
            name = f"{layout}/{how}" + (" columns=[pixels,label]" if cols else "")
            rows[name] = (t_load, t_arr)
            print(f"{name:38s} load_dataset {t_load:6.2f} s   to the array {t_arr:6.2f} s   "
                  f"total {t_load + t_arr:6.2f} s")
        for layout in ("png", "bytes", "array"):
            print(f"{layout:6s} export {t_export[layout]:6.2f} s   on disk {size[layout] / 2**20:5.1f} MiB")
        print("ratios (anchor / this, end to end; target >= 10x):")
        anchors = {k: sum(v) for k, v in rows.items() if k.startswith("png/")}
        for name, (lo, ar) in rows.items():
            if name.startswith("png/"):
                continue
            print(f"  {name:38s} " + "  ".join(f"{a} {t / (lo + ar):5.1f}x" for a, t in anchors.items())
                  + f"   (array step alone: {rows['png/pillow'][1] / ar:.0f}x Pillow)")
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
