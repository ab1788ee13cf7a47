"""Benchmark of ``mnistforge verify``.

1. The near-duplicate search, 10,000 test images against 60,000 training
   images: our blocked search (pooled pre-filter + float32 matrix products +
   exact check of the candidates) against a brute-force NumPy loop (one query
   at a time, full 784-pixel distances).  The loop is timed on a sample of
   queries and extrapolated to 10,000 (it would take minutes); both must give
   the same pairs on that sample.
2. A full ``verify`` of a 70,000-image build folder (60,000 train + 10,000 test).

Data: the real MNIST test images when ``../shared/reference/mnist`` is present
(the training set is made of shifted and lightly perturbed copies of them, so
the search finds real near-duplicates), else synthetic strokes.

3. Floors against ``verify`` of Fashion-MNIST (Debian's files, ``--fashion``), in one
   run: the inflate-and-hash floor (read each file, sha256 of its bytes, inflate
   it, sha256 of the content), the near-duplicate search's own matrix
   products (the same float32 blocks of pooled images), all 600 million
   test x train dot products over the 784 pixels in float32 blocks, and
   ``verify`` with and without ``--no-near``, with the ratios, the date and the load
   average.  The search and its products are timed with 1 and with 2 BLAS threads
   (``threadpoolctl``).  Times are CPU seconds of the process (``time.process_time``, all
   threads), the best of ``--repeat`` runs; wall seconds are printed too.

Run: ``.venv/bin/python benchmarks/bench_verify.py [--queries-brute 100] [--only fashion]``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from stamp import stamp

ROOT = Path(__file__).resolve().parents[1]
MNIST = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared")) / "reference" / "mnist"


def test_images(rng):
    from mnistforge.io.idx import read_idx

    p = MNIST / "t10k-images-idx3-ubyte.gz"
    if p.is_file():
        return np.asarray(read_idx(p)), np.asarray(read_idx(MNIST / "t10k-labels-idx1-ubyte.gz")), \
            "real MNIST test images"
    x = np.zeros((10000, 28, 28), np.uint8)
    for k in range(10000):
        r = np.clip(np.rint(np.linspace(rng.uniform(4, 8), rng.uniform(20, 24), 60)), 1, 26)
        c = np.clip(np.rint(14 + np.cumsum(rng.normal(0, 0.4, 60))), 2, 25)
        x[k, r.astype(int), c.astype(int)] = 255
        x[k, r.astype(int), c.astype(int) + 1] = 160
    return x, rng.integers(0, 10, 10000).astype(np.uint8), "synthetic strokes"


def train_from(test, rng, n=60000):
    """60,000 images: copies of the test images, some shifted (+-2 px), ink lightly perturbed."""
    idx = rng.integers(0, len(test), n)
    out = np.empty((n, 28, 28), np.uint8)
    for s in range(0, n, 5000):
        blk = test[idx[s:s + 5000]].copy()
        # A third of the blocks stay in place (near-duplicates to find), the
        # rest move by up to two pixels (far under L2, like different drawings).
        dy, dx = rng.integers(-2, 3, 2) if (s // 5000) % 3 else (0, 0)
        blk = np.roll(blk, (int(dy), int(dx)), axis=(1, 2))
        noise = rng.integers(-3, 4, blk.shape) * (rng.random(blk.shape) < 0.05) * (blk > 0)
        out[s:s + 5000] = np.clip(blk.astype(np.int16) + noise, 0, 255)
    return out, idx


FASHION = Path("/usr/share/datasets/fashion-mnist")


def _timed(fn, repeat: int):
    """(best CPU seconds, best wall seconds, last result) of ``repeat`` calls."""
    cpu, wall, out = [], [], None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall), out


def _inflate_and_hash(folder: Path) -> int:
    """The floor of the file checks: every byte read and hashed (sha256), inflated, the content hashed (sha256)."""
    import hashlib
    try:
        from isal import isal_zlib as z  # the inflater the package uses when present
    except ImportError:
        import zlib as z
    n = 0
    for p in sorted(folder.glob("*.gz")):
        raw = p.read_bytes()
        hashlib.sha256(raw).digest()
        content = z.decompress(raw, 31)
        hashlib.sha256(content).digest()
        n += len(content)
    return n


def _products(query, base, dims_pooled: bool):
    """The float32 block products of the search (pooled) or over the full 784 pixels."""
    from mnistforge.io.similar import _pool, _pool_factor

    if dims_pooled:
        f = _pool_factor(*query.shape[1:])
        qf, bf = _pool(query, f), _pool(base, f)
    else:
        qf = query.reshape(len(query), -1).astype(np.float32)
        bf = base.reshape(len(base), -1).astype(np.float32)
    nb = len(bf)
    block = int(max(16, min(1024, (16 << 20) // max(1, nb))))  # as find_near_duplicates
    buf = np.empty((block, nb), np.float32)

    def run():
        for s in range(0, len(qf), block):
            e = min(len(qf), s + block)
            np.matmul(qf[s:e], bf.T, out=buf[: e - s])
    return run


def fashion(folder: Path, repeat: int) -> None:
    from threadpoolctl import threadpool_limits

    from mnistforge.checks import verify
    from mnistforge.checks.duplicates import find_near_duplicates
    from mnistforge.io.idx import read_idx

    print(f"\nFashion-MNIST ({folder}); {stamp()}")
    train = np.asarray(read_idx(folder / "train-images-idx3-ubyte.gz"))
    test = np.asarray(read_idx(folder / "t10k-images-idx3-ubyte.gz"))
    with tempfile.TemporaryDirectory() as home:
        os.environ["MNISTFORGE_HOME"] = home
        verify(folder, split="test", near=False)  # imports and first-call costs out of the way
        rows = {}
        rows["floor: sha256 + inflate + content sha256, 4 files"] = _timed(
            lambda: _inflate_and_hash(folder), repeat)
        for threads in (1, 2):
            with threadpool_limits(threads, user_api="blas"):
                rows[f"floor: search's pooled float32 products, {threads} BLAS thread(s)"] = _timed(
                    _products(test, train, True), repeat)
                rows[f"near-duplicate search, {threads} BLAS thread(s)"] = _timed(lambda: find_near_duplicates(
                    test, train, progress_bar=False), repeat)
        rows["floor: 600 M test x train products, 784 px, float32"] = _timed(
            _products(test, train, False), 1)
        rows["verify --no-near"] = _timed(lambda: verify(folder, near=False), repeat)
        rows["verify (all checks)"] = _timed(lambda: verify(folder), repeat)
    print(f"CPU = process_time (all threads), best of {repeat}; {stamp()}")
    for k, (c, w, _) in rows.items():
        print(f"  {k:<60} CPU {c:7.2f} s   wall {w:7.2f} s")
    cpu = {k: v[0] for k, v in rows.items()}
    files = cpu["floor: sha256 + inflate + content sha256, 4 files"]
    full = cpu["floor: 600 M test x train products, 784 px, float32"]
    for threads in (1, 2):
        own = cpu[f"floor: search's pooled float32 products, {threads} BLAS thread(s)"]
        print(f"  search / its own products, {threads} BLAS thread(s): "
              f"{cpu[f'near-duplicate search, {threads} BLAS thread(s)'] / own:.2f}x (target <= 1.5)")
    print(f"  verify --no-near / (sha256 + inflate + content sha256): {cpu['verify --no-near'] / files:.2f}x "
          "(target <= 2)")
    print(f"  verify / (sha256 + inflate + content sha256 + 784-px products): "
          f"{cpu['verify (all checks)'] / (files + full):.2f}x (target <= 0.5)")
    _per_check(folder, repeat)


def _per_check(folder: Path, repeat: int) -> None:
    """Where ``verify --no-near``'s CPU goes: each check's CPU seconds (mean of ``repeat`` runs), the loads alone."""
    import collections

    import mnistforge.checks.table as table
    from mnistforge import load
    from mnistforge.checks import verify

    spent: collections.Counter = collections.Counter()
    run_check = table.run_check

    def timed(name, func, *a, **k):
        c0 = time.process_time()
        try:
            return run_check(name, func, *a, **k)
        finally:
            spent[name.split("[")[0]] += time.process_time() - c0
    table.run_check = timed
    try:
        c0 = time.process_time()
        for _ in range(repeat):
            verify(folder, near=False)
        total = (time.process_time() - c0) / repeat
    finally:
        table.run_check = run_check
    c0 = time.process_time()
    for _ in range(repeat):
        for split in ("train", "test"):
            load("fashion-mnist", split, root=folder, with_metadata=True, trust_files=True)
    print(f"verify --no-near, CPU by check (mean of {repeat}; {stamp()}): total {total:.2f} s")
    print(f"  {'load (both splits, timed alone)':<40} {(time.process_time() - c0) / repeat:.3f} s")
    for name, c in spent.most_common():
        print(f"  {name:<40} {c / repeat:.3f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries-brute", type=int, default=100,
                    help="queries timed with the brute-force loop (extrapolated to 10,000)")
    ap.add_argument("--threshold", type=float, default=None, help="L2 radius (default 128)")
    ap.add_argument("--fashion", type=Path, default=FASHION,
                    help="Fashion-MNIST folder for the floors of part 3 (skipped when absent)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per timing in part 3 (best kept)")
    ap.add_argument("--only", choices=("fashion",), help="only part 3")
    args = ap.parse_args(argv)
    if args.only != "fashion":
        synthetic(args)
    if (args.fashion / "train-images-idx3-ubyte.gz").is_file():
        fashion(args.fashion, args.repeat)
    else:
        print(f"part 3 skipped: no Fashion-MNIST files in {args.fashion}")


def synthetic(args):

    from mnistforge.checks import verify
    from mnistforge.checks.duplicates import (DEFAULT_NEAR_L2, find_near_duplicates,
                                              nearest_brute_force)
    from mnistforge.io.idx import write_idx
    from mnistforge.io.manifest import write_manifest

    t = args.threshold or DEFAULT_NEAR_L2
    rng = np.random.default_rng(0)
    test, test_labels, what = test_images(rng)
    train, idx = train_from(test, rng)
    print(f"data: {what}; train = 60,000 shifted/perturbed copies; threshold L2 {t:g}; {stamp()}")

    t0 = time.perf_counter()
    fast = find_near_duplicates(test, train, t, progress_bar=False)
    t_fast = time.perf_counter() - t0
    print(f"blocked search 10,000 x 60,000: {t_fast:.2f} s, {len(fast)} pairs, "
          f"{fast.queries.size} test images with a near-duplicate, "
          f"{fast.candidates} candidates after the pre-filter")

    q = args.queries_brute
    t0 = time.perf_counter()
    slow = nearest_brute_force(test[:q], train, t)
    t_slow = time.perf_counter() - t0
    t_slow_full = t_slow * len(test) / q
    sub = fast.pairs[fast.pairs[:, 0] < q]
    assert sub.tolist() == slow.pairs.tolist(), "blocked search and brute force disagree"
    print(f"brute-force loop: {t_slow:.2f} s for {q} queries -> {t_slow_full:.1f} s for 10,000 "
          f"(extrapolated); same pairs on the sample")
    print(f"ratio (brute force / blocked): {t_slow_full / t_fast:.1f}x")

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "mnist70k"
        d.mkdir()
        train_labels = test_labels[idx]
        write_idx(d / "train-images-idx3-ubyte.gz", train)
        write_idx(d / "train-labels-idx1-ubyte.gz", train_labels)
        write_idx(d / "t10k-images-idx3-ubyte.gz", test)
        write_idx(d / "t10k-labels-idx1-ubyte.gz", test_labels)
        write_manifest(d, kind="mnist", inputs={"bench": True}, parameters={})
        t0 = time.perf_counter()
        rep = verify(d, near_threshold=t)
        t_ver = time.perf_counter() - t0
    c = rep.counts()
    print(f"full verify of 70,000 images: {t_ver:.2f} s ({c['pass']} passed, {c['warn']} "
          f"warnings, {c['fail']} failed: the copies are meant to be found)")
    for r in rep.results:
        if r.status != "pass":
            print(f"  {r.status.upper()} {r.name}: {r.message}")


if __name__ == "__main__":
    main()
