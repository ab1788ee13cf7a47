"""One test over every registered dataset (scikit-learn's ``test_common`` pattern).

For each registry entry of kind ``dataset``, small files in that entry's own format (idx, idx2
label tables, EMNIST's zip members stored transposed, ``.npz``) are served from a real HTTP
server on 127.0.0.1 and described by a registry file of the test's own
(:mod:`registry_mirror`, read through :func:`mnistforge.registry.use_registry`). Then ``load``,
``info``, ``verify``, ``show``, ``export hf`` and the load of the export must work and agree,
and so must a load of the same files from a folder (``root=``).
A new registry entry gets these tests with no code change; the last test adds entries at run
time (idx files, ``.npz`` files, ``.npz`` members of a zip) and runs the same checks on them.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from registry_mirror import Mirror, bundled, small_registry

from mnistforge import cli
from mnistforge.loaders import load
from mnistforge.registry import get_dataset, list_datasets, use_registry

DATASETS = list_datasets()


@pytest.fixture(scope="module")
def mirror():
    m = Mirror()
    yield m
    m.close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A cache of the test's own; downloads allowed (only the 127.0.0.1 mirror is named)."""
    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MNISTFORGE_OFFLINE", raising=False)
    return tmp_path


def _cli(*args) -> int:
    return cli.main([str(a) for a in args])


def check_dataset(name: str, expected, tmp_path) -> None:
    """The common checks of one registered dataset (the registry in use is the test's)."""
    info = get_dataset(name)
    loaded = {}
    # load: every split, as the files say (views included), upright, the registry's counts
    for split, sp in info.splits.items():
        ds = load(name, split)
        assert len(ds) == sp.count == len(expected.labels[split]), split
        np.testing.assert_array_equal(ds.images, expected.images[split], err_msg=split)
        np.testing.assert_array_equal(ds.labels, expected.labels[split], err_msg=split)
        assert ds.images.shape[1:] == tuple(info.image_shape) and ds.images.dtype == np.uint8
        assert list(ds.classes) == list(info.classes)
        loaded[split] = ds
    again = load(name, "test")   # a repeat load: from the verified copies, the same arrays
    np.testing.assert_array_equal(again.images, loaded["test"].images)

    # the same files in a folder under their official names (root=): the same arrays, through
    # the trust gate (the files match the registry's hashes)
    folder = tmp_path / "folder"
    folder.mkdir()
    for fname, data in expected.files.items():
        (folder / fname).write_bytes(data)
    for split in info.splits:
        there = load(name, split, root=folder)
        np.testing.assert_array_equal(there.images, loaded[split].images, err_msg=split)
        np.testing.assert_array_equal(there.labels, loaded[split].labels, err_msg=split)
        assert set(there.status.values()) <= {"exact", "raw", "content"}, there.status

    # info: the registry's splits and counts
    assert _cli("info", name, "--json", tmp_path / "info.json") == 0
    doc = json.loads((tmp_path / "info.json").read_text())
    assert {s["name"]: s["count"] for s in doc["splits"]} == {s: sp.count for s, sp in info.splits.items()}
    assert doc["classes"] == list(info.classes)

    # verify: every check passes on what load gave, and it counted the same rows
    assert _cli("verify", name, "--json", tmp_path / "verify.json") == 0
    report = json.loads((tmp_path / "verify.json").read_text())
    assert report["ok"] and report["counts"]["fail"] == 0, report["results"]
    sizes = {r["name"]: r["values"]["found"] for r in report["results"]
             if r["name"].startswith("integrity.size[")}
    assert sizes and all(sizes[f"integrity.size[{s}]"] == len(loaded[s]) for s in
                         (s[len("integrity.size["):-1] for s in sizes))
    assert report["info"]["dataset"] == name

    # show: a PNG grid of the test split
    png = tmp_path / "grid.png"
    assert _cli("show", f"{name}:test", "--out", png, "-n", 4) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # export hf (with its own checks: datasets.load_dataset offline) and the load of the export
    repo = tmp_path / "repo"
    assert _cli("export", "hf", name, "--out", repo, "--workers", 1) == 0
    card = (repo / "README.md").read_text()
    assert info.title in card and f"config_name: {name}" in card
    for split in (s for s, sp in info.splits.items() if not sp.is_view and not sp.opt_in):
        back = load(name, split, root=repo)
        np.testing.assert_array_equal(back.images, loaded[split].images, err_msg=split)
        np.testing.assert_array_equal(back.labels, loaded[split].labels, err_msg=split)
        assert back.classes == loaded[split].classes


@pytest.mark.parametrize("name", DATASETS)
def test_every_registered_dataset(name, mirror, home):
    path, expected = small_registry([name], home, mirror)
    with use_registry(path):
        check_dataset(name, expected[name], home)
    files = get_dataset(name).file_names()
    served = {k.split("/", 1)[1] for k in mirror.requested}
    assert any(f in served for f in files) or any(k.endswith(".zip") for k in mirror.requested)


def _toy_entry(kind: str) -> tuple[dict, dict]:
    """A registry entry of a dataset the package has never heard of: files in idx, in .npz, or
    .npz members of a zip archive (``zip``)."""
    tag = f"toy-{kind}"
    fmt = "npz" if kind == "zip" else kind
    ext = {"idx": ("-images-idx3-ubyte.gz", "-labels-idx1-ubyte.gz"), "npz": ("-imgs.npz", "-labels.npz")}[fmt]
    splits = {s: {"images": f"{tag}-{s}{ext[0]}", "labels": f"{tag}-{s}{ext[1]}", "count": 1}
              for s in ("train", "test")}
    entry = {"group": tag, "title": f"Toy {fmt}", "kind": "dataset",
             "description": f"a toy dataset in {fmt} files, added at run time",
             "homepage": "", "licence": "CC0-1.0", "citation": "nobody", "classes": ["a", "b", "c"],
             "splits": splits, "aliases": [f"tests/{tag}"]}
    files = {f"{tag}/{f}": {"group": tag, "name": f, "urls": [], "pinned": False}
             for sp in splits.values() for f in (sp["images"], sp["labels"])}
    if fmt == "npz":
        for f in files.values():
            f.update(format="npz", array="arr_0")
    if kind == "zip":
        for f in files.values():
            f.update(archive=f"{tag}/{tag}.zip", member=f"arrays/{f['name']}")
        files[f"{tag}/{tag}.zip"] = {"group": tag, "name": f"{tag}.zip", "urls": [], "pinned": False}
        entry["files"] = [f"{tag}.zip"]
    return entry, files


def test_an_entry_added_at_run_time_passes_the_common_tests(mirror, home):
    """Adding a dataset in a known format (idx or .npz) is one registry entry: no code change."""
    raw = bundled()
    kinds = ("idx", "npz", "zip")
    for kind in kinds:
        entry, files = _toy_entry(kind)
        raw["datasets"][f"toy-{kind}"] = entry
        raw["files"].update(files)
        raw["hub"]["licenses"][f"toy-{kind}"] = "cc0-1.0"
    names = [f"toy-{k}" for k in kinds]
    path, expected = small_registry(names, home, mirror, raw=raw)
    with use_registry(path):
        for name in names:
            sub = home / name
            sub.mkdir()
            check_dataset(name, expected[name], sub)
            assert load(f"tests/{name}", "test").name == name   # its alias, from the entry
    assert "toy-idx" not in list_datasets()   # the bundled registry again after the block
