"""Full-scale proof: synthesise a complete SD19 replica, then ``mnistforge build all``.

Run on demand (not in CI).  Steps, each timed (wall clock and CPU time of this
process plus its worker processes) with its peak memory:

1. ``synth``  -- a synthetic SD19, 2nd edition, zips, ``--scale`` of NIST's counts
   (1 = 814,255 characters; skipped with ``--sd19 PATH``, which reuses a tree);
2. ``index``  -- ``open_sd19`` as ``build all`` opens it: the one pass over by_write that writes
   the index cache (``<sd19>/.mnistforge/``) and, from the same decode, every digit preprocessed
   for MNIST and every character converted for EMNIST (the products the builders take); instant
   when a cache for these zips already exists;
3. ``build all`` through the CLI (``mnistforge build all --sd19 ... --out ...``), with one
   stage per target it runs: ``qmnist``, ``mnist``, ``xnist``, ``emnist`` (the six EMNIST sets).

Around ``build all`` (before and after it, on the same source, in the same run) the **decode
floor** is timed: every by_write image decoded once with the package's own decoder on every
core, nothing kept (``--no-floor`` skips it), then the **compression floor**: every distinct
compressed output compressed again with the builders' own writers.  The report gives index +
build all over decode + compression (issue 44: within 1.5x CPU), and over the decode floor alone
(issue 33: within 3x), with the load average over the run.  ``--sha256 FILE`` records the sha256
of every output file, ``--compare FILE`` fails unless a later build (of other code, on the same
replica) gives the same bytes.

Memory: a sampling thread sums the resident memory of this process and all its
descendants every ``--interval`` seconds, as RSS (over-counts pages shared by
forked workers) and as PSS (shared pages divided among their users: the memory the
build really occupies); ``ru_maxrss`` of this process and of its largest child are
reported as well.  Disk: the SD19 zips, the index cache and every output folder.

With ``--alone``, ``mnistforge build qmnist`` and ``mnistforge build mnist`` then run
each on its own (nothing shared between them) with published QMNIST tables, for the
ratio of the two: ``--qmnist-labels DIR`` (the real tables fit the real SD19 or a
replica synthesised with ``--layout``) or, by default, the tables ``build all`` just
wrote (``<build>/qmnist``), which fit any source.

Prints a table and writes a JSON (``--json``).  Targets (issue 21): the whole build
(index + build all) under 5 minutes on an idle 2-core machine, peak memory under 2 GB;
``build mnist`` alone at most 40 % of ``build qmnist`` alone.  ``--fresh-index``
deletes the source's index cache first (the package's own ``<sd19>/.mnistforge``), so
the index stage is a first open.

    python benchmarks/bench_full_build.py --scale 0.01             # ~1 minute
    python benchmarks/bench_full_build.py --json /tmp/full.json    # full scale (see docs/full-scale.md)
    python benchmarks/bench_full_build.py --sd19 /tmp/sd19-full     # reuse a synthesised tree
    python benchmarks/bench_full_build.py --scale 0.1 --blas-threads 1   # one BLAS thread per call
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

GB = 1e9
MB = 1e6
TARGET_WALL_S = 5 * 60
TARGET_ALONE = 0.40
SD19_CHARACTERS = 814_255
BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
TARGET_MEM = 2 * GB
TARGET_FLOOR = 3.0     # issue 33: index + build all within 3x the decode floor
TARGET_ONCE = 1.5      # issue 44: within 1.5x CPU of decoding every character once + compressing every output once


# ---------------------------------------------------------------------------
# Memory of this process tree, sampled from /proc
# ---------------------------------------------------------------------------

def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name (field 2) may hold spaces: the ppid is the 2nd field after ')'
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _tree(root: int) -> list[int]:
    kids, out, todo = _children_map(), [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def _rss_pss(pid: int) -> tuple[int, int]:
    """Resident and proportional set size of one process in bytes (0, 0 if it is gone)."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


