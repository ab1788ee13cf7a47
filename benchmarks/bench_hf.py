"""Benchmark the Hugging Face export: 70,000 images exported, reloaded, and loaded back.

Timed in one run, on the same data (MNIST-sized; the real MNIST test images
tiled to 60,000 + 10,000 when ``../shared/reference/mnist`` is there, synthetic
digits otherwise):

1. export of an MNIST-format idx folder with ``mnistforge export hf`` code
   (PNG encoding on 1 thread vs every core), against the ``datasets`` route
   (``load(...).to_hf()`` then ``Dataset.to_parquet``);
2. reload with ``datasets.load_dataset`` (+ decoding every image), against
   ``mnistforge.load(..., root=REPO_DIR)`` (vectorised PNG decoding);
3. ``mnistforge.load`` of the same split from the idx files vs from the
   parquet export;
4. a plain ``datasets`` user (issue 21): ``load_dataset`` of the train split then the
   images as one ``(N, 28, 28)`` uint8 array, from the export's ``pixels`` column
   (``--pixels bytes``, the card's recipe: ``columns=["pixels", "label"]``, then
   ``with_format("numpy")[:]["pixels"].view("uint8")``) vs from a Hub-style
   PNG-only parquet (the ``ylecun/mnist`` layout: ``image`` + ``label``), decoded with
   Pillow and with ``with_format("numpy")``; sizes on disk of both;
5. the batch PNG encoder vs Pillow one image at a time (same bytes).

Prints the times and the ratios.  Run: ``.venv/bin/python benchmarks/bench_hf.py [--n 70000]``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MNISTFORGE_PROGRESS", "0")
# the idx folder holds tiled MNIST test images under MNIST's file names: not the published files
os.environ.setdefault("MNISTFORGE_TRUST_FILES", "1")

from mnistforge import hub as hf  # noqa: E402
from mnistforge.io.idx import read_idx, write_idx  # noqa: E402

REFERENCE = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared")) / "reference" / "mnist"


def timed(fn, *a, **kw):
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def make_images(n: int):
    p = REFERENCE / "t10k-images-idx3-ubyte.gz"
    if p.is_file():
        base = np.asarray(read_idx(p))
        lab = np.asarray(read_idx(REFERENCE / "t10k-labels-idx1-ubyte.gz"))
        src = "real MNIST test images, tiled"
    else:
        rng = np.random.default_rng(0)
        yy, xx = np.mgrid[:28, :28]
        base = np.zeros((10000, 28, 28), np.uint8)
        for i in range(len(base)):
            cy, cx, r = rng.uniform(10, 18), rng.uniform(10, 18), rng.uniform(4, 8)
            base[i] = np.clip((r - np.abs(np.hypot(yy - cy, xx - cx) - r / 2)) * 60, 0, 255)
        lab = rng.integers(0, 10, len(base)).astype(np.uint8)
        src = "synthetic digits (../shared absent)"
    reps = -(-n // len(base))
    return np.tile(base, (reps, 1, 1))[:n], np.tile(lab, reps)[:n], src


def size_train(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / "data").rglob("train-*.parquet"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=70000, help="images in all (train + 10,000 test)")
    args = ap.parse_args(argv)
    import datasets

    import mnistforge

    datasets.disable_progress_bars()
    n_test = min(10000, args.n // 7)
    images, labels, src = make_images(args.n)
    work = Path(tempfile.mkdtemp(prefix="bench-hf-"))
    try:
        folder = work / "idx"
        write_idx(folder / "train-images-idx3-ubyte.gz", images[n_test:])
        write_idx(folder / "train-labels-idx1-ubyte.gz", labels[n_test:])
        write_idx(folder / "t10k-images-idx3-ubyte.gz", images[:n_test])
        write_idx(folder / "t10k-labels-idx1-ubyte.gz", labels[:n_test])
        cores = os.cpu_count() or 1
        print(f"{args.n:,} images ({src}); {cores} cores; datasets {datasets.__version__}")

        sub = images[:20000]  # enough to see the pool's effect, cheaper than all 70,000 twice
        _, t_png1 = timed(hf.encode_pngs, sub, workers=1)
        _, t_pngn = timed(hf.encode_pngs, sub, workers=cores)

        configs, t_read = timed(hf.configs_from_targets, [str(folder)])
        _, t_export = timed(hf.export_hf, work / "repo", configs, pixels="bytes")
        size = sum(p.stat().st_size for p in (work / "repo" / "data").rglob("*.parquet"))

        def datasets_route():
            for split in ("train", "test"):
                ds = mnistforge.load("mnist", split, root=folder).to_hf()
                ds.to_parquet(str(work / "alt" / f"{split}.parquet"))
        _, t_alt = timed(datasets_route)

        cache = work / "cache"

        def reload_datasets():
            out = {}
            for split in ("train", "test"):
                ds = datasets.load_dataset(str(work / "repo"), "mnist", split=split,
                                           cache_dir=str(cache))
                out[split] = np.stack([np.asarray(im) for im in ds["image"]])
            return out
        got, t_reload = timed(reload_datasets)
        assert np.array_equal(np.concatenate([got["test"], got["train"]]), images)

        def load_all(root):
            return [mnistforge.load("mnist", s, root=root) for s in ("train", "test")]
        idx_ds, t_idx = timed(load_all, folder)
        pq_ds, t_pq = timed(load_all, work / "repo")
        for a, b in zip(idx_ds, pq_ds):
            assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)

        table = hf.read_split_table(work / "repo", "mnist", "train")
        blobs = table.column("image").combine_chunks().field("bytes").to_pylist()
        _, t_fast = timed(hf.decode_pngs, blobs)

        def pillow_decode():
            import io

            from PIL import Image
            return np.stack([np.asarray(Image.open(io.BytesIO(b))) for b in blobs])
        _, t_pil = timed(pillow_decode)

        # 4. a plain datasets user: the export (pixels column) vs a Hub-style PNG-only parquet
        configs, _ = timed(hf.configs_from_targets, [f"{folder}:train"])
        hf.export_hf(work / "anchor", configs, pixels=False, croissant=False)
        anchor_size = sum(p.stat().st_size for p in (work / "anchor" / "data").rglob("*.parquet"))

        def plain_user(repo, how):
            kw = {"columns": ["pixels", "label"]} if how == "pixels" else {}
            ds = datasets.load_dataset(str(repo), "mnist", split="train", cache_dir=str(work / f"c-{how}"),
                                       **kw)
            if how == "pixels":
                return ds.with_format("numpy", columns=["pixels"])[:]["pixels"].view("uint8").reshape(-1, 28, 28)
            if how == "numpy":
                return ds.with_format("numpy", columns=["image"])[:]["image"].astype(np.uint8)
            return np.stack([np.asarray(im) for im in ds["image"]])
        fast, t_user_px = timed(plain_user, work / "repo", "pixels")
        slow, t_user_pil = timed(plain_user, work / "anchor", "pillow")
        slow2, t_user_np = timed(plain_user, work / "anchor", "numpy")
        assert fast.dtype == np.uint8 and np.array_equal(fast, slow) and np.array_equal(fast, slow2)

        # 5. batch PNG encoder vs Pillow per image (the same bytes)
        from mnistforge.io.hf.png import pillow_png

        def pillow_encode():
            return b"".join(pillow_png(a) for a in sub)
        (batch, _), t_enc_batch = timed(hf.encode_batch, sub, png="pillow")
        pil_bytes, t_enc_pil = timed(pillow_encode)
        assert batch == pil_bytes
        (fast_png, _), t_enc_fast = timed(hf.encode_batch, sub)     # the default encoder

        rows = [
            (f"PNG encode {len(sub):,}, 1 thread", t_png1),
            (f"PNG encode {len(sub):,}, {cores} threads", t_pngn),
            ("export hf (read idx + encode + parquet + card + croissant)", t_read + t_export),
            ("datasets route: load().to_hf() + Dataset.to_parquet", t_alt),
            ("reload: datasets.load_dataset + decode every image", t_reload),
            ("mnistforge.load from idx (.gz)", t_idx),
            ("mnistforge.load from the parquet export", t_pq),
            (f"decode {len(blobs):,} PNGs: mnistforge vectorised", t_fast),
            (f"decode {len(blobs):,} PNGs: Pillow one by one", t_pil),
            ("plain datasets user, train -> uint8 array: export's pixels column", t_user_px),
            ("plain datasets user, train -> uint8 array: Hub-style PNGs, Pillow", t_user_pil),
            ("plain datasets user, train -> uint8 array: Hub-style PNGs, with_format(numpy)", t_user_np),
            (f"encode {len(sub):,} PNGs: fast encoder (default)", t_enc_fast),
            (f"encode {len(sub):,} PNGs: batch encoder, png='pillow'", t_enc_batch),
            (f"encode {len(sub):,} PNGs: Pillow one by one", t_enc_pil),
        ]
        w = max(len(r[0]) for r in rows)
        for name, t in rows:
            print(f"  {name:<{w}}  {t:8.2f} s")
        print(f"  parquet size: {size / 2**20:.1f} MiB "
              f"({size / args.n:.0f} bytes/image; idx .gz: "
              f"{sum(p.stat().st_size for p in folder.iterdir()) / 2**20:.1f} MiB)")
        print(f"  train split on disk: with pixels {size_train(work / 'repo') / 2**20:.1f} MiB, "
              f"Hub-style PNG only {anchor_size / 2**20:.1f} MiB")
        print(f"  load average: {os.getloadavg()}")
        print("ratios:")
        print(f"  plain datasets user: Hub-style PNGs (Pillow) / pixels column: {t_user_pil / t_user_px:.1f}x; "
              f"(with_format numpy) / pixels: {t_user_np / t_user_px:.1f}x  (target >= 10x)")
        print(f"  PNG encoding: Pillow / batch encoder (png='pillow'): {t_enc_pil / t_enc_batch:.2f}x "
              f"(identical bytes); Pillow / fast encoder: {t_enc_pil / t_enc_fast:.2f}x "
              f"({len(fast_png) / len(pil_bytes):.3f}x Pillow's size)")
        print(f"  PNG encoding speed-up with {cores} threads: {t_png1 / t_pngn:.2f}x")
        print(f"  datasets route / export hf: {t_alt / (t_read + t_export):.2f}x")
        print(f"  datasets.load_dataset reload / mnistforge.load from parquet: {t_reload / t_pq:.2f}x")
        print(f"  mnistforge.load parquet / idx: {t_pq / t_idx:.2f}x")
        print(f"  Pillow / vectorised PNG decoding: {t_pil / t_fast:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    raise SystemExit(main())
