"""Kuzushiji-49's ``.npz`` release files, unpinned by the registry (no published hash), served by
a hostile or broken mirror on 127.0.0.1: what a load says, and that nothing is ever unpickled.

The registry is the bundled one with only Kuzushiji-49's URLs pointed at the mirror
(:func:`mnistforge.registry.use_registry`): its hashes stay absent, as in the release.
"""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from registry_mirror import Mirror, bundled

from mnistforge.errors import FormatError, UnsafeFormatError
from mnistforge.loaders import load
from mnistforge.registry import use_registry

NAME = "kuzushiji-49"


class _Boom:
    """Unpickling this writes a file: the proof that a reader ran pickle."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@pytest.fixture
def served(tmp_path, monkeypatch):
    """(mirror files by name, registry path): every K49 file fetched from the mirror."""
    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MNISTFORGE_OFFLINE", raising=False)
    m = Mirror()
    raw = bundled()
    for fid, f in raw["files"].items():
        if f["group"] == "kmnist" and f["name"].startswith("k49"):
            f["urls"] = [f"{m.base}/{fid}"]
    path = tmp_path / "registry.json"
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    files = {}
    yield files, path, m
    m.close()


def _serve(m, files):
    m.files.update({f"kmnist/{n}": b for n, b in files.items()})


def test_unpinned_release_files_load_and_say_so(served):
    files, path, m = served
    x = np.zeros((38547, 28, 28), np.uint8)
    x[:, 4:24, 11:17] = 200
    _serve(m, {"k49-test-imgs.npz": _npz(arr_0=x),
               "k49-test-labels.npz": _npz(arr_0=np.arange(38547, dtype=np.uint8) % 49)})
    with use_registry(path):
        ds = load(NAME, "test")
    assert len(ds) == 38547 and ds.labels[:3].tolist() == [0, 1, 2]
    assert set(ds.status.values()) == {"unpinned"}   # nothing published to check against


def test_a_pickled_object_array_is_refused_never_unpickled(served, tmp_path):
    files, path, m = served
    proof = tmp_path / "unpickled"
    evil = np.empty(3, dtype=object)
    evil[0] = _Boom(str(proof))
    buf = io.BytesIO()
    np.savez(buf, arr_0=evil)   # np.savez pickles object arrays
    _serve(m, {"k49-test-imgs.npz": buf.getvalue(),
               "k49-test-labels.npz": _npz(arr_0=np.zeros(3, np.uint8))})
    with use_registry(path), pytest.raises(UnsafeFormatError, match="pickled"):
        load(NAME, "test")
    assert not proof.exists()


def test_a_truncated_npz_is_a_named_format_error(served):
    files, path, m = served
    whole = _npz(arr_0=np.zeros((38547, 28, 28), np.uint8))
    _serve(m, {"k49-test-imgs.npz": whole[: len(whole) // 2],
               "k49-test-labels.npz": _npz(arr_0=np.zeros(38547, np.uint8))})
    with use_registry(path), pytest.raises(FormatError) as e:
        load(NAME, "test")
    assert "k49-test-imgs.npz" in str(e.value) and "fetch it again" in str(e.value)


def test_an_npz_without_the_declared_array_names_what_it_holds(served):
    files, path, m = served
    _serve(m, {"k49-test-imgs.npz": _npz(images=np.zeros((38547, 28, 28), np.uint8)),
               "k49-test-labels.npz": _npz(arr_0=np.zeros(38547, np.uint8))})
    with use_registry(path), pytest.raises(FormatError, match="lacks the array") as e:
        load(NAME, "test")
    assert "images" in str(e.value) and "'arr_0'" in str(e.value)
