"""Helpers of the fault suite: run the CLI in a fresh process with the test's environment."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(*args, timeout=300, env=None, cwd=None) -> subprocess.CompletedProcess:
    """Run ``python -m mnistforge ARGS`` in a fresh process (the environment of the test)."""
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "mnistforge", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=e, check=False,
                          cwd=cwd)


def start_cli(*args, env=None) -> subprocess.Popen:
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "mnistforge", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
