"""Raw copies in the cache: made once from a verified file, trusted by loads, re-hashed by verify."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.cache.verify import check_file, read_marker
from mnistforge.io.idx import read_idx
from mnistforge.registry import get_file

FASHION = Path("/usr/share/datasets/fashion-mnist")
NAMES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


@pytest.fixture
def cache(tmp_path):
    if not all((FASHION / n).is_file() for n in NAMES):
        pytest.skip("Debian's dataset-fashion-mnist is not installed (/usr/share/datasets/fashion-mnist)")
    group = tmp_path / "cache" / "fashion-mnist"
    group.mkdir(parents=True)
    for n in NAMES:
        shutil.copy(FASHION / n, group / n)
    return tmp_path / "cache"


def test_first_load_makes_a_raw_copy_with_the_pinned_content(cache):
    ds = mnistforge.load("fashion-mnist", "test", cache=cache, download=False)
    np.testing.assert_array_equal(ds.images, read_idx(FASHION / NAMES[0]))
    raw = cache / "fashion-mnist" / "t10k-images-idx3-ubyte"
    remote = get_file("fashion-mnist/t10k-images-idx3-ubyte.gz")
    assert read_marker(raw)["status"] == "raw"
    assert read_marker(raw)["sha256"] == remote.content_sha256
    # verify re-hashes: the copy really has the pinned content
    assert check_file(raw, remote).status == "raw"


def test_repeat_loads_write_nothing(cache):
    mnistforge.load("fashion-mnist", "test", cache=cache, download=False)
    before = {p.name: p.stat().st_mtime_ns for p in (cache / "fashion-mnist").iterdir()}
    for _ in range(3):
        mnistforge.load("fashion-mnist", "test", cache=cache, download=False)
    after = {p.name: p.stat().st_mtime_ns for p in (cache / "fashion-mnist").iterdir()}
    assert after == before


def test_bit_rot_in_a_raw_copy_is_found_by_verify(cache):
    mnistforge.load("fashion-mnist", "test", cache=cache, download=False)
    raw = cache / "fashion-mnist" / "t10k-images-idx3-ubyte"
    st = raw.stat()
    data = bytearray(raw.read_bytes())
    data[5000] ^= 0xFF
    raw.write_bytes(bytes(data))
    import os
    os.utime(raw, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: the sidecar still "holds"
    assert check_file(raw, get_file("fashion-mnist/t10k-images-idx3-ubyte.gz")).status == "mismatch"
