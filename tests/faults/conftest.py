"""The fault suite (issue 17): every way a careless or hostile user lost data, got a silently
different dataset, a raw traceback, a hang or a memory blow-up; each test keeps one fixed.

Races run real processes a few times; nothing here asserts a duration.  Helpers live in
``faults_helpers.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the helpers shared with the main suite (tests/sd19_helpers.py) and faults_helpers.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def tiny_sd19(tmp_path_factory):
    """A small synthetic SD19 (2nd edition, zips), shared by the fault tests."""
    from mnistforge.sd19.synth import SynthConfig, synthesize_sd19

    return synthesize_sd19(tmp_path_factory.mktemp("faults") / "sd19",
                           SynthConfig(scale=0.002, workers=1), progress=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_sd19):
    """A real `build mnist` folder, one per test module (copy it before changing it)."""
    from faults_helpers import cli

    out = tmp_path_factory.mktemp("built") / "mnist"
    r = cli("build", "mnist", "--sd19", tiny_sd19, "--out", out, "--workers", "1")
    assert r.returncode == 0, r.stderr
    return out
