"""Helpers of the fault suite: run the CLI with the test's environment (tests/cli_runner.py)."""
from __future__ import annotations

import subprocess
import sys

from cli_runner import ROOT, child_env, run

__all__ = ["ROOT", "cli", "start_cli"]


def cli(*args, timeout=300, env=None, cwd=None, fresh=False) -> subprocess.CompletedProcess:
    """``mnistforge ARGS`` as a user runs it (in this process unless ``fresh``: see cli_runner)."""
    return run(args, env=env, cwd=cwd, timeout=timeout, fresh=fresh)


def start_cli(*args, env=None) -> subprocess.Popen:
    """``python -m mnistforge ARGS`` started in a new process (signals, races, closed pipes)."""
    return subprocess.Popen([sys.executable, "-m", "mnistforge", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(env))
