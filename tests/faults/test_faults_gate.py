"""The trust gate (issue 26): every route into the data, every damage, one named error or the data.

Real files only: MNIST's test set (``../shared/reference/mnist``) and Debian's Fashion-MNIST
(``/usr/share/datasets/fashion-mnist``), written in each route's layout.  Each case asserts the
named error, or the harmless outcome and the data returned.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from cache_helpers import put
from test_foreign_formats import write_copy

import mnistforge
from mnistforge.cache.seen import record_path
from mnistforge.errors import (ConfigError, DataMismatchError, FormatError, HashMismatchError,
                               IntegrityError)
from mnistforge.gate import POLICY, admit
from mnistforge.io.idx import read_idx, write_idx
from mnistforge.io.manifest import write_manifest

FASHION = Path("/usr/share/datasets/fashion-mnist")
IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
#: the foreign routes (io/foreign), each written by the writers of test_foreign_formats
FOREIGN = ("npz", "npy", "csv", "torchvision", "parquet", "mat")


@pytest.fixture(scope="module")
def mnist(mnist_reference):
    return np.asarray(read_idx(mnist_reference / IMAGES)), np.asarray(read_idx(mnist_reference / LABELS))


@pytest.fixture(scope="module")
def fashion():
    if not (FASHION / IMAGES).is_file():
        pytest.skip(f"Debian's Fashion-MNIST not at {FASHION} (apt install dataset-fashion-mnist)")
    return np.asarray(read_idx(FASHION / IMAGES)), np.asarray(read_idx(FASHION / LABELS))


def folder_of(tmp_path: Path, images: Path | np.ndarray, labels: Path | np.ndarray, name="idx") -> Path:
    """An idx folder under the official names: files copied, or arrays written (.gz)."""
    d = tmp_path / name
    d.mkdir()
    for fname, src in ((IMAGES, images), (LABELS, labels)):
        if isinstance(src, Path):
            shutil.copy(src, d / fname)
        else:
            write_idx(d / fname, src)
    return d


def assert_mnist(ds, mnist):
    assert ds.name == "mnist" and ds.classes == [str(i) for i in range(10)]
    np.testing.assert_array_equal(ds.images, mnist[0])
    np.testing.assert_array_equal(ds.labels, mnist[1])


# --------------------------------------------------------------------------- the policy table

def test_every_route_has_a_rule_and_unknown_routes_are_refused():
    assert {"cache", "idx-folder", "build-folder", "hf-export", *FOREIGN} <= set(POLICY)
    with pytest.raises(ConfigError, match="unknown route"):
        admit(np.zeros((1, 28, 28), np.uint8), np.zeros(1), dataset=None, split=None,
              route="ftp", where="x")


def test_the_policy_table_of_the_docs_is_the_code_s():
    from mnistforge.gate.policy import policy_rows

    doc = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    for row in policy_rows():
        assert "| " + " | ".join(row) + " |" in doc, row


# --------------------------------------------------------------------------- idx folders

def test_idx_folder_of_the_real_files_loads_and_is_recorded(tmp_path, cache, mnist_reference, mnist):
    d = folder_of(tmp_path, mnist_reference / IMAGES, mnist_reference / LABELS)
    ds = mnistforge.load("mnist", "test", root=d)
    assert_mnist(ds, mnist)
    assert ds.status == {IMAGES: "content", LABELS: "content"}   # the shared copies are re-compressed
    assert record_path(d / IMAGES, cache).is_file() and record_path(d / LABELS, cache).is_file()
    again = mnistforge.load("mnist", "test", root=d)   # from the records
    assert again.status == ds.status


def test_idx_folder_fashion_images_behind_mnist_labels(tmp_path, cache, mnist_reference):
    if not (FASHION / IMAGES).is_file():
        pytest.skip("no Fashion-MNIST")
    d = folder_of(tmp_path, FASHION / IMAGES, mnist_reference / LABELS)
    with pytest.raises(DataMismatchError, match="fashion-mnist test"):
        mnistforge.load("mnist", "test", root=d)


def test_idx_folder_one_changed_image(tmp_path, cache, mnist_reference, mnist):
    x = mnist[0].copy()
    x[123, 14, 14] ^= 0x01
    d = folder_of(tmp_path, x, mnist_reference / LABELS)
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)
    ds = mnistforge.load("mnist", "test", root=d, trust_files=True)  # the explicit opt-out
    np.testing.assert_array_equal(ds.images, x)


def test_idx_folder_changed_with_size_and_mtime_restored_is_hashed_again(tmp_path, cache, mnist,
                                                                         mnist_reference):
    d = tmp_path / "raw"
    d.mkdir()
    write_idx(d / "t10k-images-idx3-ubyte", mnist[0])
    shutil.copy(mnist_reference / LABELS, d / LABELS)
    assert_mnist(mnistforge.load("mnist", "test", root=d), mnist)   # recorded as checked
    p = d / "t10k-images-idx3-ubyte"
    st = p.stat()
    with open(p, "r+b") as f:          # one pixel, in place: the same size
        f.seek(16 + 5 * 28 + 5)
        f.write(b"\x80")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))   # mtime restored; ctime cannot be
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)


def test_idx_folder_fashion_under_mnist_names_with_both_files(tmp_path, cache, fashion):
    d = folder_of(tmp_path, FASHION / IMAGES, FASHION / LABELS)
    with pytest.raises(DataMismatchError, match="fashion-mnist"):
        mnistforge.load("mnist", "test", root=d)
    ds = mnistforge.load("fashion-mnist", "test", root=d)    # as what it is: loads
    assert ds.classes[0] == "T-shirt/top" and set(ds.status.values()) == {"content"}
    np.testing.assert_array_equal(ds.images, fashion[0])


def test_idx_folder_small_images_and_big_labels(tmp_path, cache, mnist, mnist_reference):
    d = folder_of(tmp_path, np.ascontiguousarray(mnist[0].reshape(-1, 14, 56)), mnist_reference / LABELS)
    with pytest.raises(IntegrityError, match="not 28 x 28"):
        mnistforge.load("mnist", "test", root=d)
    y = mnist[1].copy()
    y[7] = 200
    d2 = folder_of(tmp_path, mnist_reference / IMAGES, y, name="labels200")
    with pytest.raises(DataMismatchError):
        mnistforge.load("mnist", "test", root=d2)
    with pytest.raises(IntegrityError, match="outside the class range"):
        mnistforge.load("mnist", "test", root=d2, trust_files=True)  # trust never skips the form


def test_idx_folder_check_rehashes_despite_the_record(tmp_path, cache, mnist_reference, mnist):
    d = folder_of(tmp_path, mnist_reference / IMAGES, mnist_reference / LABELS)
    mnistforge.load("mnist", "test", root=d)
    rec = record_path(d / IMAGES, cache)
    text = rec.read_text().replace('"sha256": "', '"sha256": "00')   # a record that lies
    rec.write_text(text)
    assert_mnist(mnistforge.load("mnist", "test", root=d, check=True), mnist)   # hashed again
    assert "00" + "8d422c7b" not in rec.read_text()    # and recorded afresh


# --------------------------------------------------------------------------- build folders

def test_build_folder_with_a_changed_images_file(tmp_path, cache, mnist, mnist_reference):
    d = folder_of(tmp_path, mnist[0], mnist_reference / LABELS, name="built")
    write_manifest(d, kind="mnist", inputs={}, parameters={})
    assert set(mnistforge.load("mnist", "test", root=d).status.values()) == {"built"}
    x = mnist[0].copy()
    x[9, 9, 9] ^= 0x10
    write_idx(d / IMAGES, x)
    with pytest.raises(DataMismatchError, match="changed since it was built"):
        mnistforge.load("mnist", "test", root=d)


# --------------------------------------------------------------------------- third-party copies

@pytest.mark.parametrize("fmt", FOREIGN)
def test_copy_of_fashion_loaded_as_mnist_is_refused(fmt, tmp_path, cache, fashion):
    p = write_copy(fmt, tmp_path, *fashion, name="fashion-mnist")
    with pytest.raises(DataMismatchError, match="fashion-mnist test"):
        mnistforge.load("mnist", "test", root=p)
    ds = mnistforge.load("fashion-mnist", "test", root=p)
    assert ds.name == "fashion-mnist" and ds.classes[0] == "T-shirt/top"
    np.testing.assert_array_equal(ds.images, fashion[0])


@pytest.mark.parametrize("fmt", FOREIGN)
def test_copy_of_mnist_loads_as_mnist(fmt, tmp_path, cache, mnist):
    ds = mnistforge.load("mnist", "test", root=write_copy(fmt, tmp_path, *mnist))
    assert_mnist(ds, mnist)
    assert ds.status == {"content": "identical"}


@pytest.mark.parametrize("fmt", ("npz", "npy", "csv", "parquet"))
def test_copy_with_fashion_images_behind_mnist_labels(fmt, tmp_path, cache, mnist, fashion):
    p = write_copy(fmt, tmp_path, fashion[0], mnist[1])
    with pytest.raises(DataMismatchError, match="images of fashion-mnist test; labels of mnist test"):
        mnistforge.load("mnist", "test", root=p)


@pytest.mark.parametrize("fmt", ("npz", "csv", "torchvision"))
def test_copy_with_one_changed_image(fmt, tmp_path, cache, mnist):
    x = mnist[0].copy()
    x[4321, 3, 3] ^= 0x40
    with pytest.raises(DataMismatchError, match="images of no known dataset; labels of mnist test"):
        mnistforge.load("mnist", "test", root=write_copy(fmt, tmp_path, x, mnist[1]))


def test_copy_in_one_file_is_recorded_and_a_change_in_place_is_seen(tmp_path, cache, mnist):
    p = write_copy("csv", tmp_path, *mnist)
    assert_mnist(mnistforge.load("mnist", "test", root=p), mnist)
    assert record_path(p, cache).is_file()              # the content hashes, kept
    assert_mnist(mnistforge.load("mnist", "test", root=p), mnist)   # from the record
    st = p.stat()
    data = bytearray(p.read_bytes())
    row = data.index(b"\n") + 1                          # the first image's row
    at = data.index(b",0,", row + 2) + 1                  # one of its pixels: 0 -> 7, same size
    data[at:at + 1] = b"7"
    p.write_bytes(bytes(data))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))     # size and mtime as they were
    with pytest.raises(DataMismatchError, match="images of no known dataset"):
        mnistforge.load("mnist", "test", root=p)


def test_copy_with_small_images(tmp_path, cache, mnist):
    p = tmp_path / "small.npz"
    np.savez(p, x_test=np.ascontiguousarray(mnist[0].reshape(-1, 14, 56)), y_test=mnist[1])
    for trust in (False, True):     # the same bytes as MNIST test (order-free hash): the form decides
        with pytest.raises(IntegrityError, match="not 28 x 28"):
            mnistforge.load("mnist", "test", root=p, trust_files=trust)


@pytest.mark.parametrize("fmt", ("npz", "csv"))
def test_copy_with_label_200(fmt, tmp_path, cache, mnist):
    y = mnist[1].astype(np.int64)
    y[0] = 200
    p = write_copy(fmt, tmp_path, mnist[0], y)
    with pytest.raises(DataMismatchError, match="images of mnist test; labels of no known dataset"):
        mnistforge.load("mnist", "test", root=p)
    with pytest.raises(IntegrityError, match="outside the class range"):
        mnistforge.load("mnist", "test", root=p, trust_files=True)


@pytest.mark.parametrize("fmt", ("npz", "npy"))
def test_copy_with_int64_pixels_of_300(fmt, tmp_path, cache, mnist):
    x = mnist[0].astype(np.int64)
    x[0, 10, 10] = 300
    with pytest.raises(FormatError, match="out of range"):
        mnistforge.load("mnist", "test", root=write_copy(fmt, tmp_path, x, mnist[1]), trust_files=True)


def test_copy_of_the_train_split_claimed_as_test(tmp_path, cache, fashion):
    if not (FASHION / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip("no Fashion-MNIST train")
    x, y = read_idx(FASHION / "train-images-idx3-ubyte.gz"), read_idx(FASHION / "train-labels-idx1-ubyte.gz")
    p = tmp_path / "swapped.npz"
    np.savez(p, x_test=x, y_test=y)     # a test split that holds the train split
    with pytest.raises(DataMismatchError, match="fashion-mnist train"):
        mnistforge.load("fashion-mnist", "test", root=p)


def test_copy_named_mnist_by_its_file_but_of_unknown_content_is_not_called_mnist(tmp_path, cache,
                                                                                  mnist):
    x = mnist[0].copy()
    x[0] = 255 - x[0]
    p = tmp_path / "mnist.npz"      # the file name says mnist, the content does not
    np.savez(p, x_test=x, y_test=mnist[1])
    ds = mnistforge.load(p, "test")
    assert ds.name != "mnist"


def test_copy_of_a_subset_under_a_pinned_name_is_refused(tmp_path, cache, mnist):
    p = tmp_path / "first1000.npz"
    np.savez(p, x_test=mnist[0][:1000], y_test=mnist[1][:1000])
    with pytest.raises(DataMismatchError, match="no known dataset"):
        mnistforge.load("mnist", "test", root=p)
    assert len(mnistforge.load("mnist", "test", root=p, trust_files=True)) == 1000


# --------------------------------------------------------------------------- label_issues on copies

@pytest.fixture
def study(cache, reference_dir):
    p = reference_dir / "papers" / "northcutt2021-mnist-test-mturk.json"
    if not p.is_file():
        pytest.skip(f"the study's file is not at {p}")
    put(cache, "label-errors", p, "mnist_mturk.json")
    return p


def test_label_issues_work_on_an_identical_copy(tmp_path, cache, study, mnist):
    ds = mnistforge.load("mnist", "test", root=write_copy("npz", tmp_path, *mnist), label_issues="exclude")
    assert len(ds) == 10000 - 15 and ds.label_issues is not None
    np.testing.assert_array_equal(ds.labels, np.delete(mnist[1], ds.label_issues.dropped))


def test_label_issues_are_refused_on_a_reordered_copy(tmp_path, cache, study, mnist):
    p = np.random.default_rng(3).permutation(10000)
    path = write_copy("npz", tmp_path, mnist[0][p], mnist[1][p])
    assert len(mnistforge.load("mnist", "test", root=path)) == 10000  # loads (reordered) ...
    with pytest.raises(ConfigError, match="official order"):          # ... but not row-wise facts
        mnistforge.load("mnist", "test", root=path, label_issues="exclude")


def test_an_unknown_label_issues_mode_is_refused_on_a_copy(tmp_path, cache, mnist):
    with pytest.raises(ConfigError):
        mnistforge.load("mnist", "test", root=write_copy("npz", tmp_path, *mnist), label_issues="drop")


# --------------------------------------------------------------------------- the cache

def test_cache_check_rehashes_the_compressed_download(cache, mnist_reference, mnist):
    for f in (IMAGES, LABELS):
        put(cache, "mnist", mnist_reference / f)
    assert_mnist(mnistforge.load("mnist", "test", download=False), mnist)  # raw copies made
    packed = cache / "mnist" / IMAGES
    st = packed.stat()
    data = bytearray(packed.read_bytes())
    data[len(data) // 2] ^= 0xFF   # bit rot: same size, mtime restored, sidecar still "valid"
    packed.write_bytes(bytes(data))
    os.utime(packed, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert_mnist(mnistforge.load("mnist", "test", download=False), mnist)  # raw copy: harmless
    with pytest.raises(HashMismatchError):
        mnistforge.load("mnist", "test", download=False, check=True)


# --------------------------------------------------------------------------- the entry point

def test_admit_refuses_what_a_route_would_have_cast(mnist):
    x = mnist[0].astype(np.int64)
    x[0, 0, 0] = 300            # astype(uint8) would make it 44
    with pytest.raises(FormatError, match="out of range"):
        admit(x, mnist[1], dataset="mnist", split="test", route="hf-export", where="export")


def test_admit_names_the_split_a_swapped_shard_holds(fashion):
    with pytest.raises(DataMismatchError, match="fashion-mnist test"):
        admit(*fashion, dataset="fashion-mnist", split="train", route="hf-export", where="export")
    assert admit(*fashion, dataset="fashion-mnist", split="test", route="hf-export",
                 where="export").verdict.status == "identical"


# --------------------------------------------------------------------------- the consumers

@pytest.mark.parametrize("command", ["show", "evaluate"])
def test_commands_consume_data_through_the_gate(command, tmp_path, cache, mnist_reference):
    from faults_helpers import cli

    if not (FASHION / IMAGES).is_file():
        pytest.skip("no Fashion-MNIST")
    d = folder_of(tmp_path, FASHION / IMAGES, mnist_reference / LABELS)
    target = f"{d}:mnist:test"
    args = {"show": ["show", target, "--out", tmp_path / "grid.png"],
            "evaluate": ["evaluate", "linear", "--train", target, "--test", target]}[command]
    r = cli(*args)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "fashion-mnist" in r.stderr, r.stderr
    assert not (tmp_path / "grid.png").exists()


def test_a_folder_of_fashion_train_files_only_is_named_fashion(tmp_path, cache, fashion):
    # identity does not depend on which files are present: the train files alone say what they
    # are (issue 40; the test labels used to be the only ones compared)
    from mnistforge.checks import verify
    from mnistforge.loaders import detect_dataset

    d = tmp_path / "train-only"
    d.mkdir()
    for f in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        shutil.copy(FASHION / f, d / f)
    assert detect_dataset(d) == "fashion-mnist"
    report = verify(d, near=False, download=False)
    assert {r.name: r.status for r in report.results}["hashes.registry"] == "pass"
    ds = mnistforge.load(str(d), "train")
    assert ds.name == "fashion-mnist" and ds.classes[0] == "T-shirt/top"