class MemorySampler(threading.Thread):
    """Peak summed RSS / PSS of this process and its descendants, per open tracker.

    Stages may nest (``build all`` holds one stage per target): each stage opens
    its own tracker and every sample updates all the open ones.
    """

    def __init__(self, interval: float = 0.5):
        super().__init__(daemon=True)
        self.interval = interval
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._open: list[dict] = []

    def open(self) -> dict:
        tracker = {"peak_rss_bytes": 0, "peak_pss_bytes": 0, "peak_processes": 0,
                   "peak_main_rss_bytes": 0}
        with self._lock:
            self._open.append(tracker)
        self.sample()
        return tracker

    def close(self, tracker: dict) -> dict:
        self.sample()
        with self._lock:
            self._open = [t for t in self._open if t is not tracker]
        return dict(tracker)

    def sample(self) -> None:
        me = os.getpid()
        pids = _tree(me)
        rss = pss = main_rss = 0
        for p in pids:
            r, s = _rss_pss(p)
            rss += r
            pss += s
            if p == me:
                main_rss = r
        with self._lock:
            for t in self._open:
                t["peak_rss_bytes"] = max(t["peak_rss_bytes"], rss)
                t["peak_pss_bytes"] = max(t["peak_pss_bytes"], pss)
                t["peak_processes"] = max(t["peak_processes"], len(pids))
                t["peak_main_rss_bytes"] = max(t["peak_main_rss_bytes"], main_rss)

    def run(self) -> None:
        while not self._halt.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._halt.set()


# ---------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------

class Stages:
    """Times named stages: wall clock, CPU (self + reaped children), peak memory."""

    def __init__(self, sampler: MemorySampler):
        self.sampler = sampler
        self.rows: list[dict] = []

    @contextlib.contextmanager
    def stage(self, name: str, **info):
        tracker = self.sampler.open()
        t0, c0 = time.perf_counter(), os.times()
        load0 = os.getloadavg()[0]
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", file=sys.stderr, flush=True)
        try:
            yield info
        finally:
            c1 = os.times()
            row = {"stage": name, "wall_s": time.perf_counter() - t0,
                   "cpu_self_s": (c1.user - c0.user) + (c1.system - c0.system),
                   "cpu_children_s": (c1.children_user - c0.children_user)
                   + (c1.children_system - c0.children_system),
                   "load_start": load0, "load_end": os.getloadavg()[0],
                   **self.sampler.close(tracker), **info}
            row["cpu_s"] = row["cpu_self_s"] + row["cpu_children_s"]
            self.rows.append(row)
            print(f"[{time.strftime('%H:%M:%S')}] {name}: {row['wall_s']:.1f} s wall, "
                  f"{row['cpu_s']:.1f} s CPU, peak PSS {row['peak_pss_bytes'] / MB:.0f} MB",
                  file=sys.stderr, flush=True)


