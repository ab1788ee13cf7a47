"""Item 3 of issue 17: bit rot in the cache (a byte changed, size and mtime kept) is caught by
`verify` (it re-hashes, never trusting a sidecar) and by `load(..., check=True)`."""
from __future__ import annotations

import os
import shutil

import pytest
from faults_helpers import cli

import mnistforge
from mnistforge.checks import verify
from mnistforge.settings import cache_home


@pytest.fixture
def cached_mnist_test(mnist_reference, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("MNISTFORGE_HOME", str(home))
    (home / "mnist").mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / name, home / "mnist" / name)
    first = mnistforge.load("mnist", "test", download=False)   # sidecars and raw copies made
    assert (home / "mnist" / "t10k-labels-idx1-ubyte").is_file()
    return home, first.labels.copy()


def _rot(path, offset=100):
    """Change one byte, keeping the size and the modification time (what bit rot does)."""
    st = os.stat(path)
    b = bytearray(path.read_bytes())
    b[offset] = (b[offset] + 1) % 10
    path.write_bytes(bytes(b))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_verify_rehashes_a_rotted_raw_copy(cached_mnist_test):
    home, _ = cached_mnist_test
    assert verify("mnist:test", download=False, near=False).status == "pass"
    _rot(home / "mnist" / "t10k-labels-idx1-ubyte")
    rep = verify("mnist:test", download=False, near=False)
    assert rep["hashes.cache"].status == "fail"
    assert "t10k-labels-idx1-ubyte" in rep["hashes.cache"].message
    r = cli("verify", "mnist:test", "--no-download")
    assert r.returncode == 1, r.stdout + r.stderr


def test_verify_rehashes_a_rotted_download(cached_mnist_test):
    home, _ = cached_mnist_test
    p = home / "mnist" / "t10k-images-idx3-ubyte.gz"
    os.chmod(p, 0o644)
    _rot(p, offset=5000)
    rep = verify("mnist:test", download=False, near=False)
    assert rep["hashes.cache"].status == "fail"


def test_load_check_rehashes_and_rebuilds_a_rotted_raw_copy(cached_mnist_test):
    home, labels = cached_mnist_test
    _rot(home / "mnist" / "t10k-labels-idx1-ubyte")
    # a plain load trusts the sidecar (documented: fast path), check=True does not
    assert (mnistforge.load("mnist", "test", download=False).labels != labels).sum() == 1
    again = mnistforge.load("mnist", "test", download=False, check=True)
    assert (again.labels == labels).all()
    assert (mnistforge.load("mnist", "test", download=False).labels == labels).all()
    assert cache_home() == home


def test_a_read_only_cache_still_loads_and_says_why(mnist_reference, tmp_path, monkeypatch,
                                                     caplog):
    # issue 17: a read-only or full cache advised "delete it and fetch it again"
    import errno

    from mnistforge.cache import raw as raw_mod

    home = tmp_path / "home"
    monkeypatch.setenv("MNISTFORGE_HOME", str(home))
    (home / "mnist").mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(mnist_reference / name, home / "mnist" / name)

    def refuse(path, mode="wb"):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(raw_mod, "atomic_file", refuse)
    ds = mnistforge.load("mnist", "test", download=False)
    assert len(ds) == 10000
    assert not (home / "mnist" / "t10k-labels-idx1-ubyte").exists()
    text = caplog.text
    assert "MNISTFORGE_KEEP_RAW=0" in text and "delete it" not in text
