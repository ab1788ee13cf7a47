"""Copies already on the machine: ``fetch NAME --from PATH`` adopts them into the cache (no
network), ``find-copies`` says what each is.  Real data: the MNIST test set and train labels
(../shared/reference) and Debian's Fashion-MNIST (/usr/share/datasets/fashion-mnist)."""
from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_foreign_formats import variant, write_copy

import mnistforge
from mnistforge.cache.download import fetch_file
from mnistforge.checks.adopt import examine
from mnistforge.checks.copies import adopt, find_copies
from mnistforge.cli import main
from mnistforge.io.idx import read_idx

MNIST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")  # adoption never downloads


@pytest.fixture(scope="module")
def mnist_test(mnist_reference):
    return tuple(np.asarray(read_idx(mnist_reference / n)) for n in MNIST_FILES)


@pytest.fixture(scope="module")
def fashion_test(fashion_dir):
    return tuple(np.asarray(read_idx(fashion_dir / n)) for n in MNIST_FILES)


def snapshot(folder: Path) -> dict:
    """Every entry below ``folder`` with its size and mtime (what a read-only walk must keep)."""
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def test_fetch_mnist_from_a_keras_npz_and_the_train_labels_folder(mnist_test, mnist_reference,
                                                                  tmp_path, capsys):
    x, y = mnist_test
    npz = tmp_path / "keras" / "mnist.npz"
    npz.parent.mkdir()
    np.savez_compressed(npz, x_test=x, y_test=y)  # as keras.datasets.mnist keeps it
    labels = tmp_path / "labels"
    labels.mkdir()
    shutil.copy(mnist_reference / "train-labels-idx1-ubyte.gz", labels)
    cache = tmp_path / "cache"
    before = snapshot(tmp_path / "keras") | snapshot(labels)
    rc = main(["fetch", "mnist", "--cache", str(cache), "--from", str(npz), "--from", str(labels)])
    out, err = capsys.readouterr()
    # three official files adopted, verified; MNIST's train images are in neither copy
    assert "3 of 4 files in the cache, 3 adopted, 1 missing" in out
    assert rc == 3 and "mnist/train-images-idx3-ubyte.gz is in none of these copies" in err
    for name in (*MNIST_FILES, "train-labels-idx1-ubyte.gz"):
        r = fetch_file(f"mnist/{name}", root=cache, offline=True, rehash=True)
        assert r.status == "content", (name, r.status)  # the registry's content, re-hashed
    assert snapshot(tmp_path / "keras") | snapshot(labels) == before  # the copies are untouched
    ds = mnistforge.load("mnist", "test", cache=cache)  # offline: from the adopted files
    assert (np.asarray(ds.images) == x).all() and (np.asarray(ds.labels) == y).all()
    assert ds.labels[:3].tolist() == [7, 2, 1]
    # a second run finds them there (re-verified, not written again)
    rc = main(["fetch", "mnist/t10k-labels-idx1-ubyte.gz", "--cache", str(cache), "--from", str(npz)])
    assert rc == 0 and "present" in capsys.readouterr().out


def test_fetch_fashion_mnist_from_debians_folder(fashion_dir, tmp_path, capsys):
    cache = tmp_path / "cache"
    rc = main(["fetch", "fashion-mnist", "--cache", str(cache), "--from", str(fashion_dir),
               "--json", str(tmp_path / "r.json")])
    assert rc == 0, capsys.readouterr()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [f["status"] for f in doc["files"]] == ["content"] * 4
    assert {f["adopted_from"] for f in doc["files"]} == {
        str(fashion_dir / n) for n in os.listdir(fashion_dir) if n.endswith(".gz")}
    # Debian's re-compressed files are copied byte for byte (the content is the registry's)
    for n in MNIST_FILES:
        assert (cache / "fashion-mnist" / n).read_bytes() == (fashion_dir / n).read_bytes()
    for split, count in (("train", 60_000), ("test", 10_000)):
        ds = mnistforge.load("fashion-mnist", split, cache=cache)
        assert len(ds) == count
    direct = mnistforge.load("fashion-mnist", "test", root=fashion_dir)
    assert (np.asarray(direct.images) == np.asarray(mnistforge.load("fashion-mnist", "test",
                                                                    cache=cache).images)).all()


def test_a_transformed_copy_is_adopted_as_its_verified_content(mnist_test, tmp_path):
    """Float pixels in [0, 1], transposed: the gate undoes it, the idx content is the registry's."""
    x, y = mnist_test
    fx, fy = variant("float", x, y)
    path = write_copy("npz", tmp_path / "f", np.ascontiguousarray(fx.transpose(0, 2, 1)), fy)
    placed, answers = adopt(path, root=tmp_path / "cache")
    assert [a.verdict for a in answers] == ["transformed"]
    assert sorted(placed) == [f"mnist/{n}" for n in MNIST_FILES]
    ds = mnistforge.load("mnist", "test", cache=tmp_path / "cache")
    assert (np.asarray(ds.images) == x).all()


def test_a_reordered_copy_is_named_but_not_adopted(mnist_test, tmp_path):
    x, y = mnist_test
    path = write_copy("npz", tmp_path / "r", *variant("reordered", x, y))
    placed, answers = adopt(path, root=tmp_path / "cache")
    assert placed == {} and [(a.verdict, a.dataset, a.split) for a in answers] == [
        ("reordered", "mnist", "test")]
    assert "another order" in answers[0].why_not
    assert not (tmp_path / "cache" / "mnist").exists()


