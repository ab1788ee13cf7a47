"""Benchmark the export route's shard check (issue 26): first and repeat loads against the old path.

``mnistforge.load(..., root=EXPORT)`` now checks every shard it reads against the
hash the export recorded (the card's XXH3-128 of the shard where written, else its sha256):
hashed the first time the shard is seen, then trusted
while the file keeps its identity (one small record per shard read, no shard
bytes).  The old path, measured in the same run, is the same load with
``trust_files=True`` (no shard check at all).  Exports measured:

* the real MNIST test set (``../shared/reference/mnist``), PNG shards and ``--pixels bytes``;
* Fashion-MNIST train and test (Debian's ``dataset-fashion-mnist``, when installed).

Each round loads a split three ways, interleaved: old path; first load (the
records forgotten: every shard hashed); repeat load (records present).  Prints
the median times and the ratios of the medians and of the best times (on a shared
machine the best of many rounds is the steadier figure), then the best CPU times (all
threads); target: first <= 1.3x,
repeat <= 1.1x.  Run: ``.venv/bin/python benchmarks/bench_gate_hf.py [--rounds 15]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MNISTFORGE_PROGRESS", "0")
os.environ.setdefault("MNISTFORGE_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REFERENCE = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared")) / "reference" / "mnist"
FASHION = Path("/usr/share/datasets/fashion-mnist")


def _exports(work: Path) -> list[tuple[str, Path, str, list[str]]]:
    """``[(label, export folder, config, splits)]`` of what is available here."""
    from mnistforge import hub

    out = []
    if (REFERENCE / "t10k-images-idx3-ubyte.gz").is_file():
        for pixels in (None, "bytes"):
            repo = work / f"mnist-{pixels or 'png'}"
            hub.export_hf(repo, hub.configs_from_targets([f"{REFERENCE}:test"]), pixels=pixels,
                          croissant=True)
            out.append((f"MNIST test, {'--pixels bytes' if pixels else 'PNG shards'}", repo,
                        "mnist", ["test"]))
    if (FASHION / "train-images-idx3-ubyte.gz").is_file():
        repo = work / "fashion"
        hub.export_hf(repo, hub.configs_from_targets([f"{FASHION}:fashion-mnist"]), pixels="bytes")
        out.append(("Fashion-MNIST, --pixels bytes", repo, "fashion-mnist", ["train", "test"]))
    return out


def _time(fn, cpu: list) -> float:
    """Wall seconds of ``fn()``; its CPU seconds (all threads) appended to ``cpu``."""
    t, c = time.perf_counter(), time.process_time()
    fn()
    cpu.append(time.process_time() - c)
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="rounds per split")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-gate-hf-"))
    os.environ["MNISTFORGE_HOME"] = str(work / "cache")    # the seen records of this run only
    import mnistforge
    from mnistforge.cache.seen import forget
    from mnistforge.io.hf.repo import shard_paths

    exports = _exports(work)
    if not exports:
        print("no data: neither ../shared/reference/mnist nor Debian's fashion-mnist is here")
        return 1
    print(f"load average {os.getloadavg()[0]:.2f}, {args.rounds} rounds; seconds: median (best)")
    print(f"{'export / split':58s} {'old path':>15s} {'first':>15s} {'repeat':>15s} "
          f"{'first/old':>13s} {'repeat/old':>13s}")
    for label, repo, config, splits in exports:
        for split in splits:
            shards = shard_paths(repo, config, split)
            mnistforge.load(config, split, root=repo)      # warm: imports, page cache, records
            old, first, repeat = [], [], []
            cold, cfirst, crepeat = [], [], []
            for _ in range(args.rounds):
                old.append(_time(lambda: mnistforge.load(config, split, root=repo,
                                                         trust_files=True), cold))
                for p in shards:
                    forget(p)
                first.append(_time(lambda: mnistforge.load(config, split, root=repo), cfirst))
                repeat.append(_time(lambda: mnistforge.load(config, split, root=repo), crepeat))
            o, f, r = (statistics.median(v) for v in (old, first, repeat))
            bo, bf, br = (min(v) for v in (old, first, repeat))
            size = sum(p.stat().st_size for p in shards) / 2**20
            what = f"{label} / {split} ({len(shards)} shard(s), {size:.1f} MiB)"
            print(f"{what:58s} {o:7.4f} ({bo:.4f}) {f:7.4f} ({bf:.4f}) {r:7.4f} ({br:.4f}) "
                  f"{f / o:5.2f}x ({bf / bo:.2f}x) {r / o:5.2f}x ({br / bo:.2f}x)")
            co, cf, cr = (min(v) for v in (cold, cfirst, crepeat))
            print(f"{'  CPU, best':58s} {co:15.4f} {cf:15.4f} {cr:15.4f} {cf / co:12.2f}x "
                  f"{cr / co:12.2f}x")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    raise SystemExit(main())
