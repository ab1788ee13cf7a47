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


def manifest_includes(rel: str) -> bool:
    """Whether MANIFEST.in's include / recursive-include lines put ``rel`` into the sdist."""
    import fnmatch

    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "include" and rel in words[1:]:
            return True
        if words[0] == "recursive-include":
            folder, name = words[1].rstrip("/") + "/", rel.rsplit("/", 1)[-1]
            if rel.startswith(folder) and any(fnmatch.fnmatch(name, p) for p in words[2:]):
                return True
    return False


def test_sdist_ships_the_pictures_the_docs_show_and_the_tools_they_cite():
    # issue 27: docs/img/ (linked from the docs) and tools/ (cited in verify.md) were left out
    shipped = sorted(p.relative_to(ROOT).as_posix() for d in ("docs/img", "tools")
                     for p in (ROOT / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert any(p.endswith(".png") for p in shipped) and any(p.startswith("tools/") for p in shipped)
    assert [p for p in shipped if not manifest_includes(p)] == []
    for doc in (ROOT / "docs").glob("*.md"):      # every picture a page links to is shipped
        for link in re.findall(r"\]\((img/[^)\s]+)\)", doc.read_text()):
            assert manifest_includes(f"docs/{link}"), (doc.name, link)


def supported_pythons() -> list[str]:
    """The versions .ci/run tests (its SUPPORTED line)."""
    m = re.search(r'^SUPPORTED="([\d. ]+)"', (ROOT / ".ci" / "run").read_text(), re.M)
    assert m, "SUPPORTED=... not found in .ci/run"
    return m.group(1).split()


def test_supported_pythons_agree_in_ci_readme_and_metadata():
    versions = supported_pythons()
    project = pyproject()["project"]
    listed = sorted(c.rsplit(":: ", 1)[1] for c in project["classifiers"]
                    if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert listed == sorted(versions, key=lambda v: [int(x) for x in v.split(".")])
    assert project["requires-python"] == f">={versions[0]}"
    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("**Supported Python versions:**"))
    assert re.findall(r"3\.\d+", line.split("(")[0]) == versions
    assert any(c.startswith("Topic :: ") for c in project["classifiers"])
    # the licence is the SPDX expression (PEP 639); setuptools >= 77 refuses a "License ::"
    # classifier beside it, so none is listed
    assert project["license"] == "BSD-3-Clause"
    assert not any(c.startswith("License ::") for c in project["classifiers"])
    assert sys.version_info[:2] >= tuple(int(x) for x in versions[0].split("."))
