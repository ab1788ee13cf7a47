"""Run ``mnistforge ARGS`` in this process as a new process would see it; used by the fault
suite (``faults_helpers.cli``) and the docs' shell blocks (``docs_sybil``).

A fresh interpreter costs about 0.7 CPU s a command (Python, NumPy, SciPy, the package) and the
suites run some 350 commands on every supported Python in CI, so the command's own ``main`` runs
here: with its own environment, folder, standard input (the null device) and standard streams
(real files: the commands ask for their descriptors), logging set up by ``main`` and Python's
default warning filters printing to standard error; all put back afterwards.  Standard output is
block-buffered and standard error is not, as through a pipe, so merged output keeps a process's
order.  ``MNISTFORGE_TEST_FRESH=1`` starts ``python -m mnistforge`` for every command instead.
"""
from __future__ import annotations

import contextlib
import faulthandler
import io
import logging
import os
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

from mnistforge.cli import main

ROOT = Path(__file__).resolve().parents[1]
FRESH = os.environ.get("MNISTFORGE_TEST_FRESH", "") not in ("", "0")


def child_env(env=None) -> dict[str, str]:
    """The test's environment, ``env`` over it, with this checkout importable."""
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def run(argv, *, env=None, cwd=None, timeout=300, merged=False, fresh=False) -> subprocess.CompletedProcess:
    """``mnistforge ARGV``: exit code, standard output and error (``merged``: both in ``stdout``)."""
    argv = [str(a) for a in argv]
    if fresh or FRESH:
        return subprocess.run([sys.executable, "-m", "mnistforge", *argv], text=True, timeout=timeout,
                              env=child_env(env), check=False, cwd=cwd, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT if merged else subprocess.PIPE)
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    root = logging.getLogger()
    saved_log = (root.handlers[:], root.level)
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull) as stdin, warnings.catch_warnings():
        names = [os.path.join(tmp, "out"), os.path.join(tmp, "out" if merged else "err")]
        # O_APPEND: the two streams may share one file, each writing at its end
        out = io.TextIOWrapper(open(names[0], "ab", buffering=8192), encoding="utf-8")
        err = io.TextIOWrapper(open(names[1], "ab", buffering=0), encoding="utf-8", write_through=True)
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: err.write(
            warnings.formatwarning(m, c, f, n, line))
        os.environ.update({k: str(v) for k, v in (env or {}).items()})
        root.handlers[:] = []
        faulthandler.dump_traceback_later(timeout, exit=True)   # a hang ends the worker, named
        try:
            if cwd is not None:
                os.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _stdin(stdin):
                try:
                    code = main(argv)
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                except Exception:
                    err.write(traceback.format_exc())
                    code = 1
        finally:
            faulthandler.cancel_dump_traceback_later()
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            root.handlers[:], root.level = saved_log
            for stream in (out, err):
                with contextlib.suppress(ValueError, OSError):   # a command may have closed it
                    stream.close()
        texts = [Path(n).read_bytes().decode("utf-8", "replace") for n in names]
    return subprocess.CompletedProcess(["mnistforge", *argv], code, texts[0], "" if merged else texts[1])


@contextlib.contextmanager
def _stdin(stream):
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved
