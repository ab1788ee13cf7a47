"""Loaders: real official files from the cache, built folders, EMNIST quirks, raw copies."""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import zipfile

import numpy as np
import pytest

import mnistforge
from mnistforge import registry
from mnistforge.errors import ConfigError, DatasetNotFoundError, MissingFileError, OfflineError
from mnistforge.io.manifest import Manifest
from mnistforge.io.idx import write_idx
from mnistforge.loaders import DatasetSplit, hf_features, load, resolve_target
from mnistforge.cache.verify import marker_path, verify_file
from cache_helpers import put




def qmnist_test_labels(qmnist_reference, n=10000):
    with gzip.open(qmnist_reference / "qmnist-test-labels.tsv.gz", "rt") as f:
        return np.array([int(next(f).split("\t")[0]) for _ in range(n)])


# --- official files, through the cache -----------------------------------------

def test_real_mnist_test_set(cache, mnist_reference, qmnist_reference):
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    ds = mnistforge.load("mnist", "test", download=False)
    assert isinstance(ds, DatasetSplit) and len(ds) == 10000
    assert ds.images.shape == (10000, 28, 28) and ds.images.dtype == np.uint8
    assert ds.labels.dtype == np.int64
    np.testing.assert_array_equal(ds.labels, qmnist_test_labels(qmnist_reference))
    # the mirror re-compressed the files: accepted by content, and said so
    assert ds.status == {"t10k-images-idx3-ubyte.gz": "content", "t10k-labels-idx1-ubyte.gz": "content"}
    assert ds.classes == list("0123456789") and ds.metadata is None
    # upright, ink high: the first test digit is a 7 whose ink sits in the middle rows
    assert ds.images[0].max() == 255 and ds.images[0, :4].sum() == 0


def test_raw_copy_cache(cache, mnist_reference):
    put(cache, "mnist", mnist_reference / "t10k-labels-idx1-ubyte.gz")
    put(cache, "mnist", mnist_reference / "t10k-images-idx3-ubyte.gz")
    first = load("mnist", "test")
    expected = np.array(first.images)
    raw = cache / "mnist" / "t10k-images-idx3-ubyte"
    assert raw.is_file() and marker_path(raw).is_file()
    assert hashlib.sha256(raw.read_bytes()).hexdigest() == \
        registry.get_file("mnist/t10k-images-idx3-ubyte.gz").content_sha256
    second = load("mnist", "test")
    assert isinstance(second.images, np.memmap) and second.status["t10k-images-idx3-ubyte.gz"] == "raw"
    np.testing.assert_array_equal(expected, second.images)
    # a damaged raw copy (new mtime) is detected and rebuilt from the verified gz
    data = bytearray(raw.read_bytes())
    data[100] ^= 0xFF
    del first, second
    raw.write_bytes(bytes(data))
    third = load("mnist", "test")
    np.testing.assert_array_equal(expected, third.images)


def test_raw_copy_opt_out(cache, mnist_reference, monkeypatch):
    put(cache, "mnist", mnist_reference / "t10k-labels-idx1-ubyte.gz")
    put(cache, "mnist", mnist_reference / "t10k-images-idx3-ubyte.gz")
    monkeypatch.setenv("MNISTFORGE_KEEP_RAW", "0")
    ds = load("mnist", "test")
    assert len(ds) == 10000 and not (cache / "mnist" / "t10k-images-idx3-ubyte").exists()
    ds = load("mnist", "test", keep_raw=True)
    assert (cache / "mnist" / "t10k-images-idx3-ubyte").exists()


def test_offline_and_missing_file_says_where(cache):
    with pytest.raises(OfflineError) as e:
        load("kmnist", "test")
    assert str(cache / "kmnist" / "t10k-images-idx3-ubyte.gz") in str(e.value)
    assert "codh.rois.ac.jp" in str(e.value)


def test_fashion_mnist_verifies_and_loads(cache, fashion_dir):
    for name in sorted(os.listdir(fashion_dir)):
        put(cache, "fashion-mnist", fashion_dir / name)
    # loading through the cache verifies every file against the registry first
    tr = load("fashion-mnist", "train", keep_raw=False)
    te = load("fashion-mnist", "test", keep_raw=False)
    assert (len(tr), len(te)) == (60000, 10000)
    assert set(tr.status.values()) == set(te.status.values()) == {"content"}
    f = registry.get_file("fashion-mnist/t10k-labels-idx1-ubyte.gz")
    assert verify_file(fashion_dir / f.name, f, use_marker=False).status == "content"
    assert np.bincount(tr.labels).tolist() == [6000] * 10
    assert tr.classes[9] == "Ankle boot"
    # the same files as a folder: recognised as Fashion-MNIST, same arrays
    name, split, root = resolve_target(f"{fashion_dir}:test")
    assert (name, split, root) == ("fashion-mnist", "test", fashion_dir)
    te2 = load(name, split, root=root)
    np.testing.assert_array_equal(te.images, te2.images)
    np.testing.assert_array_equal(te.labels, te2.labels)