def tree_bytes(path: Path) -> int:
    """Bytes of every regular file under ``path`` (or of the file itself)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(dirpath, f), follow_symlinks=False).st_size
    return total


def index_cache_dir(sd19: Path) -> Path | None:
    local = sd19 / ".mnistforge"
    if local.is_dir():
        return local
    home = Path(os.environ.get("MNISTFORGE_HOME", Path.home() / ".cache" / "mnistforge"))
    cached = home / "cache" / "sd19"
    return cached if cached.is_dir() else None


def build_all_products() -> list:
    """The SD19 products ``build all`` makes with its default options (the one pass, issue 44)."""
    from mnistforge.builders.emnist import EmnistBuildConfig, emnist_product
    from mnistforge.builders.mnist_prepro import MnistPreproConfig
    from mnistforge.builders.qmnist import mnist_product

    return [mnist_product(MnistPreproConfig()), emnist_product(EmnistBuildConfig())]


def run_build_all(stages: Stages, sd19: Path, out: Path, workers, extra=()) -> None:
    """``mnistforge build all`` through the CLI, one stage per target it builds."""
    from mnistforge.cli import main
    from mnistforge.commands import build as build_cmd

    original = build_cmd._build_inside

    def timed_build(build, args, target, folder):
        with stages.stage(target):
            return original(build, args, target, folder)

    argv = ["build", "all", "--sd19", str(sd19), "--out", str(out), *extra]
    if workers:
        argv += ["--workers", str(workers)]
    build_cmd._build_inside = timed_build
    try:
        with stages.stage("build all (total)"):
            rc = main(argv)
    finally:
        build_cmd._build_inside = original
    if rc:
        raise SystemExit(f"mnistforge build all failed with exit status {rc}")


def run_alone(stages: Stages, sd19: Path, work: Path, workers, extra=()) -> None:
    """``mnistforge build qmnist`` and ``build mnist`` each on its own (nothing shared)."""
    from mnistforge.cli import main

    for target in ("qmnist", "mnist"):
        out = work / f"alone-{target}"
        if out.exists():
            shutil.rmtree(out)
        argv = ["build", target, "--sd19", str(sd19), "--out", str(out), *extra]
        if workers:
            argv += ["--workers", str(workers)]
        with stages.stage(f"{target} alone"):
            rc = main(argv)
        if rc:
            raise SystemExit(f"mnistforge build {target} failed with exit status {rc}")
        shutil.rmtree(out)


def _decode_only(spec, table, fmt) -> int:
    """Worker: decode the given by_write files with the package's decoder; only a count travels back."""
    from mnistforge.sd19.decode import _load_files

    per_file, stacked = _load_files(spec, table, fmt)
    return len(stacked) if stacked is not None else sum(len(x) for x in per_file)


def decode_floor(stages: Stages, sd19: Path, workers, name: str) -> None:
    """The floor of issue 33: decode every SD19 (by_write) image once, on every core, with the
    package's own decoder (the index's reader, chunks of 512 files), keeping nothing."""
    from mnistforge import settings
    from mnistforge.sd19 import open_sd19
    from mnistforge.sd19.decode import _bounds, _Pool

    src = open_sd19(sd19, workers=workers)            # the index is cached: no decoding here
    tree = src.trees["by_write"]
    fmt = "png" if src.edition == 2 else "mis"
    table, n = src.files, len(src.index)
    del src
    with stages.stage(name) as info, _Pool(settings.current(workers=workers).workers) as pool:
        step = 512 if fmt == "png" else 8
        jobs = ((tree.spec(), table[s:e], fmt) for s, e in _bounds(len(table), step))
        info["images"] = done = sum(pool.map(_decode_only, jobs))
    if done != n:
        raise SystemExit(f"decode floor: {done} images decoded, the index has {n}")


