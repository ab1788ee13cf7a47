"""Raw copies in the cache: made once from a verified file, trusted by loads, re-hashed by verify."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.cache.verify import recheck_file, read_marker
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
    assert recheck_file(raw, remote).status == "raw"


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
    assert recheck_file(raw, get_file("fashion-mnist/t10k-images-idx3-ubyte.gz")).status == "mismatch"


# --- the one-read first load (first_raw_copy) against the two-step route ---------------------

def _idx_bytes(n=50):
    import tempfile

    from mnistforge.io.idx import write_idx

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x-idx3-ubyte"
        write_idx(p, (np.arange(n * 28 * 28) % 251).astype(np.uint8).reshape(n, 28, 28))
        return p.read_bytes()


def _remote(packed: bytes, content: bytes, name="x-idx3-ubyte.gz", **pins):
    import hashlib

    from mnistforge.registry import RemoteFile

    known = {"sha256": hashlib.sha256(packed).hexdigest(), "md5": hashlib.md5(packed).hexdigest(),
             "size": len(packed), "content_sha256": hashlib.sha256(content).hexdigest(),
             "content_md5": hashlib.md5(content).hexdigest()}
    kw = {k: (known[k] if v is True else v) for k, v in pins.items()}
    return RemoteFile(id=f"test/{name}", group="test", name=name, content_size=len(content), **kw)


def _sidecars(folder: Path) -> dict:
    import json

    out = {}
    for p in sorted(folder.iterdir()):
        if p.name.endswith(".sha256"):
            rec = json.loads(p.read_text())
            rec.pop("mtime_ns")
            out[p.name] = rec
        elif not p.name.endswith(".gz"):
            out[p.name] = p.read_bytes()
    return out


def _two_step(remote, packed_path: Path, raw: Path):
    from mnistforge.cache.download import FetchResult
    from mnistforge.cache.raw import make_raw_copy
    from mnistforge.cache.verify import verify_file, write_marker

    v = verify_file(packed_path, remote)
    write_marker(packed_path, v)
    make_raw_copy(FetchResult(remote, packed_path, v.status, v.sha256), remote, raw)
    return v


PUBLISHED = __import__("gzip").compress(_idx_bytes(), compresslevel=9, mtime=0)
RECOMPRESSED = __import__("gzip").compress(_idx_bytes(), compresslevel=1, mtime=0)
CASES = {
    "exact": (PUBLISHED, dict(sha256=True, size=True, content_sha256=True)),
    "content": (RECOMPRESSED, dict(sha256=True, size=True, content_sha256=True)),
    "content, sha256 and md5 pinned": (RECOMPRESSED, dict(sha256=True, md5=True, size=True,
                                                          content_sha256=True, content_md5=True)),
    "md5 only": (PUBLISHED, dict(md5=True)),
    "content md5 only": (RECOMPRESSED, dict(sha256=True, size=True, content_md5=True)),
    "exact, content not pinned": (PUBLISHED, dict(sha256=True, size=True)),
    "nothing pinned": (PUBLISHED, dict()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_first_raw_copy_records_what_the_two_step_route_records(tmp_path, case):
    from mnistforge.cache.raw import first_raw_copy

    data, pins = CASES[case]
    remote = _remote(PUBLISHED, _idx_bytes(), **pins)
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        d.mkdir()
        (d / remote.name).write_bytes(data)
    v1 = first_raw_copy(remote, one / remote.name, one / remote.raw_name)
    v2 = _two_step(remote, two / remote.name, two / remote.raw_name)
    assert v1 is not None, "the one-read route settled nothing"
    assert v1.status == v2.status
    recorded = _sidecars(two)
    if recorded[remote.raw_name + ".sha256"]["status"] == "derived":
        # the content md5 of a copy nothing pins is not worth a hash on the first load
        recorded[remote.raw_name + ".sha256"]["md5"] = None
    assert _sidecars(one) == recorded
    assert (one / remote.raw_name).read_bytes() == _idx_bytes()


def test_first_raw_copy_leaves_a_mismatch_to_the_two_step_route_and_writes_nothing(tmp_path):
    from mnistforge.cache.raw import first_raw_copy
    from mnistforge.errors import HashMismatchError

    other = __import__("gzip").compress(_idx_bytes(40), mtime=0)
    remote = _remote(PUBLISHED, _idx_bytes(), sha256=True, size=True, content_sha256=True)
    (tmp_path / remote.name).write_bytes(other)
    assert first_raw_copy(remote, tmp_path / remote.name, tmp_path / remote.raw_name) is None
    assert [p.name for p in tmp_path.iterdir()] == [remote.name]
    with pytest.raises(HashMismatchError):
        _two_step(remote, tmp_path / remote.name, tmp_path / remote.raw_name)


@pytest.mark.parametrize("damage", ["truncated", "garbage after the stream", "longer content"])
def test_first_raw_copy_never_renames_a_damaged_stream_into_place(tmp_path, damage):
    import gzip

    from mnistforge.cache.raw import first_raw_copy

    remote = _remote(PUBLISHED, _idx_bytes(), content_sha256=True, sha256=True, size=True)
    data = {"truncated": RECOMPRESSED[:-100], "garbage after the stream": RECOMPRESSED + b"junk",
            "longer content": gzip.compress(_idx_bytes() + b"x" * 5000, mtime=0)}[damage]
    (tmp_path / remote.name).write_bytes(data)
    assert first_raw_copy(remote, tmp_path / remote.name, tmp_path / remote.raw_name) is None
    assert [p.name for p in tmp_path.iterdir()] == [remote.name]


def test_first_raw_copy_reads_padded_multi_member_gzip_like_the_reader(tmp_path):
    import gzip

    from mnistforge.cache.raw import first_raw_copy

    content = _idx_bytes()
    data = gzip.compress(content[:7000], mtime=0) + b"\0" * 9 + gzip.compress(content[7000:], mtime=0)
    remote = _remote(PUBLISHED, content, sha256=True, size=True, content_sha256=True)
    (tmp_path / remote.name).write_bytes(data)
    v = first_raw_copy(remote, tmp_path / remote.name, tmp_path / remote.raw_name)
    assert v is not None and v.status == "content"
    assert (tmp_path / remote.raw_name).read_bytes() == content


def test_first_raw_copy_is_not_taken_once_the_sidecar_holds_unless_rehashing(tmp_path):
    from mnistforge.cache.raw import first_raw_copy

    remote = _remote(PUBLISHED, _idx_bytes(), sha256=True, size=True, content_sha256=True)
    packed, raw = tmp_path / remote.name, tmp_path / remote.raw_name
    packed.write_bytes(PUBLISHED)
    assert first_raw_copy(remote, packed, raw).status == "exact"
    raw.unlink()
    assert first_raw_copy(remote, packed, raw) is None  # verified before: nothing to hash
    assert first_raw_copy(remote, packed, raw, rehash=True).status == "exact"
    assert raw.read_bytes() == _idx_bytes()


@pytest.mark.parametrize("comp", ["xz", "bz2"])
def test_first_raw_copy_reads_xz_and_bz2_like_the_reader(tmp_path, comp):
    import bz2
    import lzma

    from mnistforge.cache.raw import first_raw_copy

    content = _idx_bytes()
    pack = {"xz": lzma.compress, "bz2": bz2.compress}[comp]
    remote = _remote(pack(content + b"x"), content, name=f"x-idx3-ubyte.{comp}", sha256=True,
                     size=True, content_sha256=True)
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        d.mkdir()
        (d / remote.name).write_bytes(pack(content[:9000]) + pack(content[9000:]))  # two streams
    v1 = first_raw_copy(remote, one / remote.name, one / remote.raw_name)
    v2 = _two_step(remote, two / remote.name, two / remote.raw_name)
    assert v1 is not None and v1.status == v2.status == "content"
    assert _sidecars(one) == _sidecars(two)
    assert (one / remote.raw_name).read_bytes() == content
