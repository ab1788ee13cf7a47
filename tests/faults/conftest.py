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


FOLDER_ROWS = 30   # the tests that use `test_folder` write predictions of this length (their N)


@pytest.fixture
def test_folder(tmp_path):
    """A small EMNIST-digits folder (30 random images per split, labels 0-9 in turn, manifest)."""
    import numpy as np

    from mnistforge.io.idx import write_idx
    from mnistforge.io.manifest import Manifest

    d = tmp_path / "digits"
    rng = np.random.default_rng(0)
    for part in ("train", "test"):
        write_idx(d / f"emnist-digits-{part}-images-idx3-ubyte.gz",
                  rng.integers(0, 256, (FOLDER_ROWS, 28, 28), dtype=np.uint8))
        write_idx(d / f"emnist-digits-{part}-labels-idx1-ubyte.gz",
                  (np.arange(FOLDER_ROWS) % 10).astype(np.uint8))
    Manifest(kind="emnist").write(d)
    return d
