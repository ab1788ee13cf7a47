"""Start-up as whole processes: `mnistforge --help`, and a one-shot script that loads one split.

Each command runs as a fresh ``python`` process ``--repeat`` times, interleaved; medians and
ratios are printed with the machine load.  Compared (issue 21, item 4):

* ``mnistforge --help`` vs ``python -c pass`` (the interpreter alone) and whether NumPy ran;
* a script ``mnistforge.load("fashion-mnist", "test")`` served from the cache's raw copy vs
  ``idx2numpy.convert_from_file`` of the same raw files (``pip install idx2numpy``; skipped
  when absent).  Target: the one-shot load as fast as idx2numpy's script.

Usage: ``python benchmarks/bench_startup.py [--repeat 15]``
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

FASHION = Path("/usr/share/datasets/fashion-mnist")


def run(cmd, env) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    py = sys.executable
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, MNISTFORGE_HOME=str(Path(d) / "cache"), MNISTFORGE_PROGRESS="0")
        cmds = {"python -c pass": [py, "-c", "pass"],
                "mnistforge --help": [py, "-m", "mnistforge", "--help"]}
        if (FASHION / "t10k-images-idx3-ubyte.gz").is_file():
            group = Path(d) / "cache" / "fashion-mnist"
            group.mkdir(parents=True)
            for f in FASHION.glob("t10k-*.gz"):
                shutil.copy(f, group / f.name)
            load = ("import mnistforge; ds = mnistforge.load('fashion-mnist', 'test', download=False); "
                    "ds.images.sum(axis=0)")
            subprocess.run([py, "-c", load], env=env, check=True)   # makes the raw copies
            cmds["one-shot mnistforge.load (cache)"] = [py, "-c", load]
            try:
                import idx2numpy  # noqa: F401
                raw = group / "t10k-images-idx3-ubyte"
                cmds["one-shot idx2numpy"] = [py, "-c", (
                    "import idx2numpy; a = idx2numpy.convert_from_file(%r); "
                    "b = idx2numpy.convert_from_file(%r); a.sum(axis=0)")
                    % (str(raw), str(group / "t10k-labels-idx1-ubyte"))]
            except ImportError:
                print("idx2numpy not installed: pip install idx2numpy")
        times: dict[str, list[float]] = {k: [] for k in cmds}
        print(f"load average before: {os.getloadavg()}")
        for _ in range(args.repeat):
            for name, cmd in cmds.items():
                times[name].append(run(cmd, env))
        numpy_ran = subprocess.run(
            [py, "-c", "import sys, contextlib, io\nfrom mnistforge.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    try: main(['--help'])\n"
             "    except SystemExit: pass\nprint('numpy._core' in sys.modules)"],
            env=env, capture_output=True, text=True).stdout.strip()
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, t in med.items():
        print(f"  {name:<34} {t * 1e3:8.1f} ms (median of {args.repeat})")
    print(f"  --help runs NumPy: {numpy_ran}")
    if "one-shot idx2numpy" in med:
        print(f"ratio one-shot mnistforge.load / idx2numpy: "
              f"{med['one-shot mnistforge.load (cache)'] / med['one-shot idx2numpy']:.2f}x (target <= 1.0x)")
    print(f"ratio mnistforge --help / python -c pass: {med['mnistforge --help'] / med['python -c pass']:.2f}x")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
