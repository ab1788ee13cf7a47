"""Characters per second read from a 2nd-edition SD19 zip: mnistforge vs a naive Pillow loop.

Usage::

    python benchmarks/bench_sd19.py                   # synthesises a small by_write.zip first
    python benchmarks/bench_sd19.py --source /data/sd19 --limit 50000

The naive loop is what most scripts do: ``zipfile.ZipFile``, then for every PNG
member ``Image.open(z.open(name))`` and ``np.asarray``.  Ours is
``open_sd19(...).read_all(rows)``: lean central-directory parsing, one ``pread``
per run of members, a vectorised PNG decoder and a process pool over the cores.
Both read the same characters; the pixels are compared before any figure is printed.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np


def _naive(zip_path: Path, names: list) -> np.ndarray:
    from PIL import Image
    out = np.empty((len(names), 128, 128), bool)
    with zipfile.ZipFile(zip_path) as z:
        for i, n in enumerate(names):
            with z.open(n) as f:
                out[i] = np.asarray(Image.open(f).convert("1")) == 0   # black ink
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", help="an SD19 source with a 2nd-edition by_write.zip "
                                     "(default: synthesise one)")
    ap.add_argument("--scale", type=float, default=0.01, help="scale of the synthetic source")
    ap.add_argument("--limit", type=int, default=None, help="read at most this many characters")
    ap.add_argument("--naive-limit", type=int, default=5000, help="characters for the naive loop")
    args = ap.parse_args(argv)

    from mnistforge.sd19.reader import open_sd19
    from mnistforge.settings import current

    tmp = None
    if args.source:
        src_path = Path(args.source)
    else:
        from mnistforge.sd19.synth import SynthConfig, synthesize_sd19
        tmp = tempfile.TemporaryDirectory()
        src_path = Path(tmp.name) / "sd19"
        t = time.perf_counter()
        synthesize_sd19(src_path, SynthConfig(scale=args.scale, edition=2, packaging="zip",
                                              hierarchies=("by_write",), by_write_cls=True), progress=False)
        print(f"synthesised {src_path} (scale {args.scale}) in {time.perf_counter() - t:.1f} s")

    workers = current().workers
    t = time.perf_counter()
    src = open_sd19(src_path, cache=False, reindex=True)
    t_index = time.perf_counter() - t
    if src.edition != 2 or src.packaging != "zip":
        print("this benchmark needs a 2nd-edition by_write.zip", file=sys.stderr)
        return 2
    rows = np.arange(len(src) if args.limit is None else min(args.limit, len(src)))
    print(f"source: {len(src):,} characters, edition 2, zip; {workers} worker(s) available "
          f"(os.cpu_count() = {os.cpu_count()})")
    print(f"index (list zip + decode + hash every character): {t_index:.2f} s, "
          f"{len(src) / t_index:,.0f} chars/s")

    rates = {}
    for w in sorted({1, workers}):
        t = time.perf_counter()
        ours = src.read_all(rows, workers=w)
        dt = time.perf_counter() - t
        rates[w] = len(rows) / dt
        print(f"mnistforge read_all, {w} worker(s): {len(rows):,} chars in {dt:.2f} s, {rates[w]:,.0f} chars/s")

    n_naive = min(args.naive_limit, len(rows))
    names = ["by_write/" + src.files["name"][src.file_of_row[r]].decode() for r in rows[:n_naive]]
    prefix = src.trees["by_write"].prefix
    names = [prefix + n[len("by_write/"):] for n in names]
    t = time.perf_counter()
    naive = _naive(src.trees["by_write"].location, names)
    dt = time.perf_counter() - t
    naive_rate = n_naive / dt
    print(f"naive zipfile + Pillow loop: {n_naive:,} chars in {dt:.2f} s, {naive_rate:,.0f} chars/s")
    if not (naive == ours[:n_naive]).all():
        print("MISMATCH: the two readers disagree on the pixels", file=sys.stderr)
        return 1
    best = max(rates.values())
    print(f"ratio mnistforge / naive: {best / naive_rate:.1f}x "
          f"(1 worker: {rates[1] / naive_rate:.1f}x)")
    print(f"full SD19 (814,255 chars) at this rate: read {814255 / best / 60:.1f} min, "
          f"naive {814255 / naive_rate / 60:.1f} min")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    raise SystemExit(main())