# --- built folders -----------------------------------------------------------------

def fake_images(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)


def qmnist_table(n, start=0, seed=0):
    rng = np.random.default_rng(seed)
    t = np.zeros((n, 8), np.int32)
    t[:, 0] = rng.integers(0, 10, n)
    t[:, 1] = 4
    t[:, 2] = rng.integers(0, 4100, n)
    t[:, 4] = 30 + t[:, 0]
    t[:, 5] = np.arange(start, start + n)
    return t


@pytest.fixture(scope="module")
def qmnist_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("build")
    d = root / "qmnist"
    imgs_tr, imgs_te = fake_images(40, 1), fake_images(10005, 2)
    write_idx(d / "qmnist-train-images-idx3-ubyte.gz", imgs_tr)
    write_idx(d / "qmnist-train-labels-idx2-int.gz", qmnist_table(40, 0, 1))
    write_idx(d / "qmnist-test-images-idx3-ubyte", imgs_te)  # raw: any compression is found
    write_idx(d / "qmnist-test-labels-idx2-int", qmnist_table(10005, 1000, 2))
    Manifest(kind="qmnist").write(d)  # a build folder: loads check its files against this
    return root, imgs_tr, imgs_te


def test_built_qmnist_with_metadata_and_slices(qmnist_build):
    root, imgs_tr, imgs_te = qmnist_build
    tr = load("qmnist", "train", root=root, with_metadata=True)
    np.testing.assert_array_equal(tr.images, imgs_tr)
    assert tr.metadata.dtype.names == ("label", "hsf", "writer", "index_in_writer", "nist_class",
                                       "nist_index", "duplicate", "unused")
    np.testing.assert_array_equal(tr.labels, tr.metadata["label"])
    assert (tr.metadata["nist_class"] == 30 + tr.labels).all()
    t10 = load("qmnist", "test10k", root=root / "qmnist", with_metadata=True)
    t50 = load("qmnist", "test50k", root=root, with_metadata=True)
    assert (len(t10), len(t50)) == (10000, 5)
    np.testing.assert_array_equal(t10.metadata["nist_index"], np.arange(1000, 11000))
    np.testing.assert_array_equal(t50.images, imgs_te[10000:])
    assert load("qmnist", "test", root=root).metadata is None  # only when asked


def test_resolve_target_forms(qmnist_build, tmp_path):
    root = qmnist_build[0]
    assert resolve_target("mnist") == ("mnist", None, None)
    assert resolve_target("qmnist:test50k") == ("qmnist", "test50k", None)
    assert resolve_target(f"{root}:test10k") == ("qmnist", "test10k", root)
    assert resolve_target(f"{root / 'qmnist'}", "train") == ("qmnist", "train", root / "qmnist")
    assert resolve_target(f"{root}:qmnist:nist") == ("qmnist", "nist", root)
    with pytest.raises(DatasetNotFoundError, match="emnist-letters"):
        resolve_target("emnist-letter")
    with pytest.raises(DatasetNotFoundError, match="test10k"):
        resolve_target(f"{root}:test11k")
    with pytest.raises(MissingFileError):
        resolve_target(str(tmp_path / "nowhere"))
    with pytest.raises(MissingFileError, match="no dataset files"):
        resolve_target(str(tmp_path))
    # two datasets under one folder: ask which
    (tmp_path / "mnist").mkdir()
    write_idx(tmp_path / "mnist" / "t10k-images-idx3-ubyte.gz", fake_images(3))
    shutil.copytree(root / "qmnist", tmp_path / "qmnist")
    with pytest.raises(ConfigError, match="several datasets"):
        resolve_target(str(tmp_path))
    assert resolve_target(f"{tmp_path}:mnist:test")[:2] == ("mnist", "test")
    # load() takes a folder as the name too
    assert load(str(root / "qmnist"), "train").name == "qmnist"


