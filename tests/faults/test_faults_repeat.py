"""Repeat loads in one process: what earlier loads recorded never hides a change.

A load keeps on disk only what it hashed (records in ``<cache>/seen/``, a raw copy's sidecar),
trusted while each file keeps its identity; nothing is kept in memory between loads (issue 40).
Each case loads a folder twice, then changes the files as a careless or hostile user would
between two loads of the same process, and asserts what a fresh process would say.
Real files: MNIST's test set (``../shared/reference/mnist``).
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.cache import seen
from mnistforge.cache.local_raw import copy_path
from mnistforge.cache.seen import record_path
from mnistforge.errors import DataMismatchError, MnistforgeError
from mnistforge.io.idx import read_idx, write_idx
from mnistforge.registry import registry_path, use_registry

IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
RAW_IMAGES, RAW_LABELS = IMAGES[:-3], LABELS[:-3]


@pytest.fixture(scope="module")
def mnist(mnist_reference):
    return np.asarray(read_idx(mnist_reference / IMAGES)), np.asarray(read_idx(mnist_reference / LABELS))


def remembered(path) -> bool:
    """Whether the cache holds a record of ``path``."""
    return record_path(path).is_file()


def loaded_twice(d: Path, mnist, **kw):
    """Load ``d`` (recorded), then again (from the records)."""
    mnistforge.load("mnist", "test", root=d, **kw)
    ds = mnistforge.load("mnist", "test", root=d, **kw)
    np.testing.assert_array_equal(ds.images, mnist[0])
    return ds


def raw_folder(tmp_path: Path, mnist_reference: Path) -> Path:
    d = tmp_path / "raw"
    d.mkdir()
    for f in (IMAGES, LABELS):
        write_idx(d / f[:-3], read_idx(mnist_reference / f))
    return d


def flip_in_place(p: Path, offset: int) -> None:
    """One byte changed in place, the size and mtime restored (ctime cannot be)."""
    st = p.stat()
    with open(p, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x01]))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns


def manifest_sha(m: Path, name: str) -> str:
    """The sha256 the build manifest ``m`` records for output ``name``."""
    out = json.loads(m.read_text())["outputs"][name]
    return out["sha256"] if isinstance(out, dict) else out


def gz_folder(tmp_path, mnist_reference):
    """A folder of its own holding MNIST's test files (.gz)."""
    d = tmp_path / "gz"
    d.mkdir()
    for f in (IMAGES, LABELS):
        shutil.copy(mnist_reference / f, d / f)
    return d


def test_a_repeat_load_is_served_from_the_records_and_from_memory(tmp_path, cache, mnist_reference,
                                                                    mnist):
    d = raw_folder(tmp_path, mnist_reference)
    ds = loaded_twice(d, mnist)
    assert remembered(d / RAW_IMAGES) and remembered(d / RAW_LABELS)
    assert not isinstance(ds.images, np.memmap) and not ds.images.flags.writeable
    # a record removed only means hashing again
    record_path(d / RAW_IMAGES, cache).unlink()
    np.testing.assert_array_equal(mnistforge.load("mnist", "test", root=d).images, mnist[0])
    assert remembered(d / RAW_IMAGES)


def test_damage_with_size_and_mtime_kept_is_caught_after_a_remembered_load(
        tmp_path, cache, mnist_reference, mnist):
    d = raw_folder(tmp_path, mnist_reference)
    loaded_twice(d, mnist)
    assert remembered(d / RAW_IMAGES)
    flip_in_place(d / RAW_IMAGES, 16 + 28 * 28 * 5 + 300)
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)


def test_a_file_replaced_with_the_same_size_and_mtime_is_hashed_again(
        tmp_path, cache, mnist_reference, mnist):
    d = raw_folder(tmp_path, mnist_reference)
    loaded_twice(d, mnist)
    p = d / RAW_IMAGES
    st = p.stat()
    other = mnist[0].copy()
    other[9, 14, 14] ^= 0x10
    write_idx(tmp_path / "other", other)                      # same size, other bytes
    os.utime(tmp_path / "other", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp_path / "other", p)                         # a new inode, the old mtime
    assert p.stat().st_ino != st.st_ino and p.stat().st_mtime_ns == st.st_mtime_ns
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)


