"""What the trust gate costs: loads through the gate against the same loads on the code before it.

Baseline: the package as it was at ``--base`` (default ``031793e``, the commit the gate was
built on), extracted with ``git archive`` into a temporary folder and imported from there
in its own processes; the gated package is this checkout.  Not ``trust_files=True`` on the
gated code: that skips the content checks but also the old label check, so it would measure
less than today's path and overstate the gate's cost.

Cases (real files: MNIST's test set from ``../shared/reference/mnist``, Debian's
Fashion-MNIST from ``/usr/share/datasets/fashion-mnist``):

* ``folder``: ``load(name, split, root=FOLDER)`` on a folder of the ``.gz`` files;
* ``cache``: ``load(name, split)`` from a cache holding the ``.gz`` files.

``first``: a load with nothing recorded (an empty cache and a fresh copy of the folder for
the folder route, raw copies and sidecars removed for the cache route: new files either
way); ``repeat``: a load once everything is recorded.
Each process times ``--repeat`` loads; the two codes alternate, in ``--rounds`` rounds.  The
ratio is gated / baseline of the fastest load of each (on a shared machine the minimum is
the cost without the other processes' interference); the medians' ratio follows it, then the
CPU time of the process (all threads: the gate's second hashing thread counts in full, so on
a busy machine this is the fairer measure, and an upper bound of the wall time on an idle one).
Targets: first loads within 1.3x, repeat loads within 1.1x.

Usage: ``python benchmarks/bench_gate.py [--repeat 5] [--rounds 3] [--base REV]``
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MNIST = ROOT.parent / "shared" / "reference" / "mnist"
FASHION = Path("/usr/share/datasets/fashion-mnist")
FILES = {("mnist", "test"): (MNIST, ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")),
         ("fashion-mnist", "test"): (FASHION, ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")),
         ("fashion-mnist", "train"): (FASHION, ("train-images-idx3-ubyte.gz",
                                                "train-labels-idx1-ubyte.gz"))}

WORKER = r'''
import json, os, shutil, statistics, sys, time
import numpy as np
import mnistforge
route, name, split, mode, repeat, work = sys.argv[1:7]
repeat = int(repeat)
folder = os.path.join(work, "folders", name)
template = os.path.join(work, "cache-template")

def fresh_cache(i):
    c = os.path.join(work, "run", f"c{i}")
    shutil.rmtree(c, ignore_errors=True)
    if route == "cache":
        shutil.copytree(template, c)
    else:
        os.makedirs(c)
    return c

def fresh_folder(i):
    # a copy (new inodes) for every first load: files never seen by this process, so what a
    # process keeps in memory of files it saw (cache.seen.known) cannot make it a repeat load
    d = os.path.join(work, "run", f"f{i}")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(folder, d)
    return d

def one(c, where=None):
    kw = dict(root=where or folder) if route == "folder" else dict(download=False)
    t, cpu = time.perf_counter(), time.process_time()
    ds = mnistforge.load(name, split, cache=c, **kw)
    int(np.asarray(ds.images[-1]).sum())   # touch the data (a memory map reads on use)
    cpus.append(time.process_time() - cpu)
    return time.perf_counter() - t, ds

times, cpus = [], []
c = fresh_cache("warm")
if mode == "repeat":
    one(c)                                  # everything recorded once
    # then older than cache.seen.RACY_NS, as a user's files and records are: what a process
    # keeps in memory of them is kept only once their identities are that old
    time.sleep(3.1)
for i in range(repeat):
    where = None
    if mode == "first":
        c = fresh_cache(i)
        where = fresh_folder(i) if route == "folder" else None
    dt, ds = one(c, where)
    times.append(dt)
assert len(ds) > 0
cpus = cpus[-repeat:]
print(json.dumps({"median": statistics.median(times), "min": min(times), "times": times,
                  "cpu": min(cpus)}))
'''


def prepare(work: Path) -> None:
    """Folders of the .gz files, and a cache template holding them (no raw copies yet)."""
    for (name, _), (src, files) in FILES.items():
        d = work / "folders" / name
        d.mkdir(parents=True, exist_ok=True)
        c = work / "cache-template" / name
        c.mkdir(parents=True, exist_ok=True)
        for f in files:
            if not (d / f).exists():
                shutil.copy(src / f, d / f)
                shutil.copy(src / f, c / f)


def base_tree(rev: str, work: Path) -> Path:
    """The package at ``rev``, extracted (no checkout touched)."""
    out = work / f"base-{rev}"
    if not out.is_dir():
        out.mkdir()
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "mnistforge"], check=True,
                             capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=tar, check=True)
    return out


def run(code: Path, route: str, name: str, split: str, mode: str, repeat: int, work: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(code), MNISTFORGE_OFFLINE="1", MNISTFORGE_PROGRESS="0")
    env.pop("MNISTFORGE_TRUST_FILES", None)
    # bytecode cached, as in an installed package: with PYTHONDONTWRITEBYTECODE set (CI, some
    # sandboxes) every process would compile the modules a load imports, and the gated code's
    # extra modules would count their compile time in each load
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run([sys.executable, "-c", WORKER, route, name, split, mode, str(repeat), str(work)],
                         env=env, capture_output=True, text=True, cwd=work)
    if out.returncode:
        raise SystemExit(f"{code} {route} {name} {split} {mode}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", default="031793e")
    args = ap.parse_args(argv)
    missing = [str(src / f) for src, files in FILES.values() for f in files if not (src / f).is_file()]
    if missing:
        print("missing real files:", ", ".join(missing), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        work = Path(tmp)
        prepare(work)
        codes = {"base": base_tree(args.base, work), "gated": ROOT}
        for code in codes.values():  # writes the bytecode of what a load imports, untimed
            run(code, "folder", "mnist", "test", "first", 1, work)
        print(f"baseline {args.base} (git archive) vs this checkout; median of {args.repeat} loads, "
              f"{args.rounds} alternating rounds")
        print(f"{'route':7} {'dataset':14} {'split':6} {'load':7} {'base ms':>9} {'gated ms':>9} "
              f"{'ratio':>6} {'median ratio':>12} {'cpu base':>9} {'cpu gated':>9} {'cpu ratio':>9}")
        worst = {"first": 0.0, "repeat": 0.0}
        for route in ("folder", "cache"):
            for name, split in FILES:
                for mode in ("first", "repeat"):
                    t: dict[str, list[dict]] = {"base": [], "gated": []}
                    for _ in range(args.rounds):
                        for k, code in codes.items():
                            t[k].append(run(code, route, name, split, mode, args.repeat, work))
                    b, g = (min(r["min"] for r in t[k]) for k in ("base", "gated"))
                    bm, gm = (statistics.median(r["median"] for r in t[k]) for k in ("base", "gated"))
                    bc, gc = (min(r["cpu"] for r in t[k]) for k in ("base", "gated"))
                    worst[mode] = max(worst[mode], g / b)
                    print(f"{route:7} {name:14} {split:6} {mode:7} {b * 1e3:9.1f} {g * 1e3:9.1f} "
                          f"{g / b:6.2f} {gm / bm:12.2f} {bc * 1e3:9.1f} {gc * 1e3:9.1f} "
                          f"{gc / max(bc, 1e-9):9.2f}")
        print(f"worst ratio of the fastest loads: first {worst['first']:.2f} (target 1.3), "
              f"repeat {worst['repeat']:.2f} (target 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
