"""Shared fixtures: where the real reference data lives, and skips when it is absent."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MNISTFORGE_SHARED", ROOT.parent / "shared"))
REFERENCE = SHARED / "reference"
FASHION = Path("/usr/share/datasets/fashion-mnist")


def pytest_configure(config):
    # A suite started in the background (`cmd &` without job control, nohup) inherits SIGINT
    # ignored, and so would every command it starts: the Ctrl-C tests need it delivered.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    # Full-scale tests only run when asked for with -m slow (make test-slow).
    markexpr = config.getoption("-m") or ""
    if "slow" in markexpr:
        return
    skip = pytest.mark.skip(reason="slow (full-scale) test: run with `make test-slow`")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"real reference data not found at {REFERENCE} (../shared absent)")
    return REFERENCE


@pytest.fixture(scope="session")
def mnist_reference(reference_dir) -> Path:
    p = reference_dir / "mnist"
    if not (p / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"real MNIST test files not found in {p}")
    return p


@pytest.fixture(scope="session")
def qmnist_reference(reference_dir) -> Path:
    p = reference_dir / "qmnist"
    if not (p / "qmnist-test-labels.tsv.gz").is_file():
        pytest.skip(f"real QMNIST label files not found in {p}")
    return p


@pytest.fixture(scope="session")
def fashion_dir() -> Path:
    if not FASHION.is_dir() or not any(FASHION.iterdir()):
        pytest.skip(f"Debian's dataset-fashion-mnist not installed ({FASHION} absent)")
    return FASHION


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    # Never touch the user's cache or the network from tests by accident.
    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path_factory.getbasetemp() / "mnistforge-home"))
    monkeypatch.setenv("MNISTFORGE_PROGRESS", "0")
    # the Hub a closed port: a download whose hosts all fail tries its parquet copy (cache/hub_parquet)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache of this test's own, offline: files are put there by the test."""
    c = tmp_path / "cache"
    monkeypatch.setenv("MNISTFORGE_HOME", str(c))
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")  # tests never download
    return c
