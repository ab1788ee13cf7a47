"""idx format: every type, every compression, round trips and malformed input."""
from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnistforge.errors import IdxFormatError
from mnistforge.io.idx import (
    MAX_BYTES, decompress_to_raw, idx_suffix, parse_idx_bytes, parse_idx_header, read_idx,
    read_idx_header, write_idx)

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]
SUFFIXES = ["", ".gz", ".xz", ".bz2"]


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (0, 28, 28)])
def test_round_trip_every_type_and_compression(tmp_path, dtype, suffix, shape):
    arr = sample(dtype, shape)
    p = tmp_path / f"a{suffix}"
    write_idx(p, arr)
    back = read_idx(p)
    assert back.shape == arr.shape
    assert back.dtype.newbyteorder("=") == np.dtype(dtype)
    np.testing.assert_array_equal(back, arr)
    h = read_idx_header(p)
    assert h.shape == shape and h.dtype.itemsize == np.dtype(dtype).itemsize


def test_mnist_magic_numbers(tmp_path):
    write_idx(tmp_path / "i", np.zeros((2, 28, 28), np.uint8))
    write_idx(tmp_path / "l", np.zeros(2, np.uint8))
    assert (tmp_path / "i").read_bytes()[:4] == struct.pack(">I", 2051)
    assert (tmp_path / "l").read_bytes()[:4] == struct.pack(">I", 2049)
    write_idx(tmp_path / "q", np.zeros((2, 8), np.int32))
    assert (tmp_path / "q").read_bytes()[:4] == struct.pack(">I", 0x0C02)


def test_big_endian_on_disk(tmp_path):
    write_idx(tmp_path / "x", np.array([1, 256], np.int32))
    assert (tmp_path / "x").read_bytes()[8:] == b"\0\0\0\x01\0\0\x01\0"


def test_raw_files_are_read_only_memory_maps(tmp_path):
    write_idx(tmp_path / "x", np.arange(10, dtype=np.uint8))
    arr = read_idx(tmp_path / "x")
    assert isinstance(arr, np.memmap)
    with pytest.raises(ValueError):
        arr[0] = 1
    assert not isinstance(read_idx(tmp_path / "x", mmap=False), np.memmap)


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2"])
def test_writes_are_reproducible(tmp_path, suffix):
    arr = sample(np.uint8, (50, 28, 28))
    write_idx(tmp_path / f"a{suffix}", arr)
    write_idx(tmp_path / f"b{suffix}", arr)
    assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()


def test_gzip_header_has_mtime_zero(tmp_path):
    write_idx(tmp_path / "a.gz", np.zeros(3, np.uint8))
    assert (tmp_path / "a.gz").read_bytes()[4:8] == b"\0\0\0\0"


def test_write_is_atomic_on_failure(tmp_path):
    p = tmp_path / "keep.gz"
    write_idx(p, np.arange(3, dtype=np.uint8))
    before = p.read_bytes()

    with pytest.raises(IdxFormatError):
        write_idx(p, np.zeros(3, dtype=bool))  # unsupported dtype: nothing written
    assert p.read_bytes() == before
    assert [q.name for q in tmp_path.iterdir()] == ["keep.gz"]


def test_multimember_gzip_is_read(tmp_path):
    arr = np.arange(100, dtype=np.uint8)
    full = bytes([0, 0, 8, 1]) + struct.pack(">I", 100) + arr.tobytes()
    p = tmp_path / "m.gz"
    p.write_bytes(gzip.compress(full[:50], mtime=0) + gzip.compress(full[50:], mtime=0))
    np.testing.assert_array_equal(read_idx(p), arr)


def test_decompress_to_raw(tmp_path):
    arr = sample(np.int16, (4, 5))
    write_idx(tmp_path / "a.xz", arr)
    raw = decompress_to_raw(tmp_path / "a.xz", tmp_path / "a")
    np.testing.assert_array_equal(read_idx(raw), arr)
    assert isinstance(read_idx(raw), np.memmap)


def test_idx_suffix():
    assert idx_suffix(np.zeros((2, 28, 28), np.uint8)) == "idx3-ubyte"
    assert idx_suffix(np.zeros((2, 8), np.int32)) == "idx2-int32"


# --- malformed input -------------------------------------------------------------------

def good_bytes():
    return bytes([0, 0, 8, 2]) + struct.pack(">II", 3, 4) + bytes(range(12))


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_truncated_file(tmp_path, suffix):
    data = good_bytes()[:-1]
    comp = {"": lambda b: b, ".gz": lambda b: gzip.compress(b, mtime=0), ".xz": lzma.compress,
            ".bz2": bz2.compress}[suffix]
    p = tmp_path / f"t{suffix}"
    p.write_bytes(comp(data))
    with pytest.raises(IdxFormatError) as e:
        read_idx(p)
    assert str(p) in str(e.value)
    assert "expected" in str(e.value) and "found" in str(e.value)


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2"])
def test_truncated_compressed_stream(tmp_path, suffix):
    arr = sample(np.uint8, (200, 28, 28))
    p = tmp_path / f"t{suffix}"
    write_idx(p, arr)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(IdxFormatError, match=str(p.name)):
        read_idx(p)


