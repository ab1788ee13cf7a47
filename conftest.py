"""Runs the examples of README.md and docs/*.md as tests (Sybil): see tests/docs_sybil.py."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
try:
    from docs_sybil import DOCS, mark_slow
except ImportError as e:  # an older venv: say what to install rather than skip the docs silently
    raise ImportError(f"{e}: the docs examples run with sybil; install the test extra: "
                      "pip install -e '.[test]'") from e

pytest_collect_file = DOCS.pytest()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    mark_slow(items, config.getoption("-m") or "")