def test_a_record_changed_after_it_was_remembered_is_read_again(
        tmp_path, cache, mnist_reference, mnist):
    d = raw_folder(tmp_path, mnist_reference)
    loaded_twice(d, mnist)
    rec = record_path(d / RAW_IMAGES, cache)
    text = rec.read_text()
    # a record that lies about the file (its identity kept): what a fresh process would believe
    rec.write_text(text.replace('"content_xxh3_128": "', '"content_xxh3_128": "00'))
    assert rec.read_text() != text
    with pytest.raises(DataMismatchError):
        mnistforge.load("mnist", "test", root=d)
    # check=True hashes again and records afresh; the next load believes the file
    np.testing.assert_array_equal(mnistforge.load("mnist", "test", root=d, check=True).images,
                                  mnist[0])
    np.testing.assert_array_equal(mnistforge.load("mnist", "test", root=d).images, mnist[0])


def test_a_raw_file_put_beside_the_gz_after_a_remembered_load_is_the_one_read(
        tmp_path, cache, mnist_reference, mnist):
    d = gz_folder(tmp_path, mnist_reference)
    loaded_twice(d, mnist)
    bad = mnist[0].copy()
    bad[0, 10, 10] ^= 0x20
    write_idx(d / RAW_IMAGES, bad)          # raw files come first: the folder changed
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)
    (d / RAW_IMAGES).unlink()               # and gone again: the .gz, as before
    np.testing.assert_array_equal(mnistforge.load("mnist", "test", root=d).images, mnist[0])


def test_keep_raw_source_damaged_in_place_after_a_remembered_load(
        tmp_path, cache, mnist_reference, mnist):
    d = gz_folder(tmp_path, mnist_reference)
    loaded_twice(d, mnist, keep_raw=True)
    raw = copy_path(d / IMAGES, cache)
    assert raw.is_file()
    # the source re-written with other content at the same size and mtime
    other = mnist[0].copy()
    other[3, 3, 3] ^= 0x40
    st = (d / IMAGES).stat()
    data = gzip.compress(bytes(16) + other.tobytes(), mtime=0)
    with open(d / IMAGES, "r+b") as f:      # in place: same inode; size as it was
        f.write(data[:st.st_size].ljust(st.st_size, b"\0"))
        f.truncate(st.st_size)
    os.utime(d / IMAGES, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(MnistforgeError):    # its copy is not used; the source itself is refused
        mnistforge.load("mnist", "test", root=d, keep_raw=True)


def test_a_manifest_added_or_edited_after_a_remembered_load_is_read(tmp_path, cache,
                                                                    mnist_reference, mnist):
    from mnistforge.io.manifest import write_manifest

    d = raw_folder(tmp_path, mnist_reference)
    assert "built" not in loaded_twice(d, mnist).status.values()
    write_manifest(d, kind="mnist", inputs={}, parameters={})   # records the files' hashes
    assert set(mnistforge.load("mnist", "test", root=d).status.values()) == {"built"}
    assert set(mnistforge.load("mnist", "test", root=d).status.values()) == {"built"}
    m = d / "manifest.json"
    m.write_text(m.read_text().replace(manifest_sha(m, RAW_IMAGES), "0" * 64))   # edited in place
    with pytest.raises(DataMismatchError, match="changed since it was built"):
        mnistforge.load("mnist", "test", root=d)


def test_record_names_are_the_sha256_of_the_resolved_path(tmp_path):
    import hashlib

    real = os.path.realpath(tmp_path / "x.gz")
    assert seen.path_key(real) == hashlib.sha256(os.fsencode(real)).hexdigest()[:32]
    assert seen.record_path(tmp_path / "x.gz", tmp_path / "c").stem == seen.path_key(real)


# --- several loads, then a change ---------------------------------------------------------

def kept(d, mnist, **kw):
    """Load ``d`` three times (recorded, then from the records)."""
    for _ in range(3):
        ds = mnistforge.load("mnist", "test", root=d, **kw)
        np.testing.assert_array_equal(ds.images, mnist[0])
        np.testing.assert_array_equal(ds.labels, mnist[1])
    return ds


def test_repeat_loads_give_the_same_split(tmp_path, cache, mnist_reference, mnist):
    d = raw_folder(tmp_path, mnist_reference)
    first = kept(d, mnist)
    again = mnistforge.load("mnist", "test", root=d)
    assert again.status == first.status and again.source == first.source
    np.testing.assert_array_equal(again.images, mnist[0])
    assert not again.images.flags.writeable and not isinstance(again.images, np.memmap)


@pytest.mark.parametrize("name", [RAW_IMAGES, RAW_LABELS])
def test_damage_with_size_and_mtime_kept_ends_a_kept_verdict(tmp_path, cache,
                                                             mnist_reference, mnist, name):
    d = raw_folder(tmp_path, mnist_reference)
    kept(d, mnist)
    flip_in_place(d / name, 16 + 28 * 28 * 7 + 200 if name == RAW_IMAGES else 8 + 123)
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)