def emnist_build(root, split, n_train, n_test, *, transposed=True, manifest=None, metadata=True):
    info = registry.get_dataset(f"emnist-{split}")
    lo = info.label_offset
    data = {}
    for part, n in (("train", n_train), ("test", n_test)):
        imgs = fake_images(n, seed=n)
        imgs[:, 0, :] = 0
        imgs[:, :, 0] = 255  # left column inked, top row blank: orientation is visible
        labels = (np.arange(n) % (len(info.classes) - lo) + lo).astype(np.uint8)
        stored = imgs.transpose(0, 2, 1) if transposed else imgs
        write_idx(root / f"emnist-{split}-{part}-images-idx3-ubyte.gz", np.ascontiguousarray(stored))
        write_idx(root / f"emnist-{split}-{part}-labels-idx1-ubyte.gz", labels)
        if metadata:
            meta = np.stack([np.arange(n) + 5000, np.full(n, 7), np.ones(n), 65 + labels,
                             np.arange(n), np.arange(n) * 2], axis=1).astype(np.int32)
            write_idx(root / f"emnist-{split}-{part}-metadata-idx2-int.gz", meta)
        data[part] = (imgs, labels)
    # a build folder: loads check its files against the sha256 the manifest records
    Manifest.from_dict(manifest or {"kind": "emnist"}).write(root)
    return data


def test_emnist_transposed_files_are_shown_upright(tmp_path):
    data = emnist_build(tmp_path, "letters", 30, 10, metadata=False)
    ds = load("emnist-letters", "train", root=tmp_path, with_metadata=True)
    np.testing.assert_array_equal(ds.images, data["train"][0])
    assert (ds.images[:, 0, 1:] == 0).all() and (ds.images[:, :, 0] == 255).all()
    assert ds.labels.min() == 1 and ds.classes[ds.labels[0]] == "A"
    assert ds.classes[0] == "N/A (unused)" and len(ds.classes) == 27
    assert ds.metadata is None  # no side file in this folder
    assert ds.orientation == "upright" and ds.stored_orientation == "transposed"


def test_emnist_upright_build_per_manifest(tmp_path):
    data = emnist_build(tmp_path, "digits", 12, 4, transposed=False,
                        manifest={"kind": "emnist", "parameters": {"orientation": "upright"}})
    ds = load("emnist-digits", "test", root=tmp_path, with_metadata=True)
    np.testing.assert_array_equal(ds.images, data["test"][0])
    assert ds.metadata.dtype.names == ("writer", "hsf", "field", "ascii", "entry", "sd19_row")
    np.testing.assert_array_equal(ds.metadata["writer"], np.arange(4) + 5000)


def test_emnist_validation_splits(tmp_path):
    data = emnist_build(tmp_path / "emnist", "balanced", 50, 8)
    val = load("emnist-balanced", "validation", root=tmp_path, with_metadata=True)
    rest = load("emnist-balanced", "train-without-validation", root=tmp_path, with_metadata=True)
    full = load("emnist-balanced", "train", root=tmp_path)
    assert (len(val), len(rest), len(full)) == (8, 42, 50)
    np.testing.assert_array_equal(val.images, data["train"][0][42:])
    np.testing.assert_array_equal(rest.labels, data["train"][1][:42])
    np.testing.assert_array_equal(val.metadata["entry"], np.arange(42, 50))
    with pytest.raises(DatasetNotFoundError, match="validation"):
        load("emnist-bymerge", "validation", root=tmp_path)


def _patch_registry(monkeypatch, extra):
    import mnistforge.loaders.origins as S
    import mnistforge.cache.download as D

    real = registry.get_file

    def get_file(name):
        if isinstance(name, str) and name in extra:
            return extra[name]
        return real(name)
    monkeypatch.setattr(S, "get_file", get_file)
    monkeypatch.setattr(D, "get_file", get_file)


