"""Runs the examples of README.md and docs/*.md as tests (Sybil): see tests/docs_sybil.py."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
from docs_sybil import DOCS, mark_slow  # noqa: E402

pytest_collect_file = DOCS.pytest()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    mark_slow(items, config.getoption("-m") or "")
