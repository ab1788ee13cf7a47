"""The gate's fast content hash (issue 26): the registry's ``content_xxh3_128`` identifies a
re-compressed or raw copy on a first load; damage is still refused, a record whose file changed
is hashed again, and ``check=True`` still hashes with sha256.

Real files only: MNIST's test set (``../shared/reference/mnist``, a mirror's re-compressed copy)
and Debian's Fashion-MNIST (``/usr/share/datasets/fashion-mnist``).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import mnistforge
from mnistforge.cache.seen import record_path
from mnistforge.errors import DataMismatchError
from mnistforge.gate import POLICY
from mnistforge.io.hashing import xxh3_parts
from mnistforge.io.idx import idx_content_sha256, idx_content_xxh3, read_idx, write_idx
from mnistforge.registry import get_file, list_files

FASHION = Path("/usr/share/datasets/fashion-mnist")
IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
RAW_IMAGES = "t10k-images-idx3-ubyte"


@pytest.fixture(scope="module")
def mnist(mnist_reference):
    return np.asarray(read_idx(mnist_reference / IMAGES)), np.asarray(read_idx(mnist_reference / LABELS))


def facts(path: Path, cache: Path) -> dict:
    return json.loads(record_path(path, cache).read_text())["facts"]


def recompressed(tmp_path: Path, src: Path, images: np.ndarray | None = None, *, level: int = 1,
                 name: str = "copy") -> Path:
    """A folder holding ``src``'s MNIST test files re-compressed (other gz bytes and size; the
    images replaced by ``images`` when given)."""
    d = tmp_path / name
    d.mkdir()
    for fname in (IMAGES, LABELS):
        content = gzip.decompress((src / fname).read_bytes())
        if images is not None and fname == IMAGES:
            content = content[:16] + np.ascontiguousarray(images).tobytes()
        (d / fname).write_bytes(gzip.compress(content, compresslevel=level, mtime=0))
    return d


# --------------------------------------------------------------------------- the registry


def test_fast_hashes_are_well_formed_and_never_alone():
    have = [f for f in list_files() if f.content_xxh3_128]
    assert len(have) >= 7       # MNIST test + train labels, Fashion-MNIST's four files, QMNIST's
    for f in have:
        assert len(f.content_xxh3_128) == 32 and int(f.content_xxh3_128, 16) >= 0, f.id
        assert f.content_sha256, f"{f.id}: a fast hash without the sha256 that check=True uses"


@pytest.mark.parametrize("group,folder", [("mnist", None), ("fashion-mnist", FASHION),
                                          ("qmnist", None)])
def test_fast_hashes_are_the_real_files_content(group, folder, reference_dir):
    folder = folder or reference_dir / group
    checked = 0
    for f in list_files():
        p = folder / f.name
        if f.group != group or not f.content_xxh3_128 or not p.is_file():
            continue
        content = (gzip.decompress if f.name.endswith(".gz") else lzma.decompress)(p.read_bytes())
        assert hashlib.sha256(content).hexdigest() == f.content_sha256, f.id
        assert xxh3_parts(content) == f.content_xxh3_128, f.id
        checked += 1
    if not checked:
        pytest.skip(f"no {group} files at {folder}")


def test_the_policy_puts_the_fast_hash_first_on_content_routes():
    for route in ("idx-folder", "npz", "csv", "torchvision"):
        assert POLICY[route].hashes[0] == "content xxh3_128", route
        assert "sha256" in POLICY[route].rehash, route


def test_idx_content_xxh3_is_the_hash_of_the_idx_file_content(mnist_reference, mnist):
    content = gzip.decompress((mnist_reference / IMAGES).read_bytes())
    assert idx_content_xxh3(mnist[0]) == xxh3_parts(content) == get_file(f"mnist/{IMAGES}").content_xxh3_128
    assert idx_content_sha256(mnist[0]) == get_file(f"mnist/{IMAGES}").content_sha256


# --------------------------------------------------------------------------- folders


def test_a_recompressed_copy_is_identified_by_the_fast_hash(tmp_path, cache, mnist_reference, mnist):
    d = recompressed(tmp_path, mnist_reference)
    assert (d / IMAGES).stat().st_size != get_file(f"mnist/{IMAGES}").size
    ds = mnistforge.load("mnist", "test", root=d)
    np.testing.assert_array_equal(ds.images, mnist[0])
    np.testing.assert_array_equal(ds.labels, mnist[1])
    assert ds.status == {IMAGES: "content", LABELS: "content"}
    for fname in (IMAGES, LABELS):
        got = facts(d / fname, cache)
        assert got["content_xxh3_128"] == get_file(f"mnist/{fname}").content_xxh3_128
        assert "content_sha256" not in got     # sha256 of the content was not computed


def test_the_shared_copy_of_published_size_is_decided_by_the_fast_hash(tmp_path, cache,
                                                                         mnist_reference, mnist):
    # the mirror's file has the published size but other bytes: the bytes' sha256 is tried
    # (the published file would be "exact"), then the content's fast hash, from the array
    d = tmp_path / "shared"
    d.mkdir()
    for fname in (IMAGES, LABELS):
        shutil.copy(mnist_reference / fname, d / fname)
    ds = mnistforge.load("mnist", "test", root=d)
    assert ds.status[IMAGES] == "content"
    got = facts(d / IMAGES, cache)
    assert got["content_xxh3_128"] == get_file(f"mnist/{IMAGES}").content_xxh3_128
    assert "content_sha256" not in got


def test_a_raw_copy_is_identified_by_the_fast_hash(tmp_path, cache, mnist_reference, mnist):
    d = tmp_path / "raw"
    d.mkdir()
    (d / RAW_IMAGES).write_bytes(gzip.decompress((mnist_reference / IMAGES).read_bytes()))
    shutil.copy(mnist_reference / LABELS, d / LABELS)
    ds = mnistforge.load("mnist", "test", root=d)
    assert ds.status[IMAGES] == "raw"    # keyed by the official name
    np.testing.assert_array_equal(ds.images, mnist[0])
    got = facts(d / RAW_IMAGES, cache)
    assert got["content_xxh3_128"] == get_file(f"mnist/{IMAGES}").content_xxh3_128
    assert "sha256" not in got and "content_sha256" not in got


@pytest.mark.parametrize("where", [(0, 0, 0), (9999, 27, 27), (5000, 14, 3)])
def test_a_recompressed_copy_with_one_changed_image_byte_is_refused(where, tmp_path, cache,
                                                                    mnist_reference, mnist):
    x = mnist[0].copy()
    x[where] ^= 0x01
    d = recompressed(tmp_path, mnist_reference, x)
    with pytest.raises(DataMismatchError, match="not mnist's") as e:
        mnistforge.load("mnist", "test", root=d)
    assert str(d / IMAGES) in str(e.value)
    with pytest.raises(DataMismatchError):      # and again: a refusal is not recorded as checked
        mnistforge.load("mnist", "test", root=d)
    ds = mnistforge.load("mnist", "test", root=d, trust_files=True)     # the explicit opt-out
    np.testing.assert_array_equal(ds.images, x)


def test_a_raw_copy_with_one_changed_byte_is_refused(tmp_path, cache, mnist_reference, mnist):
    d = tmp_path / "raw"
    d.mkdir()
    x = mnist[0].copy()
    x[42, 10, 10] ^= 0x80
    write_idx(d / RAW_IMAGES, x)
    shutil.copy(mnist_reference / LABELS, d / LABELS)
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)


def test_a_record_whose_file_changed_is_hashed_again(tmp_path, cache, mnist_reference, mnist):
    d = recompressed(tmp_path, mnist_reference)
    p = d / IMAGES
    mnistforge.load("mnist", "test", root=d)
    rec = record_path(p, cache)
    first = json.loads(rec.read_text())
    # the same bytes written again (a copy over it): the size and mtime kept, ctime changes
    st = p.stat()
    p.write_bytes(p.read_bytes())
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    assert_loads = mnistforge.load("mnist", "test", root=d)
    np.testing.assert_array_equal(assert_loads.images, mnist[0])
    again = json.loads(rec.read_text())
    assert again["identity"] != first["identity"]          # hashed again, recorded afresh
    assert again["facts"]["content_xxh3_128"] == first["facts"]["content_xxh3_128"]
    # and one byte changed in a re-compression of the same size, mtime restored: refused
    x = mnist[0].copy()
    x[777, 20, 20] ^= 0x04
    other = gzip.compress(gzip.decompress(p.read_bytes())[:16] + x.tobytes(), compresslevel=1, mtime=0)
    p.write_bytes(other)     # a new ctime (and perhaps size): the record no longer applies
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d)


def test_a_record_that_lies_about_the_fast_hash_is_not_believed_by_check(tmp_path, cache,
                                                                          mnist_reference, mnist):
    x = mnist[0].copy()
    x[1, 1, 1] ^= 0x01
    d = recompressed(tmp_path, mnist_reference, x)
    with pytest.raises(DataMismatchError):
        mnistforge.load("mnist", "test", root=d)
    # a record forged with the registry's fast hash for the damaged file, its identity current
    from mnistforge.cache.seen import remember

    p = d / IMAGES
    remember(p, {"content_xxh3_128": get_file(f"mnist/{IMAGES}").content_xxh3_128},
             before=p.stat(), cache=cache)
    with pytest.raises(DataMismatchError, match="not mnist's"):
        mnistforge.load("mnist", "test", root=d, check=True)    # re-hashed, by sha256
    got = facts(p, cache)
    assert "content_sha256" in got and got["content_sha256"] != get_file(f"mnist/{IMAGES}").content_sha256


def test_check_hashes_with_sha256(tmp_path, cache, mnist_reference, mnist):
    d = recompressed(tmp_path, mnist_reference)
    ds = mnistforge.load("mnist", "test", root=d, check=True)
    assert ds.status == {IMAGES: "content", LABELS: "content"}
    for fname in (IMAGES, LABELS):
        assert facts(d / fname, cache)["content_sha256"] == get_file(f"mnist/{fname}").content_sha256


def test_a_record_of_an_older_version_with_sha256_only_still_decides(tmp_path, cache,
                                                                       mnist_reference, mnist):
    d = recompressed(tmp_path, mnist_reference)
    from mnistforge.cache.seen import remember

    for fname in (IMAGES, LABELS):      # what the gate recorded before the fast hash existed
        p = d / fname
        remember(p, {"content_sha256": get_file(f"mnist/{fname}").content_sha256},
                 before=p.stat(), cache=cache)
    ds = mnistforge.load("mnist", "test", root=d)
    assert ds.status == {IMAGES: "content", LABELS: "content"}
    np.testing.assert_array_equal(ds.images, mnist[0])


def test_fashion_folder_is_identified_by_the_fast_hash(tmp_path, cache):
    if not (FASHION / IMAGES).is_file():
        pytest.skip(f"Debian's Fashion-MNIST not at {FASHION}")
    d = tmp_path / "fashion"
    d.mkdir()
    for fname in (IMAGES, LABELS):
        shutil.copy(FASHION / fname, d / fname)
    with pytest.raises(DataMismatchError, match="fashion-mnist"):
        mnistforge.load("mnist", "test", root=d)     # named by the fast hash's registry match
    ds = mnistforge.load("fashion-mnist", "test", root=d)
    assert set(ds.status.values()) == {"content"}
    assert "content_xxh3_128" in facts(d / IMAGES, cache)


# --------------------------------------------------------------------------- copies (arrays)


def test_a_copy_in_one_file_is_identified_by_the_fast_hash(tmp_path, cache, mnist):
    p = tmp_path / "mnist.npz"
    np.savez(p, x_test=mnist[0], y_test=mnist[1])
    ds = mnistforge.load("mnist", "test", root=p)
    np.testing.assert_array_equal(ds.images, mnist[0])
    rec = facts(p, cache)
    content = next(v for k, v in rec.items() if k.startswith("content:"))
    assert content["images_xxh3"]["0"] == get_file(f"mnist/{IMAGES}").content_xxh3_128
    assert content["images"] == {}        # no sha256 of the images on a first load
    x = mnist[0].copy()
    x[3, 3, 3] ^= 0x01
    q = tmp_path / "changed.npz"
    np.savez(q, x_test=x, y_test=mnist[1])
    with pytest.raises(DataMismatchError):
        mnistforge.load("mnist", "test", root=q)


# --------------------------------------------------------------------------- Hugging Face exports


@pytest.fixture(scope="module")
def export(tmp_path_factory, mnist_reference):
    pytest.importorskip("datasets")
    from mnistforge import hub

    out = tmp_path_factory.mktemp("hf") / "mnist"
    hub.export_hf(out, hub.configs_from_targets([f"{mnist_reference}:test"]), pixels="bytes")
    return out


@pytest.fixture
def repo(export, tmp_path):
    out = tmp_path / "hf"
    shutil.copytree(export, out)
    return out


def _card_edit(repo: Path, old: str, new: str) -> None:
    card = repo / "README.md"
    text = card.read_text()
    assert old in text
    card.write_text(text.replace(old, new))


def test_an_export_records_each_shards_fast_hash(repo):
    from mnistforge.io.hf.repo import recorded_shard_fast_hashes, recorded_shard_hashes

    fast, sha = recorded_shard_fast_hashes(repo), recorded_shard_hashes(repo)
    assert fast and set(fast) == set(sha)
    for rel, digest in fast.items():
        assert digest == xxh3_parts((repo / rel).read_bytes())
        assert sha[rel] == hashlib.sha256((repo / rel).read_bytes()).hexdigest()


def test_a_first_load_of_an_export_checks_the_fast_hash_and_check_the_sha256(repo, cache, mnist):
    from mnistforge.errors import IntegrityError
    from mnistforge.io.hf.repo import recorded_shard_fast_hashes

    rel, digest = next(iter(recorded_shard_fast_hashes(repo).items()))
    _card_edit(repo, f"`{rel}`: `{digest}`", f"`{rel}`: `{'0' * 32}`")   # the fast hash lies
    with pytest.raises(IntegrityError, match="xxh3_128 0{32}"):
        mnistforge.load("mnist", "test", root=repo)                 # so the fast hash was checked
    ds = mnistforge.load("mnist", "test", root=repo, check=True)    # sha256: the shard is intact
    np.testing.assert_array_equal(ds.images, mnist[0])


def test_a_changed_shard_is_refused_by_the_fast_hash(repo, cache):
    from mnistforge.errors import IntegrityError

    p = sorted((repo / "data" / "mnist").glob("test-*.parquet"))[0]
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x01
    p.write_bytes(bytes(b))
    with pytest.raises(IntegrityError, match="changed since the export") as e:
        mnistforge.load("mnist", "test", root=repo)
    assert "xxh3_128" in str(e.value) and "sha256" in str(e.value)


def test_an_export_without_fast_hashes_is_checked_by_sha256(repo, cache, mnist):
    from mnistforge.errors import IntegrityError

    card = repo / "README.md"
    text = card.read_text()
    head, _, tail = text.partition("Shards (xxh3_128):")
    card.write_text(head + tail.split("\n\n", 2)[-1])        # as an older version wrote it
    assert "xxh3_128" not in card.read_text()
    ds = mnistforge.load("mnist", "test", root=repo)
    np.testing.assert_array_equal(ds.images, mnist[0])
    p = sorted((repo / "data" / "mnist").glob("test-*.parquet"))[0]
    b = bytearray(p.read_bytes())
    b[len(b) // 3] ^= 0x01
    p.write_bytes(bytes(b))
    with pytest.raises(IntegrityError, match="changed since the export") as e:
        mnistforge.load("mnist", "test", root=repo)
    assert "xxh3_128" not in str(e.value) and "sha256" in str(e.value)