def test_find_copies_names_one_copy_of_each_format(mnist_test, fashion_test, fashion_dir,
                                                   mnist_reference, tmp_path, capsys):
    x, y = mnist_test
    fx, fy = fashion_test
    d = tmp_path / "copies"
    write_copy("npz", d / "keras", x, y)                         # Keras .npz, MNIST test
    write_copy("npy", d / "npy", fx, fy)                         # .npy pair, Fashion-MNIST test
    write_copy("csv", d / "kaggle", x, y, name="mnist")          # CSV with a header
    write_copy("torchvision", d / "tv", fx, fy, name="fashion-mnist")  # root/FashionMNIST/raw
    write_copy("parquet", d / "hub", x, y)                       # Hub parquet snapshot (PNG)
    write_copy("mat", d / "mat", fx, fy, name="fashion")         # MATLAB .mat (EMNIST's layout)
    (d / "idx").mkdir()
    shutil.copy(mnist_reference / "t10k-labels-idx1-ubyte.gz", d / "idx")  # idx, gz
    with gzip.open(fashion_dir / "t10k-labels-idx1-ubyte.gz") as f:        # idx, raw
        (d / "idx" / "t10k-labels-idx1-ubyte").write_bytes(f.read())
    write_copy("npz", d / "reordered", *variant("reordered", x, y))
    write_copy("npz", d / "altered", *variant("altered", fx, fy), name="fashion")
    bad = d / "broken" / "t10k-images-idx3-ubyte.gz"
    bad.parent.mkdir()
    bad.write_bytes((mnist_reference / "t10k-images-idx3-ubyte.gz").read_bytes()[:50_000])
    before = snapshot(d)

    _, answers = find_copies([d])
    got = {(Path(a.path).relative_to(d).parts[0], a.verdict, a.dataset, a.split, bool(a.pieces))
           for a in answers}
    assert got == {
        ("keras", "identical", "mnist", "test", True),
        ("npy", "identical", "fashion-mnist", "test", True),
        ("kaggle", "identical", "mnist", "test", True),
        ("tv", "identical", "fashion-mnist", "test", True),
        ("hub", "identical", "mnist", "test", True),
        ("mat", "identical", "fashion-mnist", "test", True),
        ("idx", "identical", "mnist", "test", True),
        ("idx", "identical", "fashion-mnist", "test", True),
        ("reordered", "reordered", "mnist", "test", False),
        ("altered", "damaged", "fashion-mnist", "test", False),
        ("broken", "damaged", "mnist", "test", False),
    }, got
    assert len(answers) == 11
    assert snapshot(d) == before  # read only: sizes, mtimes, no new files

    rc = main(["find-copies", "--only", str(d), "--json", str(tmp_path / "c.json")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "11 copies found, 8 adoptable" in out
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["places"] == [str(d)] and len(doc["copies"]) == 11
    keras = next(c for c in doc["copies"] if "/keras/" in c["path"])
    assert keras["adoptable"] == [f"mnist/{n}" for n in MNIST_FILES]
    assert snapshot(d) == before


def test_find_copies_looks_in_the_well_known_places(mnist_test, tmp_path, monkeypatch, capsys):
    """Keras' datasets folder, a Hub snapshot in the Hugging Face cache, a torchvision root
    under ./data: found without being named."""
    x, y = mnist_test
    home = tmp_path / "home"
    write_copy("npz", home / ".keras" / "datasets", x, y)
    snap = home / "hf" / "hub" / "datasets--ylecun--mnist" / "snapshots" / "0a1b2c"
    write_copy("parquet", snap, x, y)
    work = tmp_path / "work"
    write_copy("torchvision", work / "data", x, y)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(home / "hf"))
    for var in ("KERAS_HOME", "HF_DATASETS_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(work)
    rc = main(["find-copies", "--json", "-"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert {str(home / ".keras" / "datasets"), str(home / "hf" / "hub"),
            str(work / "data")} <= set(doc["places"])
    mine = sorted((c["format"], c["verdict"], c["dataset"], c["split"]) for c in doc["copies"]
                  if c["path"].startswith(str(tmp_path)))
    assert mine == [("npz", "identical", "mnist", "test"), ("parquet", "identical", "mnist", "test"),
                    ("torchvision", "identical", "mnist", "test")]


def test_examine_says_why_train_images_cannot_be_adopted(mnist_test, mnist_reference, tmp_path):
    x, _ = mnist_test
    train_labels = np.asarray(read_idx(mnist_reference / "train-labels-idx1-ubyte.gz"))
    p = tmp_path / "mnist.npz"
    np.savez(p, x_train=np.tile(x, (6, 1, 1)), y_train=train_labels)
    (a,) = examine(p)
    assert [pc.file for pc in a.pieces] == ["mnist/train-labels-idx1-ubyte.gz"]
    assert "mnist/train-images-idx3-ubyte.gz (the registry pins no content hash of it)" in a.why_not


def test_from_one_folder_holding_several_copies_and_a_broken_one(mnist_test, mnist_reference,
                                                                 tmp_path, caplog):
    """A Keras .npz, an idx file in a sub-folder and an .npy that does not parse, side by side:
    the two copies are adopted, the broken file is named and skipped."""
    x, y = mnist_test
    d = tmp_path / "downloads"
    write_copy("npz", d, x, y)
    (d / "old").mkdir()
    shutil.copy(mnist_reference / "train-labels-idx1-ubyte.gz", d / "old")
    (d / "x_train.npy").write_bytes(b"\x93NUMPY garbage")
    placed, answers = adopt([d], root=tmp_path / "cache")
    assert sorted(placed) == ["mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz",
                              "mnist/train-labels-idx1-ubyte.gz"]
    broken = [a for a in answers if a.path.endswith("x_train.npy")]
    assert len(broken) == 1 and broken[0].verdict in ("unknown", "damaged") and not broken[0].pieces
