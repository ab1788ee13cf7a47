"""Repeat loads of every route against ``numpy.load(mmap_mode="r")`` of the same bytes (issue 33).

One split (MNIST's test set, ``../shared/reference/mnist``; else Debian's Fashion-MNIST test
set) through each route ``mnistforge.load`` has, each loaded once first (everything
recorded: raw copies, sidecars, ``<cache>/seen/`` records), then timed per call against
``np.load`` of the images and labels as ``.npy`` files (memory-mapped), in alternating batches
(``--batch`` calls, ``--samples`` batches each: both see the same machine).  The figure is the
ratio of the medians; the ratio of the fastest batches follows it (on a shared machine the
fastest batch is the cost without the others' interference).  The CPU time of the fastest
batches (``time.process_time``, this process) is printed too: on a shared machine it is the
steadier figure.  Target: within 1.5x.

What a load derived from files is kept in memory only once the files are older than
``mnistforge.cache.seen.RACY_NS`` (3 s: a change in the same timestamp tick would not show in
their identity), so the script waits that long after the first loads before timing.

Routes: ``cache`` (raw copies in the cache, memory maps), ``folder raw`` (a folder of raw idx
files: memory maps), ``build folder`` (the same with a build ``manifest.json``), ``folder
keep_raw`` (a folder of ``.gz`` with ``keep_raw=True``: raw copies in ``<cache>/local-raw/``),
``npz`` (a Keras-style ``.npz``: read whole, it is a zip), ``hf export`` (``--pixels bytes``:
parquet read whole) and ``folder .gz`` (decompressed on every load: no memory map to compare
with; printed for scale).  The machine load is printed before and after.

Usage: ``python benchmarks/bench_repeat_load.py [--samples 15] [--batch 20]``
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MNISTFORGE_PROGRESS", "0")
os.environ.setdefault("MNISTFORGE_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

MNIST = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared")) / "reference" / "mnist"
FASHION = Path("/usr/share/datasets/fashion-mnist")
IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


def pair(a, b, samples: int, batch: int):
    """Per-call wall and CPU times of ``a`` and ``b`` over ``samples`` alternating batches of
    ``batch`` calls: ``(wall a, wall b, cpu a, cpu b)``, lists of ``samples`` each."""
    ta, tb, ca, cb = [], [], [], []
    for _ in range(samples):
        for fn, out, cpu in ((a, ta, ca), (b, tb, cb)):
            t, c = time.perf_counter(), time.process_time()
            for _ in range(batch):
                fn()
            out.append((time.perf_counter() - t) / batch)
            cpu.append((time.process_time() - c) / batch)
    return ta, tb, ca, cb


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--no-hf", action="store_true", help="skip the Hugging Face export")
    args = ap.parse_args(argv)
    src, name = (MNIST, "mnist") if (MNIST / IMAGES).is_file() else (FASHION, "fashion-mnist")
    if not (src / IMAGES).is_file():
        print("skipped: neither ../shared/reference/mnist nor Debian's fashion-mnist is here")
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-repeat-"))
    cache = work / "cache"
    os.environ["MNISTFORGE_HOME"] = str(cache)
    import mnistforge
    from mnistforge.io.idx import read_idx, write_idx

    images, labels = np.asarray(read_idx(src / IMAGES)), np.asarray(read_idx(src / LABELS))
    np.save(work / "images.npy", images)
    np.save(work / "labels.npy", labels)

    # the baseline at its cheapest: paths as strings made once (np.load of a Path object, or
    # one built per call, costs ~50 % more and flattered every ratio measured against it)
    npy_images, npy_labels = str(work / "images.npy"), str(work / "labels.npy")

    def npy():
        np.load(npy_images, mmap_mode="r")
        np.load(npy_labels, mmap_mode="r")

    group = cache / name
    group.mkdir(parents=True)
    gz = work / "gz"
    raw = work / "raw"
    built = work / "built"
    for d in (gz, raw, built):
        d.mkdir()
    for f in (IMAGES, LABELS):
        shutil.copy(src / f, group / f)
        shutil.copy(src / f, gz / f)
        write_idx(raw / f[:-3], read_idx(src / f))
        write_idx(built / f[:-3], read_idx(src / f))
    from mnistforge.io.manifest import write_manifest

    write_manifest(built, kind=name, inputs={}, parameters={})   # records the files' hashes
    np.savez(work / "copy.npz", x_test=images, y_test=labels)
    routes = {
        "cache": lambda: mnistforge.load(name, "test", download=False),
        "folder raw": lambda: mnistforge.load(name, "test", root=raw),
        "build folder": lambda: mnistforge.load(name, "test", root=built),
        "folder keep_raw": lambda: mnistforge.load(name, "test", root=gz, keep_raw=True),
        "npz": lambda: mnistforge.load(name, "test", root=work / "copy.npz"),
    }
    if not args.no_hf:
        try:
            from mnistforge import hub

            hub.export_hf(work / "hf", hub.configs_from_targets([f"{gz}:{name}"]), pixels="bytes")
            routes["hf export"] = lambda: mnistforge.load(name, "test", root=work / "hf")
        except Exception as e:  # noqa: BLE001 - datasets/pyarrow absent: the other routes still run
            print(f"no Hugging Face export ({type(e).__name__}: {e})")
    routes["folder .gz"] = lambda: mnistforge.load(name, "test", root=gz)
    for fn in routes.values():
        ds = fn()   # everything recorded once
        assert np.array_equal(np.asarray(ds.images), images)
    from mnistforge.cache import seen

    # the files' identities old enough to be kept in memory (code without a memory: no wait)
    time.sleep(getattr(seen, "RACY_NS", 0) / 1e9 + 0.1)

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{name} test, {len(images):,} images; per call, median of {args.samples} alternating "
          f"batches of {args.batch} (fastest batch)")
    print(f"{'route':16} {'load ms':>16} {'np.load ms':>16} {'ratio':>14} {'cpu load ms':>12} "
          f"{'cpu np.load':>12} {'cpu ratio':>9}")
    worst = worst_cpu = 0.0
    for label, fn in routes.items():
        batch = max(1, args.batch // 10) if label in ("folder .gz", "hf export", "npz") else args.batch
        ta, tb, ca, cb = pair(fn, npy, args.samples, batch)
        a, b = statistics.median(ta), statistics.median(tb)
        mem = label not in ("folder .gz", "hf export", "npz")
        if mem:
            worst = max(worst, a / b)
            worst_cpu = max(worst_cpu, min(ca) / min(cb))
        note = "" if mem else "  (not a memory map)"
        print(f"{label:16} {a * 1e3:8.3f} ({min(ta) * 1e3:.3f}) {b * 1e3:8.3f} ({min(tb) * 1e3:.3f}) "
              f"{a / b:6.2f}x ({min(ta) / min(tb):.2f}x) {min(ca) * 1e3:12.3f} {min(cb) * 1e3:12.3f} "
              f"{min(ca) / min(cb):8.2f}x{note}")
    print(f"worst ratio of the memory-mapped routes: {worst:.2f}x wall (median), {worst_cpu:.2f}x CPU "
          f"(fastest batches) (target <= 1.5x)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
