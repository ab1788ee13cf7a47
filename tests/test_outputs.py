"""Atomic outputs: nothing half-written on failure, normal permissions, manifests."""
from __future__ import annotations

import json
import os
import stat

import pytest

from mnistforge.errors import BuildError
from mnistforge.io.atomic import atomic_dir, atomic_file
from mnistforge.io.manifest import Manifest, build_folder_problems, read_manifest, write_manifest


def test_atomic_file_success_and_permissions(tmp_path):
    p = tmp_path / "a.txt"
    with atomic_file(p, "w") as f:
        f.write("x")
    assert p.read_text() == "x"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask
    assert [q.name for q in tmp_path.iterdir()] == ["a.txt"]


def test_atomic_file_failure_keeps_old_content(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_file(p, "w") as f:
            f.write("new")
            raise KeyboardInterrupt
    assert p.read_text() == "old"
    assert [q.name for q in tmp_path.iterdir()] == ["a.txt"]


def test_atomic_dir_leaves_nothing_on_failure(tmp_path):
    out = tmp_path / "build"
    with pytest.raises(RuntimeError):
        with atomic_dir(out) as tmp:
            (tmp / "half").write_text("x")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_atomic_dir_refuses_existing_and_overwrites_when_asked(tmp_path):
    out = tmp_path / "build"
    out.mkdir()
    (out / "old").write_text("x")
    with pytest.raises(BuildError, match="already exists"):
        with atomic_dir(out):
            pass
    # --overwrite never replaces a folder the package did not write (no manifest)
    with pytest.raises(BuildError, match="only a folder mnistforge wrote"):
        with atomic_dir(out, overwrite=True):
            pass
    assert sorted(p.name for p in out.iterdir()) == ["old"]
    # a file named manifest.json is not enough: its schema and generator fields, and nothing
    # in the folder that it does not list
    (out / "manifest.json").write_text("{}")
    with pytest.raises(BuildError, match="only a folder mnistforge wrote"):
        with atomic_dir(out, overwrite=True, owned=build_folder_problems):
            pass
    Manifest(kind="test").write(out)
    with atomic_dir(out, overwrite=True, owned=build_folder_problems) as tmp:
        (tmp / "new").write_text("y")
    assert sorted(p.name for p in out.iterdir()) == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]


def test_manifest_hashes_every_output_and_is_reproducible(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"abc")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.bin").write_bytes(b"")
    m1 = write_manifest(tmp_path, kind="test", inputs={"x": 1}, parameters={"p": 2})
    first = (tmp_path / "manifest.json").read_bytes()
    m2 = write_manifest(tmp_path, kind="test", inputs={"x": 1}, parameters={"p": 2})
    assert (tmp_path / "manifest.json").read_bytes() == first
    assert m1 == m2 == read_manifest(tmp_path)
    assert m1["outputs"]["a.bin"]["sha256"].startswith("ba7816bf")
    assert set(m1["outputs"]) == {"a.bin", "sub/b.bin"}
    assert json.loads(first)["version"]
