"""idx bullets of issue 17: ndim=255, a directory, a symlink loop, a FIFO, and a small gz that
inflates to gigabytes (bounded by the header and the documented ceiling MAX_BYTES)."""
from __future__ import annotations

import gzip
import os
import struct
import threading

import pytest

from mnistforge.errors import IdxFormatError
from mnistforge.io.idx import MAX_BYTES, read_idx, read_idx_header


def test_ndim_255_is_a_named_error(tmp_path):
    p = tmp_path / "x-idx3-ubyte"
    p.write_bytes(bytes([0, 0, 8, 255]) + b"\0\0\0\1" * 255 + b"\7")
    with pytest.raises(IdxFormatError, match="too many idx dims"):
        read_idx(p)


def test_a_directory_is_not_an_idx_file(tmp_path):
    d = tmp_path / "t10k-images-idx3-ubyte"
    d.mkdir()
    with pytest.raises(IdxFormatError, match="a directory"):
        read_idx(d)


def test_a_symlink_loop_is_a_named_error(tmp_path):
    a, b = tmp_path / "a-idx1-ubyte", tmp_path / "b-idx1-ubyte"
    os.symlink(b, a)
    os.symlink(a, b)
    with pytest.raises(IdxFormatError, match="symlink loop"):
        read_idx(a)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    f = tmp_path / "l-idx1-ubyte.gz"
    os.mkfifo(f)
    done = {}

    def attempt():
        try:
            read_idx(f)
        except IdxFormatError as e:
            done["error"] = e

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():   # unblock the reader so the test process can end, then fail
        with open(f, "wb"):
            pass
        pytest.fail("read_idx blocked on a FIFO")
    assert "FIFO" in str(done["error"])
    with pytest.raises(IdxFormatError, match="FIFO"):
        read_idx_header(f)


def test_a_small_gz_that_claims_and_holds_gigabytes_is_refused(tmp_path):
    # 2.3 GB of zeros compress to ~2.3 MB; the header honestly says 2.3 GB: refused by the
    # ceiling before anything is inflated
    n = 2_300_000_000
    p = tmp_path / "bomb-idx1-ubyte.gz"
    with gzip.open(p, "wb", compresslevel=1) as f:
        f.write(bytes([0, 0, 8, 1]) + struct.pack(">I", n))
        chunk = bytes(1 << 24)
        for _ in range(3):          # only the start is needed: the header decides
            f.write(chunk)
    assert p.stat().st_size < 1 << 20
    assert n > MAX_BYTES
    with pytest.raises(IdxFormatError, match="absurd idx size"):
        read_idx(p)


def test_a_lying_header_is_refused_before_inflating(tmp_path):
    p = tmp_path / "lie-idx1-ubyte.gz"
    p.write_bytes(gzip.compress(bytes([0, 0, 8, 1]) + struct.pack(">I", 10) + bytes(10)))
    assert read_idx(p).shape == (10,)
    p.write_bytes(gzip.compress(bytes([0, 0, 8, 1]) + struct.pack(">I", 1000) + bytes(10)))
    with pytest.raises(IdxFormatError):
        read_idx(p)
