"""``mnistforge build all``: every target from one SD19, atomically, on tiny synthetic sources."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.cli import main
from mnistforge.io.manifest import read_manifest
from sd19_helpers import make_tiny_sd19

SUBFOLDERS = ["emnist", "mnist", "qmnist", "xnist"]
EMNIST = ["byclass", "bymerge", "balanced", "letters", "digits", "mnist"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    # 2nd edition, zips (as NIST serves it today), every field: ~1,600 characters.
    return make_tiny_sd19(tmp_path_factory.mktemp("sd19"), scale=0.002)


@pytest.fixture(scope="module")
def built(tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("all") / "build"
    rc = main(["build", "all", "--sd19", str(tiny), "--out", str(out), "--workers", "1"])
    return rc, out


def test_build_all_writes_every_target_with_a_manifest(built):
    rc, out = built
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == SUBFOLDERS
    assert not out.with_name(out.name + ".incomplete").exists()
    for sub in SUBFOLDERS:
        manifest = read_manifest(out / sub)
        files = {p.name for p in (out / sub).iterdir() if p.name != "manifest.json"}
        assert files, sub
        # the manifest hashes exactly the files that are there
        assert set(manifest["outputs"]) == files, sub


def test_build_all_outputs_load_and_agree(built, tiny):
    _rc, out = built
    src = mnistforge.sd19.open_sd19(tiny, progress=False)
    n_chars = len(src.index)
    n_digits = len(src.digits())

    q_train = mnistforge.load("qmnist", "train", root=out / "qmnist")
    q_test = mnistforge.load("qmnist", "test", root=out / "qmnist")
    nist = mnistforge.load("qmnist", "nist", root=out / "xnist")
    m_train = mnistforge.load("mnist", "train", root=out / "mnist")
    m_test = mnistforge.load("mnist", "test", root=out)          # root/<name> is looked in too
    for ds in (q_train, q_test, nist, m_train, m_test):
        assert ds.images.dtype == np.uint8 and ds.images.shape[1:] == (28, 28)
        assert len(ds) == len(ds.labels) > 0
        assert set(np.unique(ds.labels)) <= set(range(10))
    # xnist is every SD19 digit; MNIST train is QMNIST train; MNIST test is a prefix of QMNIST test.
    assert len(nist) == n_digits
    np.testing.assert_array_equal(m_train.images, q_train.images)
    np.testing.assert_array_equal(m_train.labels, q_train.labels)
    np.testing.assert_array_equal(m_test.images, q_test.images[:len(m_test)])

    sizes = {}
    for name in EMNIST:
        for split in ("train", "test"):
            ds = mnistforge.load(f"emnist-{name}", split, root=out / "emnist")
            assert ds.images.shape[1:] == (28, 28) and len(ds) > 0, (name, split)
            assert ds.labels.max() < len(ds.classes)
            sizes[name, split] = len(ds)
    # byclass and bymerge hold every character of the source once
    assert sizes["byclass", "train"] + sizes["byclass", "test"] == n_chars
    assert sizes["bymerge", "train"] + sizes["bymerge", "test"] == n_chars
    assert len(mnistforge.load("emnist-digits", "test", root=out)) == sizes["digits", "test"]


def test_build_all_equals_separate_builds(built, tiny, tmp_path):
    _rc, out = built
    alone = tmp_path / "mnist-alone"
    assert main(["build", "mnist", "--sd19", str(tiny), "--out", str(alone), "--workers", "1"]) == 0
    a, b = read_manifest(out / "mnist"), read_manifest(alone)
    assert a["outputs"] == b["outputs"]


def test_existing_output_refused_without_overwrite(built, tiny, tmp_path, capsys):
    out = tmp_path / "exists"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    rc = main(["build", "all", "--sd19", str(tiny), "--out", str(out)])
    assert rc != 0
    assert "--overwrite" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert not out.with_name("exists.incomplete").exists()


def test_overwrite_replaces_existing_output(built, tiny, tmp_path):
    _rc, first = built
    out = tmp_path / "again"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    # a folder the package did not write is never replaced, even with --overwrite
    assert main(["build", "all", "--sd19", str(tiny), "--out", str(out), "--overwrite"]) != 0
    assert [p.name for p in out.iterdir()] == ["stale.txt"]
    (out / "stale.txt").unlink()
    shutil.copytree(first / "mnist", out / "mnist")    # an earlier build: replaced
    assert main(["build", "all", "--sd19", str(tiny), "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == SUBFOLDERS
    # reproducible: the same source gives the same files (workers 1 vs default)
    for sub in SUBFOLDERS:
        assert read_manifest(out / sub)["outputs"] == read_manifest(first / sub)["outputs"], sub


def test_missing_sd19_part_leaves_nothing(tiny, tmp_path, capsys):
    broken = tmp_path / "sd19-no-by-write"
    shutil.copytree(tiny, broken)
    (broken / "by_write.zip").unlink()
    out = tmp_path / "build"
    rc = main(["build", "all", "--sd19", str(broken), "--out", str(out)])
    assert rc != 0
    assert "by_write" in capsys.readouterr().err
    assert not out.exists()
    assert not out.with_name("build.incomplete").exists()


def test_failure_in_a_later_target_removes_the_earlier_ones(tiny, tmp_path, monkeypatch):
    from mnistforge.builders import emnist
    from mnistforge.errors import BuildError

    seen = {}

    def failing(sd19, out, config):
        # qmnist, mnist and xnist are already written inside the temporary folder
        parent = Path(out).parent
        seen["parent"] = parent
        seen["before"] = sorted(p.name for p in parent.iterdir() if not p.name.startswith("."))
        raise BuildError("simulated EMNIST failure", path=out)

    monkeypatch.setattr(emnist, "build_emnist", failing)
    out = tmp_path / "build"
    rc = main(["build", "all", "--sd19", str(tiny), "--out", str(out)])
    assert rc != 0
    assert seen["parent"].name == "build.incomplete"
    assert seen["before"] == ["mnist", "qmnist", "xnist"]
    assert not out.exists()
    assert not seen["parent"].exists()


def test_first_edition_folders(tmp_path_factory):
    # The 1st edition (IHEAD .mis + .cls + .mit), unpacked: the same four targets.
    sd19 = make_tiny_sd19(tmp_path_factory.mktemp("sd19-e1"), scale=0.002, edition=1,
                          packaging="dir")
    out = tmp_path_factory.mktemp("all-e1") / "build"
    assert main(["build", "all", "--sd19", str(sd19), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == SUBFOLDERS
    src = mnistforge.sd19.open_sd19(sd19, progress=False)
    assert len(mnistforge.load("qmnist", "nist", root=out / "xnist")) == len(src.digits())
    byclass = mnistforge.load("emnist-byclass", "train", root=out / "emnist")
    assert len(byclass) + len(mnistforge.load("emnist-byclass", "test", root=out / "emnist")) \
        == len(src.index)