def test_official_emnist_members_read_in_place(cache, tmp_path, monkeypatch):
    # A stand-in for gzip.zip (the real one is 562 MB and not at hand): same layout,
    # pinned in a patched registry lookup, so the member path is exercised end to end.
    n = 20
    imgs = fake_images(n, 5)
    labels = (np.arange(n) % 26 + 1).astype(np.uint8)
    members = {}
    for part in ("train", "test"):
        for kind, arr in (("images-idx3-ubyte", np.ascontiguousarray(imgs.transpose(0, 2, 1))),
                          ("labels-idx1-ubyte", labels)):
            p = tmp_path / f"emnist-letters-{part}-{kind}.gz"
            write_idx(p, arr)
            members[p.name] = p.read_bytes()
    zpath = tmp_path / "gzip.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_STORED) as zf:
        for name, b in sorted(members.items()):
            zf.writestr("gzip/" + name, b)
    arch = registry.RemoteFile(id="emnist/gzip.zip", group="emnist", name="gzip.zip",
                               sha256=hashlib.sha256(zpath.read_bytes()).hexdigest(), pinned=True)
    extra = {"emnist/gzip.zip": arch}
    for name, b in members.items():
        extra[f"emnist/{name}"] = registry.RemoteFile(
            id=f"emnist/{name}", group="emnist", name=name, archive="emnist/gzip.zip",
            member="gzip/" + name, md5=hashlib.md5(b).hexdigest(), pinned=True)
    _patch_registry(monkeypatch, extra)
    put(cache, "emnist", zpath)
    # counts in the registry are the real ones: compare arrays through the source directly
    from mnistforge.loaders.origins import CacheOrigin
    for keep in (False, True):
        src = CacheOrigin(registry.get_dataset("emnist-letters"), keep_raw=keep)
        got = src.open("emnist-letters-train-images-idx3-ubyte.gz")
        np.testing.assert_array_equal(got.transpose(0, 2, 1), imgs)
        assert src.status["emnist-letters-train-images-idx3-ubyte.gz"] == "archive"
        assert (cache / "emnist" / "emnist-letters-train-images-idx3-ubyte").exists() == keep
    # a member whose md5 disagrees is refused
    bad = dict(extra)
    name = "emnist-letters-test-labels-idx1-ubyte.gz"
    bad[f"emnist/{name}"] = registry.RemoteFile(
        id=f"emnist/{name}", group="emnist", name=name, archive="emnist/gzip.zip",
        member="gzip/" + name, md5="0" * 32, pinned=True)
    _patch_registry(monkeypatch, bad)
    from mnistforge.errors import HashMismatchError
    with pytest.raises(HashMismatchError, match="md5"):
        CacheOrigin(registry.get_dataset("emnist-letters"), keep_raw=True).open(name)
    assert not (cache / "emnist" / "emnist-letters-test-labels-idx1-ubyte").exists()


# --- conversions -------------------------------------------------------------------

def test_to_hf_and_features(tmp_path):
    emnist_build(tmp_path, "letters", 6, 3)
    ds = load("emnist-letters", "test", root=tmp_path, with_metadata=True)
    feats = hf_features(ds)
    # the writer is `writer_id` in Hugging Face datasets (as in Flower's FEMNIST, flwrlabs/femnist)
    assert list(feats) == ["image", "label", "writer_id", "hsf", "field", "ascii", "entry", "sd19_row"]
    assert feats["label"].names[0] == "N/A (unused)" and feats["label"].names[1] == "A"
    hf = ds.to_hf()
    assert len(hf) == 3 and hf.features == feats
    row = hf[1]
    np.testing.assert_array_equal(np.asarray(row["image"]), ds.images[1])
    assert row["label"] == ds.labels[1] and row["writer_id"] == 5001


def test_to_torch_or_clear_error(tmp_path):
    emnist_build(tmp_path, "digits", 5, 2, metadata=False)
    ds = load("emnist-digits", "train", root=tmp_path)
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        # a missing extra is an ImportError (MissingDependencyError), not a usage error
        with pytest.raises(ImportError, match=r"mnistforge\[torch\]"):
            ds.to_torch()
        return
    t = ds.to_torch()
    assert isinstance(t, torch.utils.data.Dataset) and len(t) == 5
    img, label = t[0]
    assert tuple(img.shape) == (1, 28, 28) and img.dtype == torch.uint8 and label == ds.labels[0]
    np.testing.assert_array_equal(t.data.numpy(), ds.images)


def test_an_empty_selection_says_which_split_and_why(tmp_path, caplog):
    # issue 27: load("qmnist", "test50k") on a small build returned 0 rows without a word
    d = tmp_path / "qmnist"
    write_idx(d / "qmnist-test-images-idx3-ubyte.gz", fake_images(600, 3))
    write_idx(d / "qmnist-test-labels-idx2-int.gz", qmnist_table(600, 0, 3))
    Manifest(kind="qmnist").write(d)
    with caplog.at_level("WARNING", logger="mnistforge"):
        t50 = load("qmnist", "test50k", root=d)
    assert len(t50) == 0
    msg = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "qmnist test50k selects 0 rows" in msg and "rows 10,000 onwards of test" in msg, msg
    caplog.clear()
    with caplog.at_level("WARNING", logger="mnistforge"):
        assert len(load("qmnist", "test10k", root=d)) == 600     # not empty: nothing said
    assert not [r for r in caplog.records if "selects 0 rows" in r.getMessage()]
