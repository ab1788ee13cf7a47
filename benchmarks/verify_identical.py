"""``verify --json`` of an older revision and of this tree must be identical.

Exports ``mnistforge/`` of ``--ref`` (default ``main``) with ``git archive``,
runs ``python -m mnistforge verify TARGET --json`` with each package on
``PYTHONPATH`` (a fresh ``MNISTFORGE_HOME`` each) and compares the reports
(every check's verdict, numbers and message).  Exit status 1 on a difference.

Run: ``.venv/bin/python benchmarks/verify_identical.py [--ref main] [TARGET ...]``
(default targets: Debian's Fashion-MNIST folder and ``../shared/reference/mnist``).
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="main")
    ap.add_argument("targets", nargs="*", default=DEFAULT)
    args = ap.parse_args(argv)
    bad = 0
    with tempfile.TemporaryDirectory() as old:
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", args.ref, "mnistforge"],
                              check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=arch, check=True)
        for t in args.targets:
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
