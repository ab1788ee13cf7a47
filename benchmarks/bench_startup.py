"""Start-up as whole processes: `mnistforge --help`, and one-shot scripts that load one split.

Each command runs as a fresh ``python`` process ``--repeat`` times, interleaved; medians and
ratios are printed with the machine load.  Compared (issue 21, item 4):

* ``mnistforge --help`` vs ``python -c pass`` (the interpreter alone) and whether NumPy ran;
* a script ``mnistforge.load("fashion-mnist", "test")`` served from the cache's raw copies,
  and one ``mnistforge.load("fashion-mnist", "test", root=FOLDER)`` of a folder holding the
  same raw idx files, each vs ``idx2numpy.convert_from_file`` of those files
  (``pip install idx2numpy``; skipped when absent).  Target: as fast as idx2numpy's script.
  Every script sums the images, so the pixels are read, not just mapped.

Two settings of Python's bytecode cache, both for every command:

* ``as here``: the environment as it is.  Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the
  development machines) an editable install's modules are compiled from source on every
  start, while installed packages (NumPy, idx2numpy) load their compiled files;
* ``bytecode cached``: ``PYTHONDONTWRITEBYTECODE`` unset and ``PYTHONPYCACHEPREFIX`` a fresh
  folder, warmed by one run of each command: what a ``pip install``ed package (compiled at
  install time) or an editable one without that variable gets.

Then, bytecode cached, where the time goes: the phases of each one-shot script inside its
process (import NumPy, import the package, load, sum; wall and CPU), what the first load adds
to importing NumPy (import the package + load: target <= 5 ms, issue 33), and the ``-X
importtime`` self time of each module the mnistforge load imports that idx2numpy's script does
not.

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


#: inside one process: the phases of each one-shot script, timed with perf_counter
PHASES = {
    "one-shot load (cache)": ("import mnistforge; from mnistforge.loaders import core",
                              "ds = mnistforge.load('fashion-mnist', 'test', download=False)",
                              "ds.images.sum(axis=0)"),
    "one-shot load (root=folder)": ("import mnistforge; from mnistforge.loaders import core",
                                    "ds = mnistforge.load('fashion-mnist', 'test', root=FOLDER)",
                                    "ds.images.sum(axis=0)"),
    "one-shot idx2numpy": ("import idx2numpy",
                           "a = idx2numpy.convert_from_file(IMAGES); b = idx2numpy.convert_from_file(LABELS)",
                           "a.sum(axis=0)"),
}


def phases(py, name, env, repeat, images, labels) -> tuple[list[float], list[float], list[float]]:
    """Medians (ms) of: import numpy, import the package, load, sum (bytecode cached), wall and
    CPU (``time.process_time``); and the CPU time of import the package + load, per run."""
    imp, load, use = PHASES[name]
    stamp = "t.append(time.perf_counter()); c.append(time.process_time())"
    code = (f"import os, time\nIMAGES, LABELS = {str(images)!r}, {str(labels)!r}\n"
            f"FOLDER = os.path.dirname(IMAGES)\nt, c = [], []\n{stamp}\n"
            f"import numpy\n{stamp}\n{imp}\n{stamp}\n{load}\n{stamp}\n{use}\n{stamp}\n"
            "print(*[(b - a) * 1e3 for a, b in zip(t, t[1:])], *[(b - a) * 1e3 for a, b in zip(c, c[1:])])")
    rows = [[float(x) for x in subprocess.run([py, "-c", code], env=env, check=True, capture_output=True,
                                              text=True).stdout.split()] for _ in range(repeat)]
    cols = [statistics.median(col) for col in zip(*rows)]
    return cols[:4], cols[4:], [r[5] + r[6] for r in rows]


def import_self_times(py, code, env, repeat, skip) -> list[tuple[float, str]]:
    """``-X importtime``: the median self time (ms) of each module imported by ``code`` but not
    in ``skip``, largest first."""
    got: dict[str, list[float]] = {}
    for _ in range(repeat):
        err = subprocess.run([py, "-X", "importtime", "-c", code], env=env, check=True,
                             capture_output=True, text=True).stderr
        for line in err.splitlines():
            if line.startswith("import time:") and "|" in line and "self [us]" not in line:
                self_us, _, mod = line[len("import time:"):].split("|")
                got.setdefault(mod.strip(), []).append(int(self_us) / 1e3)
    return sorted(((statistics.median(v), m) for m, v in got.items() if m not in skip), reverse=True)


def modules_after(py, code, env) -> tuple[int, int]:
    """(modules, mnistforge modules) in sys.modules after ``code``."""
    out = subprocess.run([py, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return len(out), sum(m.startswith("mnistforge") for m in out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    py = sys.executable
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, MNISTFORGE_HOME=str(Path(d) / "cache"), MNISTFORGE_PROGRESS="0")
        cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = str(Path(d) / "pycache")
        envs = {"as here": env, "bytecode cached": cached}
        cmds = {"python -c pass": [py, "-c", "pass"],
                "mnistforge --help": [py, "-m", "mnistforge", "--help"]}
        scripts = {}
        if (FASHION / "t10k-images-idx3-ubyte.gz").is_file():
            group = Path(d) / "cache" / "fashion-mnist"
            group.mkdir(parents=True)
            for f in FASHION.glob("t10k-*.gz"):
                shutil.copy(f, group / f.name)
            load = ("import mnistforge; ds = mnistforge.load('fashion-mnist', 'test', download=False); "
                    "ds.images.sum(axis=0)")
            subprocess.run([py, "-c", load], env=env, check=True)   # makes the raw copies
            folder = Path(d) / "folder"
            folder.mkdir()
            for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
                shutil.copy(group / name, folder / name)
            scripts["one-shot load (cache)"] = load
            scripts["one-shot load (root=folder)"] = (
                "import mnistforge; ds = mnistforge.load('fashion-mnist', 'test', root=%r); "
                "ds.images.sum(axis=0)" % str(folder))
            try:
                import idx2numpy  # noqa: F401
                scripts["one-shot idx2numpy"] = (
                    "import idx2numpy; a = idx2numpy.convert_from_file(%r); "
                    "b = idx2numpy.convert_from_file(%r); a.sum(axis=0)"
                    % (str(folder / "t10k-images-idx3-ubyte"), str(folder / "t10k-labels-idx1-ubyte")))
            except ImportError:
                print("idx2numpy not installed: pip install idx2numpy")
        cmds.update({name: [py, "-c", code] for name, code in scripts.items()})
        for name, cmd in cmds.items():   # warm-up: fills the bytecode cache, the page cache
            run(cmd, cached)
        times: dict[tuple[str, str], list[float]] = {(e, k): [] for e in envs for k in cmds}
        print(f"load average before: {os.getloadavg()}")
        for _ in range(args.repeat):
            for e, environ in envs.items():
                for name, cmd in cmds.items():
                    times[e, name].append(run(cmd, environ))
        print(f"load average after: {os.getloadavg()}")
        numpy_ran = subprocess.run(
            [py, "-c", "import sys, contextlib, io\nfrom mnistforge.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    try: main(['--help'])\n"
             "    except SystemExit: pass\nprint('numpy._core' in sys.modules)"],
            env=env, capture_output=True, text=True).stdout.strip()
        counts = {name: modules_after(py, code, env) for name, code in scripts.items()}
        inside: dict[str, tuple[list[float], list[float], list[float]]] = {}
        own: list[tuple[float, str]] = []
        if "one-shot idx2numpy" in scripts:
            raw = (folder / "t10k-images-idx3-ubyte", folder / "t10k-labels-idx1-ubyte")
            inside = {name: phases(py, name, cached, args.repeat, *raw) for name in PHASES}
            base = set(subprocess.run([py, "-c", scripts["one-shot idx2numpy"] +
                                       "\nimport sys; print('\\n'.join(sys.modules))"], env=cached,
                                      check=True, capture_output=True, text=True).stdout.split())
            own = import_self_times(py, scripts["one-shot load (cache)"], cached, args.repeat, base)
    med = {k: statistics.median(v) for k, v in times.items()}
    for e in envs:
        print(f"{e}:")
        for name in cmds:
            extra = f"  ({counts[name][0]} modules, {counts[name][1]} of mnistforge)" if name in counts else ""
            print(f"  {name:<30} {med[e, name] * 1e3:8.1f} ms (median of {args.repeat}){extra}")
        if "one-shot idx2numpy" in cmds:
            for name in ("one-shot load (cache)", "one-shot load (root=folder)"):
                pairs = [a / b for a, b in zip(times[e, name], times[e, "one-shot idx2numpy"])]
                print(f"  ratio {name} / idx2numpy: {med[e, name] / med[e, 'one-shot idx2numpy']:.2f}x "
                      f"(median of pairs {statistics.median(pairs):.2f}x; target <= 1.0x)")
        print(f"  ratio mnistforge --help / python -c pass: "
              f"{med[e, 'mnistforge --help'] / med[e, 'python -c pass']:.2f}x")
    print(f"--help runs NumPy: {numpy_ran}")
    if inside:
        print("inside the process, bytecode cached (median ms): import numpy, import the package, load, sum;"
              " then the same as CPU time")
        for name, (ms, cpu, _) in inside.items():
            print(f"  {name:<30} " + "  ".join(f"{x:6.2f}" for x in ms) + "   cpu "
                  + "  ".join(f"{x:6.2f}" for x in cpu))
        for name, (ms, cpu, sums) in inside.items():
            if name.startswith("one-shot load"):
                print(f"  {name}: the first load adds {ms[1] + ms[2]:.2f} ms (wall, medians; CPU "
                      f"{statistics.median(sums):.2f}, fastest {min(sums):.2f}) to importing NumPy "
                      f"(import the package + load; target <= 5 ms)")
        print(f"  imports of the cache load that idx2numpy's script does not make: {len(own)}, "
              f"{sum(t for t, _ in own):.1f} ms of self time (-X importtime, median), largest:")
        print("   " + ", ".join(f"{m} {t:.2f}" for t, m in own[:8]))
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
