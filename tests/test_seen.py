"""Records of files hashed once (cache/seen.py): trusted only while the file is the same file."""
from __future__ import annotations

import os

from mnistforge.cache.seen import forget, recall, record_path, remember


def test_a_record_holds_while_the_file_is_unchanged(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 100)
    assert remember(f, {"sha256": "s"}, before=os.stat(f), cache=tmp_path / "c")
    assert recall(f, cache=tmp_path / "c") == {"sha256": "s"}
    assert record_path(f, tmp_path / "c").parent.name == "seen"


def test_damage_with_size_and_mtime_kept_voids_the_record(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 100)
    remember(f, {"sha256": "s"}, before=os.stat(f), cache=tmp_path / "c")
    st = os.stat(f)
    with open(f, "r+b") as h:  # one byte changed in place, size and mtime restored
        h.write(b"y")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(f).st_size == st.st_size and os.stat(f).st_mtime_ns == st.st_mtime_ns
    assert recall(f, cache=tmp_path / "c") is None


def test_a_replaced_file_is_not_the_recorded_one(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 100)
    remember(f, {"v": 1}, before=os.stat(f), cache=tmp_path / "c")
    g = tmp_path / "b.bin"
    g.write_bytes(b"z" * 100)
    os.replace(g, f)
    assert recall(f, cache=tmp_path / "c") is None


def test_a_file_changed_while_read_is_not_recorded(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 100)
    before = os.stat(f)
    f.write_bytes(b"x" * 101)
    assert not remember(f, {"v": 1}, before=before, cache=tmp_path / "c")
    assert recall(f, cache=tmp_path / "c") is None


def test_an_unwritable_or_damaged_cache_only_means_hashing_again(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"x")
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    assert not remember(f, {"v": 1}, before=os.stat(f), cache=blocker)
    assert recall(f, cache=blocker) is None
    remember(f, {"v": 1}, before=os.stat(f), cache=tmp_path / "c")
    record_path(f, tmp_path / "c").write_text("[not a record")
    assert recall(f, cache=tmp_path / "c") is None
    forget(f, cache=tmp_path / "c")
    assert not record_path(f, tmp_path / "c").exists()
