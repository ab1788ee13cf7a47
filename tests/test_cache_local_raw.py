"""load(..., root=FOLDER, keep_raw=True): raw copies of a folder's .gz files, kept in the cache."""
from __future__ import annotations

import errno
import gzip
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from mnistforge.errors import DataMismatchError

import mnistforge
from mnistforge.cache.local_raw import LOCAL_RAW, copy_path
from mnistforge.io.idx import read_idx

IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` with its size and mtime_ns."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def folder(fashion_dir, tmp_path) -> Path:
    """Fashion-MNIST's test files as a user's folder; the images stored gzip level 0, so an
    edited copy can keep the size of the original."""
    d = tmp_path / "mine"
    d.mkdir()
    shutil.copy(fashion_dir / LABELS, d / LABELS)
    content = gzip.decompress((fashion_dir / IMAGES).read_bytes())
    (d / IMAGES).write_bytes(gzip.compress(content, compresslevel=0, mtime=0))
    return d


def same_file(a, b) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def load(folder, **kw):
    return mnistforge.load("fashion-mnist", "test", root=folder, **kw)


def test_the_copy_goes_to_the_cache_never_into_the_folder(folder, cache):
    before = snapshot(folder)
    plain = load(folder)
    assert not (cache / LOCAL_RAW).exists(), "a folder load wrote without being asked"
    ds = load(folder, keep_raw=True)
    assert snapshot(folder) == before
    raw = copy_path(folder / IMAGES, cache)
    assert raw.is_relative_to(cache / LOCAL_RAW) and raw.is_file()
    assert isinstance(ds.images, np.memmap) and same_file(ds.images.filename, raw)
    np.testing.assert_array_equal(ds.images, plain.images)
    np.testing.assert_array_equal(ds.labels, plain.labels)
    assert not [p for p in (cache / LOCAL_RAW).rglob("*") if p.name.endswith(".tmp")]


def test_repeat_loads_reuse_the_copy_and_write_nothing(folder, cache):
    load(folder, keep_raw=True)
    before_cache, before_folder = snapshot(cache), snapshot(folder)
    for _ in range(3):
        ds = load(folder, keep_raw=True)
        assert same_file(ds.images.filename, copy_path(folder / IMAGES, cache))
    assert snapshot(cache) == before_cache
    assert snapshot(folder) == before_folder


def edit_images(folder: Path, keep_stat: bool) -> np.ndarray:
    """Change one pixel of the folder's images file (same size; mtime restored if asked)."""
    p = folder / IMAGES
    st = p.stat()
    content = bytearray(gzip.decompress(p.read_bytes()))
    content[16 + 100] ^= 0xFF  # first image, row 3, column 16
    p.write_bytes(gzip.compress(bytes(content), compresslevel=0, mtime=0))
    if keep_stat:
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    return read_idx(p)


@pytest.mark.parametrize("keep_stat", [False, True], ids=["touched", "same size and mtime"])
def test_a_changed_source_gets_a_new_copy(folder, cache, keep_stat):
    old = np.array(load(folder, keep_raw=True).images)
    want = edit_images(folder, keep_stat)
    assert (want != old).sum() == 1
    with pytest.raises(DataMismatchError, match="not fashion-mnist"):  # the gate sees the change
        load(folder, keep_raw=True)
    ds = load(folder, keep_raw=True, trust_files=True)  # loaded anyway: from a fresh copy
    np.testing.assert_array_equal(ds.images, want)
    assert same_file(ds.images.filename, copy_path(folder / IMAGES, cache))
    # and the new copy is then trusted: no write on the next load
    before = snapshot(cache)
    np.testing.assert_array_equal(load(folder, keep_raw=True, trust_files=True).images, want)
    assert snapshot(cache) == before


def test_a_changed_copy_is_not_trusted(folder, cache):
    good = np.array(load(folder, keep_raw=True).images)
    raw = copy_path(folder / IMAGES, cache)
    data = bytearray(raw.read_bytes())
    data[16 + 100] ^= 0xFF
    raw.write_bytes(bytes(data))  # a new mtime: the sidecar no longer describes the copy
    np.testing.assert_array_equal(load(folder, keep_raw=True).images, good)
    assert raw.read_bytes() != bytes(data)


def _rot(raw):
    """One byte of ``raw`` flipped in place, its size and mtime restored (ctime cannot be)."""
    st = raw.stat()
    data = bytearray(raw.read_bytes())
    data[16 + 100] ^= 0xFF
    raw.write_bytes(bytes(data))
    os.utime(raw, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime kept


def test_a_copy_changed_with_its_size_and_mtime_kept_is_made_again(folder, cache):
    good = np.array(load(folder, keep_raw=True).images)
    raw = copy_path(folder / IMAGES, cache)
    _rot(raw)
    # the sidecar records the copy's identity (its ctime changed): made again, not served
    np.testing.assert_array_equal(load(folder, keep_raw=True).images, good)
    assert (np.asarray(read_idx(raw)) == good).all()


def test_bit_rot_in_a_copy_is_found_by_check(folder, cache):
    good = np.array(load(folder, keep_raw=True).images)
    raw = copy_path(folder / IMAGES, cache)
    _rot(raw)
    # check=True re-hashes the copy, and makes it again
    np.testing.assert_array_equal(load(folder, keep_raw=True, check=True).images, good)
    np.testing.assert_array_equal(load(folder, keep_raw=True).images, good)


def test_a_copy_without_its_sidecar_is_not_trusted(folder, cache):
    good = np.array(load(folder, keep_raw=True).images)
    raw = copy_path(folder / IMAGES, cache)
    raw.with_name(raw.name + ".sha256").unlink()
    data = bytearray(raw.read_bytes())
    data[16 + 100] ^= 0xFF
    raw.write_bytes(bytes(data))
    np.testing.assert_array_equal(load(folder, keep_raw=True).images, good)


def test_a_cache_that_cannot_be_written_still_loads_from_the_folder(folder, cache, monkeypatch,
                                                                    caplog):
    from mnistforge.cache import local_raw

    def refuse(path, mode="wb"):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(local_raw, "atomic_file", refuse)
    ds = load(folder, keep_raw=True)
    np.testing.assert_array_equal(ds.images, read_idx(folder / IMAGES))
    assert not isinstance(ds.images, np.memmap)
    assert "reading it compressed" in caplog.text


def test_a_damaged_source_is_reported_as_without_the_copy(folder, cache):
    from mnistforge.errors import IdxFormatError

    p = folder / IMAGES
    p.write_bytes(p.read_bytes()[:-5000])
    with pytest.raises(IdxFormatError) as plain:
        load(folder)
    with pytest.raises(IdxFormatError) as kept:
        load(folder, keep_raw=True)
    assert str(kept.value) == str(plain.value)
    assert not copy_path(p, cache).exists()
