"""The build manifest: one schema with a version field; older manifests still read."""
import json

import pytest

from mnistforge.errors import ConfigError, FormatError
from mnistforge.io.manifest import (
    SCHEMA_VERSION,
    DatasetEntry,
    Manifest,
    read_manifest,
    write_manifest,
)


def _folder(tmp_path):
    (tmp_path / "a-idx1-ubyte.gz").write_bytes(b"abc")
    return tmp_path


def test_round_trip_is_byte_stable_and_typed(tmp_path):
    folder = _folder(tmp_path)
    m = Manifest(kind="emnist", inputs={"sd19": "x"}, parameters={"seed": 1}, notes=["n"],
                 orientation="official", split_by="writer", sides={"train": 6, "test": 1},
                 metadata_columns=["writer"],
                 datasets={"letters": DatasetEntry(counts={"train": 6, "test": 1}, kind="letters37",
                                                   classes=37, class_names=["a"] * 37)})
    written = m.write(folder)
    first = (folder / "manifest.json").read_bytes()
    again = Manifest.read(folder)
    assert again == written
    assert again.write(folder) == written
    assert (folder / "manifest.json").read_bytes() == first  # no timestamps, sorted keys
    d = json.loads(first)
    assert d["schema"] == SCHEMA_VERSION == 1
    assert list(d) == sorted(d)
    assert d["datasets"]["letters"] == {"train": 6, "test": 1, "kind": "letters37", "classes": 37,
                                        "class_names": ["a"] * 37}
    assert d["outputs"]["a-idx1-ubyte.gz"]["bytes"] == 3
    assert again.dataset("emnist-letters").classes == 37
    assert again.storage_orientation == "transposed"
    assert again.to_dict() == d


def test_absent_manifest_is_none(tmp_path):
    assert Manifest.read(tmp_path) is None
    assert read_manifest(tmp_path) is None


def test_old_qmnist_manifest_is_read(tmp_path):
    old = {"kind": "xnist", "package": "mnistforge", "version": "0.9", "python": "3.11.0",
           "inputs": {"sd19": {"path": "/data/synthetic"}}, "parameters": {"target": "xnist"},
           "notes": [], "outputs": {}, "dataset": "qmnist", "orientation": "upright",
           "counts": {"nist": 806}}
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    m = Manifest.read(tmp_path)
    assert m.schema == 0 and m.kind == "xnist" and m.version == "0.9"
    assert m.dataset("qmnist").counts == {"nist": 806}
    assert m.storage_orientation == "upright"
    # a path that says "synthetic" marks nothing (issue 27): what the builder recorded of the
    # source's own synthetic-sd19.json does
    assert not m.from_synthetic_sd19
    old["inputs"]["sd19"]["synthetic_description_sha256"] = "ab" * 32
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    assert Manifest.read(tmp_path).from_synthetic_sd19
    assert read_manifest(tmp_path)["schema"] == SCHEMA_VERSION  # handed out in the current form


def test_the_synthetic_field_is_the_mark_and_round_trips(tmp_path):
    m = Manifest(kind="emnist", inputs={"sd19": "/home/me/synthetic-sd19"}, synthetic=False)
    assert not m.write(tmp_path).from_synthetic_sd19
    assert json.loads((tmp_path / "manifest.json").read_text())["synthetic"] is False
    Manifest(kind="emnist", inputs={"sd19": "/home/me/data"}, synthetic=True).write(tmp_path)
    assert Manifest.read(tmp_path).from_synthetic_sd19
    d = json.loads((tmp_path / "manifest.json").read_text())
    d["synthetic"] = "yes"
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    with pytest.raises(FormatError, match="synthetic mark"):
        Manifest.read(tmp_path)


def test_old_emnist_manifest_is_read(tmp_path):
    old = {"kind": "emnist", "version": "0.9", "inputs": {}, "outputs": {}, "notes": [],
           "parameters": {"orientation": "official", "split": {"split_by": "random"}},
           "orientation": "official", "metadata_columns": ["writer", "hsf"],
           "sides": {"train": 60, "test": 10, "split_by": "writer"},
           "datasets": {"mnist": {"kind": "mnist", "classes": 10, "class_names": list("0123456789"),
                                  "train": 60, "test": 10, "validation": 10, "quota": {"q": 1}}}}
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    m = Manifest.read(tmp_path)
    assert m.schema == 0
    assert m.split_by == "writer" and m.sides == {"train": 60, "test": 10}
    assert m.dataset("emnist-mnist").counts == {"train": 60, "test": 10, "validation": 10}
    assert m.dataset("emnist-mnist").quota == {"q": 1}
    assert m.metadata_columns == ["writer", "hsf"]
    assert m.storage_orientation == "transposed"


def test_orientation_only_under_parameters(tmp_path):
    (tmp_path / "manifest.json").write_text(
        json.dumps({"kind": "emnist", "parameters": {"orientation": "upright"}}))
    assert Manifest.read(tmp_path).storage_orientation == "upright"


def test_newer_schema_and_broken_json_are_format_errors(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": SCHEMA_VERSION + 1, "kind": "x"}))
    with pytest.raises(FormatError, match="schema"):
        Manifest.read(tmp_path)
    (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(FormatError, match="manifest.json"):
        Manifest.read(tmp_path)


def test_write_manifest_maps_old_extras_and_refuses_unknown_fields(tmp_path):
    folder = _folder(tmp_path)
    d = write_manifest(folder, kind="qmnist", inputs={}, parameters={},
                       extra={"dataset": "qmnist", "counts": {"train": 5}})
    assert d["schema"] == SCHEMA_VERSION and "counts" not in d
    assert d["datasets"] == {"qmnist": {"train": 5}}
    with pytest.raises(ConfigError):
        write_manifest(folder, kind="qmnist", inputs={}, parameters={}, extra={"colour": 1})
    with pytest.raises(ConfigError):
        Manifest(kind="x", orientation="sideways")