def profile_pass(sd19: Path) -> dict:
    """Where the one pass's CPU goes (``--profile``): each step over every by_write file, in
    chunks of 512 files as the pass's workers take them, in this process (one BLAS thread)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from mnistforge.builders.emnist import EmnistBuildConfig, _convert
    from mnistforge.builders.mnist_prepro import MnistPreproConfig, preprocess
    from mnistforge.sd19 import index as sd19_index, open_sd19
    from mnistforge.sd19.decode import _bounds, _load_files

    src = open_sd19(sd19)
    tree, fmt = src.trees["by_write"], "png" if src.edition == 2 else "mis"
    digit = src.index["field"] == b"d"
    cfg = EmnistBuildConfig()
    cpu = dict.fromkeys(("decode", "hash", "MNIST preprocessing (digits)", "EMNIST conversion (every character)"), 0.0)

    def timed(step, fn):
        t = time.process_time()
        got = fn()
        cpu[step] += time.process_time() - t
        return got

    row = 0
    with threadpool_limits(limits=1, user_api="blas"):
        for s, e in _bounds(len(src.files), 512):
            per_file, _ = timed("decode", lambda: _load_files(tree.spec(), src.files[s:e], fmt))
            imgs = np.concatenate(per_file)
            d = digit[row:row + len(imgs)]
            row += len(imgs)
            timed("hash", lambda: sd19_index.hash_images(imgs))
            timed("MNIST preprocessing (digits)", lambda: preprocess(imgs[d], MnistPreproConfig()))
            timed("EMNIST conversion (every character)", lambda: _convert(imgs, cfg.prepro, cfg.orientation))
    return cpu


def compression_cpu(out: Path) -> dict:
    """CPU seconds the build's compressed outputs cost to compress with the package's own writers
    (gzip as the builders write it, level 6 or 9; xnist's multi-stream xz), each distinct file
    once (EMNIST's bymerge files are byclass's, copied), on this process's one core; a file whose
    bytes are not reproduced is listed and not counted.  Byte-identical outputs need this work."""
    import gzip
    import hashlib
    import io
    import lzma

    from mnistforge.builders.qmnist_files import _xz_parallel
    from mnistforge.io.compression import open_gzip_writer

    seen, cpu, files, missed = set(), 0.0, 0, []
    for p in sorted(out.rglob("*")):
        if p.suffix not in (".gz", ".xz"):
            continue
        data = p.read_bytes()
        digest = hashlib.sha256(data).digest()
        if digest in seen:
            continue
        seen.add(digest)
        raw = gzip.decompress(data) if p.suffix == ".gz" else lzma.decompress(data)
        attempts = ([lambda lvl=lvl: _gz(open_gzip_writer, io, raw, lvl) for lvl in (6, 9)]
                    if p.suffix == ".gz" else [lambda: _xz_parallel(raw)])
        for attempt in attempts:
            t = time.process_time()
            again = attempt()
            dt = time.process_time() - t
            if again == data:
                cpu += dt
                files += 1
                break
        else:
            missed.append(str(p.relative_to(out)))
    return {"cpu_s": cpu, "files": files, "not_reproduced": missed}


def _gz(open_gzip_writer, io, raw: bytes, level: int) -> bytes:
    buf = io.BytesIO()
    with open_gzip_writer(buf, level=level) as gz:
        gz.write(raw)
    return buf.getvalue()


def output_hashes(out: Path) -> dict:
    """sha256 of every file of a build, by path under ``out`` (the byte-identity check)."""
    from mnistforge.io.hashing import sha256_file

    return {str(p.relative_to(out)): sha256_file(p) for p in sorted(out.rglob("*")) if p.is_file()}


def count_outputs(out: Path) -> dict:
    """Images per split of every built dataset (from the files' headers)."""
    from mnistforge.io.idx import read_idx_header

    counts = {}
    for sub in sorted(p for p in out.iterdir() if p.is_dir()):
        for f in sorted(sub.glob("*images*")):
            counts[f"{sub.name}/{f.name}"] = int(read_idx_header(f).shape[0])
    return counts


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

def _fmt_s(s: float) -> str:
    return f"{s:8.1f} s" if s < 120 else f"{s / 60:6.1f} min"


def print_report(result: dict) -> None:
    print(f"\nfull build of a synthetic SD19 at scale {result['scale']:g} "
          f"({result['characters']:,} characters) on {result['machine']['cpus']} cores, "
          f"load average {result['machine']['load_start']:.1f} at start, "
          f"{result['machine']['load_end']:.1f} at end\n")
    head = f"{'stage':<20} {'wall':>10} {'CPU':>10} {'load':>5} {'peak PSS':>10} {'peak RSS':>10} {'procs':>5}"
    print(head)
    print("-" * len(head))
    for r in result["stages"]:
        print(f"{r['stage']:<20} {_fmt_s(r['wall_s']):>10} {_fmt_s(r['cpu_s']):>10} "
              f"{(r['load_start'] + r['load_end']) / 2:5.1f} "
              f"{r['peak_pss_bytes'] / MB:8.0f} MB {r['peak_rss_bytes'] / MB:8.0f} MB "
              f"{r['peak_processes']:5d}")
    total = [r for r in result["stages"] if r["stage"] == "build all (total)"][0]
    print(f"(build all outside its four targets -- CLI start-up, imports, renames: "
          f"{total['outside_targets_wall_s']:.1f} s wall)")
    t = result["totals"]
    print(f"\nindex + build all: {_fmt_s(t['build_wall_s']).strip()} wall "
          f"(target < 5 min: {'met' if t['build_wall_s'] < TARGET_WALL_S else 'NOT met'}), "
          f"{_fmt_s(t['build_cpu_s']).strip()} CPU "
          f"(= {t['build_cpu_s'] / result['machine']['cpus'] / 60:.1f} min on "
          f"{result['machine']['cpus']} idle cores if it parallelised perfectly)")
    print(f"peak memory (process tree, PSS): {t['peak_pss_bytes'] / GB:.2f} GB "
          f"(target < 2 GB: {'met' if t['peak_pss_bytes'] < TARGET_MEM else 'NOT met'}); "
          f"summed RSS {t['peak_rss_bytes'] / GB:.2f} GB; ru_maxrss main "
          f"{result['ru_maxrss']['self_bytes'] / GB:.2f} GB, largest child "
          f"{result['ru_maxrss']['children_bytes'] / GB:.2f} GB")
    if "floor" in result:
        f = result["floor"]
        print(f"decode floor (every by_write image once, all cores; mean of the runs before and "
              f"after build all): {f['wall_s']:.1f} s wall, {f['cpu_s']:.1f} s CPU; index + build all "
              f"/ floor: {f['ratio_wall']:.2f}x wall, {f['ratio_cpu']:.2f}x CPU (target <= "
              f"{TARGET_FLOOR:.0f}x: {'met' if f['ratio_wall'] <= TARGET_FLOOR else 'NOT met'}); "
              f"load average {f['load'][0]:.1f}-{f['load'][1]:.1f} over the run")
        if "compression" in result:
            c = result["compression"]
            print(f"compression floor (the {c['files']} distinct compressed outputs compressed again with "
                  f"the package's writers, the same bytes): {c['cpu_s']:.1f} s CPU = "
                  f"{c['cpu_s'] / f['cpu_s']:.2f}x the decode floor's CPU"
                  + (f"; not reproduced: {c['not_reproduced']}" if c["not_reproduced"] else ""))
            r = f["ratio_decode_and_compress_cpu"]
            print(f"index + build all / (decode once + compress once) = {t['build_cpu_s']:.1f} s / "
                  f"{f['decode_and_compress_cpu_s']:.1f} s CPU = {r:.2f}x (issue 44: <= {TARGET_ONCE}x: "
                  f"{'met' if r <= TARGET_ONCE else 'NOT met'})")
    if "profile" in result:
        print("\nthe one pass, step by step (one process, chunks of 512 files; CPU):")
        for step, cpu in result["profile"].items():
            print(f"  {step:<40} {cpu:8.2f} s")
        if "compression" in result:
            print(f"  {'compression of the outputs (floor)':<40} {result['compression']['cpu_s']:8.2f} s")
    if "alone" in result:
        a = result["alone"]
        print(f"build mnist alone / build qmnist alone: {a['mnist_s']:.1f} s / {a['qmnist_s']:.1f} s"
              f" = {a['ratio']:.2f} (target <= {TARGET_ALONE:.2f}: "
              f"{'met' if a['ratio'] <= TARGET_ALONE else 'NOT met'})")
    print("\ndisk:")
    for k, v in result["disk"].items():
        print(f"  {k:<28} {v / MB:10.1f} MB")
    print("\nimages per file:")
    for k, v in result["outputs"].items():
        print(f"  {k:<52} {v:>9,}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0,
                    help="fraction of SD19 to synthesise (1 = 814,255 characters)")
    ap.add_argument("--sd19", type=Path, default=None,
                    help="reuse this SD19 (real or synthetic) instead of synthesising one")
    ap.add_argument("--work", type=Path, default=None,
                    help="folder for the synthetic SD19 and the build (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic SD19 and the build")
    ap.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic SD19")
    ap.add_argument("--interval", type=float, default=0.5, help="memory sampling period (s)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    ap.add_argument("--alone", action="store_true",
                    help="also time build qmnist and build mnist each on its own")
    ap.add_argument("--qmnist-labels", default=None,
                    help="passed to the builds (the published tables fix the order)")
    ap.add_argument("--fresh-index", action="store_true",
                    help="delete <sd19>/.mnistforge first, so the index is built")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the decode floor (decoding every by_write image once, before and "
                         "after build all)")
    ap.add_argument("--sha256", type=Path, default=None, metavar="FILE",
                    help="write the sha256 of every output file here (JSON)")
    ap.add_argument("--compare", type=Path, default=None, metavar="FILE",
                    help="fail unless every output has the sha256 recorded in FILE (--sha256 of "
                         "an earlier run, e.g. of the previous code, on the same replica)")
    ap.add_argument("--profile", action="store_true",
                    help="also time each step of the one pass (decode, hash, MNIST preprocessing, EMNIST "
                         "conversion) in this process, against the floor")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="set OPENBLAS_NUM_THREADS/OMP_NUM_THREADS (before NumPy is imported)")
    args = ap.parse_args(argv)
    if args.blas_threads:
        if "numpy" in sys.modules:
            raise SystemExit("--blas-threads must be set before NumPy is imported")
        for var in BLAS_VARS:
            os.environ[var] = str(args.blas_threads)

    import logging
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from mnistforge.sd19 import open_sd19
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    work = args.work or Path(tempfile.mkdtemp(prefix="mnistforge-full-"))
    work.mkdir(parents=True, exist_ok=True)
    sampler = MemorySampler(args.interval)
    sampler.start()
    stages = Stages(sampler)
    machine = {"cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
               "platform": platform.platform(), "python": platform.python_version(),
               "load_start": os.getloadavg()[0],
               "blas_env": {v: os.environ.get(v) for v in BLAS_VARS},
               "mem_total_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")}
    out = work / "build"
    try:
        if args.sd19 is None:
            sd19 = work / f"sd19-synth-x{args.scale:g}"
            cfg = SynthConfig(scale=args.scale, edition=2, packaging="zip", seed=args.seed,
                              workers=args.workers, overwrite=True)
            with stages.stage("synth"):
                synthesize_sd19(sd19, cfg)
        else:
            sd19 = args.sd19
        if args.fresh_index and (sd19 / ".mnistforge").is_dir():
            shutil.rmtree(sd19 / ".mnistforge")
        with stages.stage("index") as info:
            info["cache_existed"] = index_cache_dir(sd19) is not None
            # what `build all` opens: the index and the images of every build from one decode
            # (issue 44), kept next to the index, where the builders take them from
            src = open_sd19(sd19, workers=args.workers, products=build_all_products())
            characters = int(len(src.index))
            info["characters"] = characters
            info["digits"] = int(len(src.digits()))
            del src
        if out.exists():
            shutil.rmtree(out)
        extra = ["--qmnist-labels", str(args.qmnist_labels)] if args.qmnist_labels else []
        if not args.no_floor:
            decode_floor(stages, sd19, args.workers, "decode floor (before)")
        run_build_all(stages, sd19, out, args.workers, extra)
        if not args.no_floor:
            decode_floor(stages, sd19, args.workers, "decode floor (after)")
        hashes = output_hashes(out)
        compression = compression_cpu(out) if not args.no_floor else None
        profile = profile_pass(sd19) if args.profile else None
        if args.sha256:
            args.sha256.parent.mkdir(parents=True, exist_ok=True)
            args.sha256.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
        if args.compare:
            want = json.loads(args.compare.read_text())
            differ = sorted(k for k in set(want) | set(hashes) if want.get(k) != hashes.get(k))
            print(f"outputs against {args.compare}: {len(hashes)} files, "
                  + ("all byte-identical" if not differ else f"{len(differ)} DIFFER: {differ[:10]}"))
            if differ:
                raise SystemExit(1)

        disk = {}
        for z in sorted(sd19.glob("*.zip")):
            disk[f"sd19/{z.name}"] = tree_bytes(z)
        disk["sd19 (all)"] = tree_bytes(sd19)
        cache = index_cache_dir(sd19)
        if cache is not None:
            disk["index cache"] = tree_bytes(cache)
        for sub in sorted(p for p in out.iterdir() if p.is_dir()):
            disk[f"build/{sub.name}"] = tree_bytes(sub)
        disk["build (all)"] = tree_bytes(out)
        outputs = count_outputs(out)
        if args.alone:
            # The published tables fix the selection; on a synthetic replica (whose digits
            # are not NIST's) the tables of the build just made stand in for them.
            tables = args.qmnist_labels or out / "qmnist"
            run_alone(stages, sd19, work, args.workers, ["--qmnist-labels", str(tables)])
    finally:
        sampler.stop()
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)

    by = {r["stage"]: r for r in stages.rows}
    targets = [r for r in stages.rows if r["stage"] in ("qmnist", "mnist", "xnist", "emnist")]
    total = by["build all (total)"]
    # CLI start-up (argument parsing imports every command module) and moving folders into place
    by["build all (total)"]["outside_targets_wall_s"] = total["wall_s"] - sum(
        r["wall_s"] for r in targets)
    build_rows = [by["index"], by["build all (total)"]]
    machine["load_end"] = os.getloadavg()[0]
    result = {
        "scale": args.scale if args.sd19 is None else characters / SD19_CHARACTERS,
        "sd19": str(sd19), "characters": characters,
        "machine": machine,
        "stages": stages.rows,
        "totals": {
            "build_wall_s": sum(r["wall_s"] for r in build_rows),
            "build_cpu_s": sum(r["cpu_s"] for r in build_rows),
            "all_wall_s": sum(r["wall_s"] for r in stages.rows
                              if r["stage"] in ("synth", "index", "build all (total)")),
            "peak_pss_bytes": max(r["peak_pss_bytes"] for r in build_rows),
            "peak_rss_bytes": max(r["peak_rss_bytes"] for r in build_rows),
        },
        "ru_maxrss": {  # Linux reports KiB
            "self_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "children_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024},
        "disk": disk,
        "outputs": outputs,
        "targets": {"wall_s": TARGET_WALL_S, "memory_bytes": TARGET_MEM},
    }
    result["targets"]["wall_met"] = result["totals"]["build_wall_s"] < TARGET_WALL_S
    result["targets"]["memory_met"] = result["totals"]["peak_pss_bytes"] < TARGET_MEM
    floors = [r for r in stages.rows if r["stage"].startswith("decode floor")]
    if compression is not None:
        result["compression"] = compression
    if floors:
        wall = sum(r["wall_s"] for r in floors) / len(floors)
        cpu = sum(r["cpu_s"] for r in floors) / len(floors)
        once = cpu + (compression["cpu_s"] if compression is not None else float("nan"))
        result["floor"] = {"wall_s": wall, "cpu_s": cpu,
                           "ratio_wall": result["totals"]["build_wall_s"] / wall,
                           "ratio_cpu": result["totals"]["build_cpu_s"] / cpu,
                           "decode_and_compress_cpu_s": once,
                           "ratio_decode_and_compress_cpu": result["totals"]["build_cpu_s"] / once,
                           "load": [min(min(r["load_start"], r["load_end"]) for r in stages.rows),
                                    max(max(r["load_start"], r["load_end"]) for r in stages.rows)]}
    if profile is not None:
        result["profile"] = profile
    if args.alone:
        q, m = by["qmnist alone"]["wall_s"], by["mnist alone"]["wall_s"]
        result["alone"] = {"qmnist_s": q, "mnist_s": m, "ratio": m / q}
    print_report(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    from stamp import stamp  # benchmarks/stamp.py: the date and the load average of the run
    print(stamp(), flush=True)
    raise SystemExit(main())
