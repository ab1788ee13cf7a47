"""`make lint` (run by `make test`) type-checks the package strictly (issues 28 and 40): the
modules issue 28 names are in ``[tool.mypy]``'s files (the whole package since issue 40), with
``strict = true``."""
from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test extra installs tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TYPED = ["mnistforge/__init__.py", "mnistforge/io", "mnistforge/loaders", "mnistforge/registry.py",
         "mnistforge/settings.py", "mnistforge/errors.py"]


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def test_mypy_is_strict_over_the_typed_api():
    cfg = _config()
    assert cfg.get("strict") is True
    files = cfg["files"]
    missing = [m for m in TYPED if m not in files and "mnistforge" not in files]
    assert not missing, f"pyproject [tool.mypy] files lacks {missing}"


def test_make_lint_runs_mypy_and_make_test_runs_lint():
    make = (ROOT / "Makefile").read_text()
    lint = make.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "-m mypy" in lint
    assert any(line.startswith("test:") and "lint" in line for line in make.splitlines())


def test_mypy_checks_the_whole_package():
    assert _config()["files"] == ["mnistforge"]
