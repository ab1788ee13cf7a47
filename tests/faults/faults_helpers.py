"""Helpers of the fault suite: run the CLI with the test's environment and see what it printed.

:func:`cli` runs the command's own ``main`` in this process by default: a fresh interpreter costs
about 0.7 CPU s a call (Python, NumPy, SciPy, the package), and the suites make some 250 calls
on every supported Python in CI.  ``fresh=True`` (or ``MNISTFORGE_TEST_FRESH=1`` for all calls)
starts ``python -m mnistforge`` instead, for what only a whole process shows.
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

ROOT = Path(__file__).resolve().parents[2]
FRESH = os.environ.get("MNISTFORGE_TEST_FRESH", "") not in ("", "0")


def _env(env):
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def cli(*args, timeout=300, env=None, cwd=None, fresh=False) -> subprocess.CompletedProcess:
    """Run ``mnistforge ARGS`` as a user would: exit code, standard output and error."""
    argv = [str(a) for a in args]
    if fresh or FRESH:
        return subprocess.run([sys.executable, "-m", "mnistforge", *argv], capture_output=True,
                              text=True, timeout=timeout, env=_env(env), check=False, cwd=cwd)
    return _in_process(argv, timeout, env or {}, cwd)


def _in_process(argv, timeout, env, cwd) -> subprocess.CompletedProcess:
    # what a new process would have: its own environment, folder, standard streams (real files,
    # not pipes: the commands ask for their descriptors), logging set up by main, and Python's
    # default warning filters printing to standard error; all put back afterwards
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    root = logging.getLogger()
    saved_log = (root.handlers[:], root.level)
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f, \
            open(os.devnull) as stdin, warnings.catch_warnings():
        out = io.TextIOWrapper(out_f, encoding="utf-8", write_through=True)
        err = io.TextIOWrapper(err_f, encoding="utf-8", write_through=True)
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: err.write(
            warnings.formatwarning(m, c, f, n, line))
        os.environ.update({k: str(v) for k, v in env.items()})
        root.handlers[:] = []
        faulthandler.dump_traceback_later(timeout, exit=True)   # a hang ends the worker, named
        try:
            if cwd is not None:
                os.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                    _swap_stdin(stdin):
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
        texts = []
        for stream, f in ((out, out_f), (err, err_f)):
            with contextlib.suppress(ValueError):   # a command may have closed it
                stream.flush()
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
        for stream in (out, err):
            stream.detach() if not stream.closed else None
    return subprocess.CompletedProcess(["mnistforge", *argv], code, texts[0], texts[1])


@contextlib.contextmanager
def _swap_stdin(stream):
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def start_cli(*args, env=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mnistforge", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(env))