def test_a_manifest_added_after_a_kept_verdict_is_obeyed(tmp_path, cache,
                                                         mnist_reference, mnist):
    from mnistforge.io.manifest import write_manifest

    d = raw_folder(tmp_path, mnist_reference)
    kept(d, mnist)
    write_manifest(d, kind="mnist", inputs={}, parameters={})
    m = d / "manifest.json"
    m.write_text(m.read_text().replace(manifest_sha(m, RAW_LABELS), "0" * 64))   # files differ
    with pytest.raises(DataMismatchError, match="changed since it was built"):
        mnistforge.load("mnist", "test", root=d)


def test_a_raw_file_put_beside_the_gz_after_a_kept_verdict_is_read(tmp_path, cache,
                                                                   mnist_reference, mnist):
    d = gz_folder(tmp_path, mnist_reference)
    kept(d, mnist)
    bad = mnist[0].copy()
    bad[5, 9, 9] ^= 0x08
    write_idx(d / RAW_IMAGES, bad)
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)


def test_another_registry_is_asked_again(tmp_path, cache, mnist_reference, mnist):
    d = raw_folder(tmp_path, mnist_reference)
    kept(d, mnist)
    reg = json.loads(open(registry_path(), encoding="utf-8").read())
    entry = reg["files"]["mnist/t10k-labels-idx1-ubyte.gz"]
    for k in ("content_sha256", "content_md5", "content_xxh3_128"):
        if entry.get(k):
            entry[k] = "0" * len(entry[k])       # pins other labels than these
    other = tmp_path / "registry.json"
    other.write_text(json.dumps(reg), encoding="utf-8")
    with use_registry(other), pytest.raises(DataMismatchError):
        mnistforge.load("mnist", "test", root=d)
    np.testing.assert_array_equal(mnistforge.load("mnist", "test", root=d).labels, mnist[1])


def test_a_raw_copy_removed_after_a_kept_verdict_is_made_again(tmp_path, cache,
                                                                mnist_reference, mnist):
    d = gz_folder(tmp_path, mnist_reference)
    kept(d, mnist, keep_raw=True)
    raw = copy_path(d / IMAGES, cache)
    raw.unlink()
    ds = mnistforge.load("mnist", "test", root=d, keep_raw=True)
    np.testing.assert_array_equal(ds.images, mnist[0])
    assert raw.is_file()


def test_a_raw_copy_replaced_by_other_pixels_after_a_kept_verdict_is_not_served(
        tmp_path, cache, mnist_reference, mnist):
    d = gz_folder(tmp_path, mnist_reference)
    kept(d, mnist, keep_raw=True)
    raw = copy_path(d / IMAGES, cache)
    bad = mnist[0].copy()
    bad[1, 1, 1] ^= 0x02
    write_idx(tmp_path / "bad", bad)
    shutil.copystat(raw, tmp_path / "bad")           # the size and mtime its sidecar records
    os.replace(tmp_path / "bad", raw)
    ds = mnistforge.load("mnist", "test", root=d, keep_raw=True)
    np.testing.assert_array_equal(ds.images, mnist[0])


def test_check_and_trust_files_neither_use_nor_keep_a_verdict(tmp_path, cache,
                                                               mnist_reference, mnist):
    d = raw_folder(tmp_path, mnist_reference)
    for kw in ({"check": True}, {"trust_files": True}) * 3:
        mnistforge.load("mnist", "test", root=d, **kw)
    kept(d, mnist)
    flip_in_place(d / RAW_IMAGES, 16 + 28 * 28 * 2 + 50)
    with pytest.raises(DataMismatchError):     # check=True hashes again, whatever is kept
        mnistforge.load("mnist", "test", root=d, check=True)


def _outcome(d, **kw):
    try:
        ds = mnistforge.load("mnist", "test", root=d, **kw)
    except Exception as e:  # noqa: BLE001 - the outcome compared is the error's kind and text
        return type(e).__name__, str(e)
    return "loaded", ds.status


@pytest.mark.parametrize("change", ["export added", "folder removed", "file in its place"])
def test_a_known_folder_changed_into_something_else_is_asked_again(
        tmp_path, cache, mnist_reference, mnist, change):
    """A folder known to hold the idx files is not asked again whether it is a folder or an
    export while it keeps its identity; changed, a load says what a fresh process says."""
    d = raw_folder(tmp_path, mnist_reference)
    kept(d, mnist)
    if change == "export added":
        (d / "README.md").write_text("---\nconfigs: []\n---\n")
        (d / "data" / "mnist").mkdir(parents=True)
    else:
        shutil.rmtree(d)
        if change == "file in its place":
            d.write_bytes(b"not a folder")
    assert _outcome(d)[0] != "loaded"
