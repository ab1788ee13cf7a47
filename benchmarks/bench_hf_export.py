"""Benchmark `mnistforge export hf` (default options, its read-back check included) against the
naive `datasets` route, each in a fresh process, in interleaved pairs, with the load recorded.

The data: 70,000 MNIST-sized images in an idx folder (the real MNIST test images tiled to
60,000 + 10,000 when ``../shared/reference/mnist`` is there, synthetic digits otherwise).

- **export**: ``python -m mnistforge export hf IDX --out REPO`` with the default options (the
  ``fast`` PNG encoder, the check after writing: card, shard hashes, counts, features, every
  image decoded, ``datasets.load_dataset`` of each split);
- **naive**: ``mnistforge.load(...).to_hf().to_parquet(...)`` for train and test (``datasets``
  encodes every image with Pillow; no card, no check);
- **before** (``--before TREE``): the export command of another source tree (for instance a
  checkout of the previous version) on the same data, in the same rounds.

Each process's wall time and CPU time (user + system, from ``wait4``) are recorded; the load
average (1 minute) is printed before every round.  The ratio is naive / export of the medians:
above 1 the export is faster.  Run: ``.venv/bin/python benchmarks/bench_hf_export.py [--rounds 5]``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

NAIVE = """
import sys
import datasets
import mnistforge
datasets.disable_progress_bars()
for split in ("train", "test"):
    mnistforge.load("mnist", split, root=sys.argv[1]).to_hf().to_parquet(f"{sys.argv[2]}-{split}.parquet")
"""


BREAKDOWN = """
import os, sys, time
def cpu():
    t = os.times()
    return t.user + t.system
def step(name, t0):
    print(f"{name}\t{cpu() - t0:.3f}")
    return cpu()
t = cpu()
import datasets
t = step("import datasets (the naive route pays it too)", t)
import numpy as np
from mnistforge import hub
from mnistforge.io.hf.png import encode_batch
from mnistforge.io.hf.repo import png_bytes, read_split_table
from mnistforge.io.idx import read_idx
t = step("import mnistforge.hub", t)
folder, out = sys.argv[1], sys.argv[2]
configs = hub.configs_from_targets([folder])
t = step("read the idx folder", t)
hub.export_hf(out, configs)
t = step("export_hf (PNG encoding, parquet, card, croissant)", t)
hub.verify_repo(out)
t = step("verify_repo (the check after writing)", t)
blobs = png_bytes(read_split_table(out, "mnist", "train"))
t = cpu()
hub.decode_pngs(blobs)
t = step("  of which: decoding the 60,000 train PNGs again", t)
images = np.asarray(read_idx(os.path.join(folder, "train-images-idx3-ubyte.gz")))
t = cpu()
encode_batch(images)
t = step("encode 60,000 PNGs, fast encoder (default), 1 thread", t)
encode_batch(images, png="pillow")
t = step("encode 60,000 PNGs, png='pillow' (Pillow's bytes), 1 thread", t)
"""


def run(cmd, env, cwd) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process (run in ``cwd``: ``-m`` puts it first on sys.path,
    so it must not hold a ``mnistforge/`` of its own)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=70000, help="images in all (train + 10,000 test)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--before", type=Path, default=None, metavar="TREE",
                    help="also time the export of this source tree (its mnistforge/ on PYTHONPATH)")
    args = ap.parse_args(argv)
    from bench_hf import make_images

    from mnistforge.io.idx import write_idx

    images, labels, src = make_images(args.n)
    n_test = min(10000, args.n // 7)
    work = Path(tempfile.mkdtemp(prefix="bench-hf-export-"))
    env = dict(os.environ, MNISTFORGE_PROGRESS="0", HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               # the idx folder holds tiled MNIST test images under MNIST's file names
               MNISTFORGE_TRUST_FILES="1", MNISTFORGE_HOME=str(work / "home"),
               HF_HOME=str(work / "hf-home"))
    try:
        folder = work / "idx"
        write_idx(folder / "train-images-idx3-ubyte.gz", images[n_test:])
        write_idx(folder / "train-labels-idx1-ubyte.gz", labels[n_test:])
        write_idx(folder / "t10k-images-idx3-ubyte.gz", images[:n_test])
        write_idx(folder / "t10k-labels-idx1-ubyte.gz", labels[:n_test])
        print(f"{args.n:,} images ({src}); {os.cpu_count()} cores; {args.rounds} interleaved rounds")
        trees = {"export": ROOT}
        if args.before:
            trees["before"] = args.before.resolve()
        for k, tree in trees.items():
            where = subprocess.run([sys.executable, "-c", "import mnistforge; print(mnistforge.__file__)"],
                                   env=dict(env, PYTHONPATH=str(tree)), cwd=work, capture_output=True,
                                   text=True, check=True).stdout.strip()
            print(f"  {k}: {where}")
        times: dict = {k: [] for k in ["naive", *trees]}
        loads = []
        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            order = ["naive", *trees] if r % 2 == 0 else [*trees, "naive"]
            for what in order:
                out = work / f"{what}-{r}"
                if what == "naive":
                    cmd = [sys.executable, "-c", NAIVE, str(folder), str(out)]
                    e = dict(env, PYTHONPATH=str(ROOT))
                else:
                    cmd = [sys.executable, "-m", "mnistforge", "export", "hf", str(folder), "--out", str(out)]
                    e = dict(env, PYTHONPATH=str(trees[what]))
                times[what].append(run(cmd, e, work))
                shutil.rmtree(out, ignore_errors=True)
                for p in work.glob(f"{what}-{r}-*.parquet"):
                    p.unlink()
            print(f"  round {r + 1}: load {loads[-1]:.1f}; "
                  + "; ".join(f"{k} {v[-1][0]:.2f} s wall, {v[-1][1]:.2f} s CPU" for k, v in times.items()))
        loads.append(os.getloadavg()[0])
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in times.items()}
        print(f"load average (1 min) over the run: {min(loads):.1f}-{max(loads):.1f}")
        for k, (w, c) in med.items():
            print(f"  {k:<7} median {w:6.2f} s wall, {c:6.2f} s CPU")
        print("ratios (naive / export; above 1: the export is faster):")
        for k in trees:
            print(f"  naive / {k}: {med['naive'][0] / med[k][0]:.2f}x wall, "
                  f"{med['naive'][1] / med[k][1]:.2f}x CPU (target >= 1.5x)")
        print(f"where the export's CPU goes (one process, load {os.getloadavg()[0]:.1f}):")
        lines = subprocess.run([sys.executable, "-c", BREAKDOWN, str(folder), str(work / "breakdown")],
                               env=dict(env, PYTHONPATH=str(ROOT)), cwd=work, capture_output=True,
                               text=True, check=True).stdout.splitlines()
        for line in lines:
            name, sec = line.split("\t")
            print(f"  {name:<62} {float(sec):6.2f} s CPU")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    raise SystemExit(main())
