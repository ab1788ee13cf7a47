"""The fault suite (issue 17): every way a careless or hostile user lost data, got a silently
different dataset, a raw traceback, a hang or a memory blow-up; each test keeps one fixed.

Races run real processes a few times; nothing here asserts a duration.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# the helpers shared with the main suite (tests/sd19_helpers.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


@pytest.fixture(scope="session")
def tiny_sd19(tmp_path_factory):
    """A small synthetic SD19 (2nd edition, zips), shared by the fault tests."""
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    return synthesize_sd19(tmp_path_factory.mktemp("faults") / "sd19",
                           SynthConfig(scale=0.002, workers=1), progress=False)
