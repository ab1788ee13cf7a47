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
than the anchor, end to end (``load_dataset`` + array).  Also printed: sizes on disk,
export times, and why the Array2D layout cannot get there: pyarrow reading only the
``pixels`` column of a whole split as ``datasets``' parquet builder does
(``fragment.to_batches``), for the bytes layout and for Array2D under other writer options;
and the export's PNG encoding of these images: the batch encoder vs Pillow one image at a
time on 20,000 images (same bytes, one thread each), ``encode_pngs`` on 60,000 with 1 thread
vs every core.

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


def read_pixels_column(imgs: np.ndarray) -> None:
    """pyarrow alone: the pixels column written under each option, read back as datasets reads it."""
    import io

    import datasets
    import pyarrow as pa
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    from mnistforge.io.hf.parquet import PARQUET_OPTIONS, _pixels

    def table(feature):
        schema = datasets.Features({"pixels": feature}).arrow_schema
        return pa.Table.from_arrays([_pixels(schema.field("pixels"), imgs)], schema=schema)

    bytes_t, array_t = table(datasets.Value("binary")), table(datasets.Array2D((28, 28), "uint8"))
    variants = [("bytes, no dictionary (--pixels bytes)", bytes_t, 1000, {"use_dictionary": False}),
                ("Array2D, export options (--pixels array)", array_t, 1000, {}),
                ("Array2D, no dictionary", array_t, 1000, {"use_dictionary": False}),
                ("Array2D, uncompressed", array_t, 1000, {"compression": "none"}),
                ("Array2D, zstd, no dictionary", array_t, 1000, {"compression": "zstd", "use_dictionary": False}),
                ("Array2D, 10,000-row groups", array_t, 10000, {})]
    print("pyarrow: read the pixels column of 60,000 images (best of 3):")
    base = None
    for name, t, rows, opts in variants:
        buf = io.BytesIO()
        pq.write_table(t, buf, row_group_size=rows, **{**PARQUET_OPTIONS, **opts})
        data = buf.getvalue()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            frag = pads.ParquetFileFormat().make_fragment(pa.BufferReader(data))
            for _batch in frag.to_batches(batch_size=rows, batch_readahead=0, fragment_readahead=0):
                pass
            best = min(best, time.perf_counter() - start)
        base = base or best
        print(f"  {name:42s} {best:6.3f} s  ({best / base:4.1f}x bytes)  {len(data) / 2**20:6.1f} MiB")


def png_encoding(imgs: np.ndarray) -> None:


    from mnistforge.io.hf.png import encode_batch, encode_pngs, pillow_png

    sub = imgs[:20000]

    def pillow():
        return b"".join(pillow_png(a) for a in sub)

    t = time.perf_counter()
    ours = encode_batch(sub, png="pillow")[0]
    t_batch = time.perf_counter() - t
    t = time.perf_counter()
    theirs = pillow()
    t_pil = time.perf_counter() - t
    assert ours == theirs
    cores = os.cpu_count() or 1
    t = time.perf_counter()
    one = encode_pngs(imgs, workers=1)[0]
    t_one = time.perf_counter() - t
    t = time.perf_counter()
    many = encode_pngs(imgs, workers=cores)[0]
    t_many = time.perf_counter() - t
    assert one == many
    t = time.perf_counter()
    encode_batch(sub)
    t_fast = time.perf_counter() - t
    print(f"PNG encoding: 20,000 images fast encoder (default) {t_fast:.2f} s; batch encoder, "
          f"png='pillow' {t_batch:.2f} s, Pillow {t_pil:.2f} s "
          f"({t_pil / t_batch:.2f}x, same bytes); 60,000 images 1 thread {t_one:.2f} s, "
          f"{cores} threads {t_many:.2f} s ({t_one / t_many:.2f}x); load {os.getloadavg()}")


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
        read_pixels_column(imgs)
        png_encoding(imgs)
        print(f"load average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    sys.exit(main())
