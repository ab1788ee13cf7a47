"""``verify --json`` of an older revision and of this tree must be identical.

Exports ``mnistforge/`` of ``--ref`` (default ``main``) with ``git archive``,
runs ``python -m mnistforge verify TARGET --json`` with each package on
``PYTHONPATH`` (a fresh ``MNISTFORGE_HOME`` each) and compares the reports
(every check's verdict, numbers and message).  Exit status 1 on a difference.

Run: ``.venv/bin/python benchmarks/verify_identical.py [--ref main] [TARGET ...]``
(default targets: Debian's Fashion-MNIST folder, ``../shared/reference/mnist`` and a copy
of Fashion-MNIST with planted duplicates: test images copied into train, repeated training
images and near copies, so every duplicate check has pairs to report).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["/usr/share/datasets/fashion-mnist", str(ROOT.parent / "shared" / "reference" / "mnist")]


def report(pkg_root: Path, target: str) -> dict:
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, PYTHONPATH=str(pkg_root), MNISTFORGE_HOME=home)
        out = subprocess.run([sys.executable, "-m", "mnistforge", "verify", target, "--json"],
                             env=env, capture_output=True, text=True, cwd=home)
    return json.loads(out.stdout)


def planted(src: Path, dest: Path) -> str:
    """Fashion-MNIST with exact, within-split and near duplicates planted (official names)."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from mnistforge.io.idx import read_idx, write_idx

    tr = np.array(read_idx(src / "train-images-idx3-ubyte.gz"))
    te = np.array(read_idx(src / "t10k-images-idx3-ubyte.gz"))
    tr[100:140] = te[:40]                   # train-test leakage
    tr[200:230] = tr[300:330]               # repeated training images
    te[500:520] = te[600:620]               # repeated test images
    near = te[40:80].astype(np.int16)
    near[:, 10:14, 10:14] += 3                # within the L2 radius, not identical
    tr[400:440] = np.clip(near, 0, 255)
    dest.mkdir()
    write_idx(dest / "train-images-idx3-ubyte.gz", tr)
    write_idx(dest / "t10k-images-idx3-ubyte.gz", te)
    for f in ("train-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        (dest / f).write_bytes((src / f).read_bytes())
    return str(dest)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="main")
    ap.add_argument("targets", nargs="*", default=DEFAULT)
    args = ap.parse_args(argv)
    argv_targets = args.targets != DEFAULT
    bad = 0
    with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as tmp:
        targets = list(args.targets)
        if not argv_targets and Path(DEFAULT[0]).is_dir():
            targets.append(planted(Path(DEFAULT[0]), Path(tmp) / "fashion-mnist-planted"))
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", args.ref, "mnistforge"],
                              check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=arch, check=True)
        for t in targets:
            if not Path(t).exists():
                print(f"skipped (absent): {t}")
                continue
            a, b = report(Path(old), t), report(ROOT, t)
            same = a == b
            bad += not same
            n = len(b.get("results", []))
            print(f"{'IDENTICAL' if same else 'DIFFERENT'}: {t} ({n} checks, status {b['status']})")
            if not same:
                for ra, rb in zip(a.get("results", []), b.get("results", [])):
                    if ra != rb:
                        print(f"  {ra['name']}:\n    {args.ref}: {ra}\n    tree: {rb}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