def test_trailing_data(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(good_bytes() + b"\0")
    with pytest.raises(IdxFormatError, match="disagree"):
        read_idx(p)


def test_bad_magic(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"\x1f\x8b" + good_bytes()[2:])  # a gzip file without .gz suffix, say
    with pytest.raises(IdxFormatError, match="bad magic"):
        read_idx(p)


def test_unknown_type(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(bytes([0, 0, 0x0A, 1]) + struct.pack(">I", 1) + b"\0")
    with pytest.raises(IdxFormatError, match="unknown idx type"):
        read_idx(p)


def test_absurd_size_is_refused_before_allocation(tmp_path):
    p = tmp_path / "x.gz"
    # Claims 2^32 x 2^32 x 8 bytes: must fail on the header, not in the allocator.
    p.write_bytes(gzip.compress(bytes([0, 0, 0x0E, 2]) + struct.pack(">II", 2**32 - 1, 2**32 - 1),
                                mtime=0))
    with pytest.raises(IdxFormatError, match="absurd"):
        read_idx(p)


def test_header_lies_about_length_in_gzip(tmp_path):
    # The header claims 1000 bytes, the stream holds 10: detected from the trailer.
    p = tmp_path / "x.gz"
    p.write_bytes(gzip.compress(bytes([0, 0, 8, 1]) + struct.pack(">I", 1000) + bytes(10), mtime=0))
    with pytest.raises(IdxFormatError):
        read_idx(p)


def test_is_a_value_error(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"")
    with pytest.raises(ValueError):
        read_idx(p)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "nope.gz")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_header_parser_never_crashes_unexpectedly(data):
    try:
        h = parse_idx_header(data)
    except IdxFormatError:
        return
    assert data[:2] == b"\0\0"
    assert h.offset == 4 + 4 * data[3]
    assert h.nbytes <= MAX_BYTES


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80))
def test_parse_bytes_either_parses_exactly_or_raises(data):
    try:
        arr = parse_idx_bytes(data)
    except IdxFormatError:
        return
    h = parse_idx_header(data)
    assert arr.shape == h.shape
    assert len(data) == h.offset + h.nbytes


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(DTYPES),
       st.lists(st.integers(0, 5), min_size=1, max_size=4))
def test_header_round_trip(dtype, shape):
    arr = np.zeros(shape, dtype)
    from mnistforge.io.idx import idx_header_bytes
    h = parse_idx_header(idx_header_bytes(arr.shape, arr.dtype))
    assert h.shape == tuple(shape)
    assert h.dtype.newbyteorder("=") == np.dtype(dtype)


# --- real files ------------------------------------------------------------------------

def test_real_mnist_test_set(mnist_reference):
    images = read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz")
    labels = read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10000,) and set(np.unique(labels)) == set(range(10))
    with gzip.open(mnist_reference / "t10k-images-idx3-ubyte.gz") as f:
        content = f.read()
    # The published sha256 of the decompressed content (shared/reference/README.md).
    assert hashlib.sha256(content).hexdigest() == \
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"
    assert content[16:] == images.tobytes()


def test_real_qmnist_idx2_int(qmnist_reference):
    arr = read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz")
    assert arr.shape == (60000, 8)
    assert arr.dtype == np.int32
    assert set(np.unique(arr[:, 1])) <= {0, 1, 2, 3, 4, 6, 7}


@pytest.mark.parametrize("backend", ["isal", "zlib"])
def test_gzip_backends_agree(tmp_path, monkeypatch, backend):
    # ISA-L is used for speed when installed; plain zlib is the fallback: same arrays, same errors.
    import zlib

    import mnistforge.io.compression as comp_mod
    if backend == "zlib":
        monkeypatch.setattr(comp_mod, "gz_zlib", zlib)
    else:
        pytest.importorskip("isal")
    arr = sample(np.uint8, (300, 28, 28))
    p = tmp_path / "a.gz"
    write_idx(p, arr)
    np.testing.assert_array_equal(read_idx(p), arr)
    data = p.read_bytes()
    p.write_bytes(data[:40] + bytes(200) + data[240:])
    with pytest.raises(IdxFormatError):
        read_idx(p)


def test_bz2_idx_whose_first_block_is_larger_than_the_header_prefix(tmp_path):
    """A bz2 block gives no output until all of it is read (up to ~900 kB): 200 random images
    compress to one 157 kB block, more than the 64 KiB prefix the header was read from."""
    import bz2

    from mnistforge.io.idx import parse_idx_bytes, read_idx, write_idx

    images = np.random.default_rng(0).integers(0, 256, (200, 28, 28), dtype=np.uint8)
    path = tmp_path / "images-idx3-ubyte.bz2"
    write_idx(path, images)
    assert path.stat().st_size > 1 << 16
    assert len(bz2.BZ2Decompressor().decompress(path.read_bytes()[:1 << 16])) == 0
    np.testing.assert_array_equal(read_idx(path), images)
    np.testing.assert_array_equal(parse_idx_bytes(path.read_bytes(), compression="bz2"), images)
