"""What the package publishes: licence, PyPI description, MANIFEST.in patterns that match."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_is_an_spdx_string_with_its_file():
    project = pyproject()["project"]
    assert project["license"] == "BSD-3-Clause"  # a string: no setuptools table deprecation
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "Neither the name of the copyright holder" in text
    build = pyproject()["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in build)


def test_pypi_description_starts_with_pip_install_and_links_absolutely():
    readme = pyproject()["project"]["readme"]
    text = (ROOT / readme).read_text()
    first = [line for line in text.splitlines() if line.strip() and not line.startswith("```")][0]
    assert first == "pip install mnistforge"
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links and all(link.startswith("https://") for link in links), links


def test_manifest_patterns_all_match_files():
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "include":
            for name in words[1:]:
                assert (ROOT / name).is_file(), name
        elif words[0] == "recursive-include":
            folder = ROOT / words[1]
            for pattern in words[2:]:
                assert any(folder.rglob(pattern)), f"{line}: no files for {pattern}"
