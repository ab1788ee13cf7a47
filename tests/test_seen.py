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


# --- one look per load (one_look): each identity taken once, misses end the run of hits ----

def _aged(tmp_path, monkeypatch, name="a.bin"):
    """A file whose identity the memory keeps at once (RACY_NS 0), and an empty memory."""
    from mnistforge.cache import seen

    monkeypatch.setattr(seen, "RACY_NS", 0)
    monkeypatch.setattr(seen, "_MEMO", {})
    f = tmp_path / name
    f.write_bytes(b"x" * 10)
    return seen, os.fspath(f)


def test_one_look_takes_each_identity_once(tmp_path, monkeypatch):
    seen, f = _aged(tmp_path, monkeypatch)
    seen.learn("a", 1, [(f, seen.stamp(f))])
    seen.learn("b", 2, [(f, seen.stamp(f))])
    calls = []
    real = seen.stamp
    monkeypatch.setattr(seen, "stamp", lambda p: calls.append(p) or real(p))
    with seen.one_look():
        assert (seen.known("a"), seen.known("b")) == (1, 2)
        assert seen.looked() == ((f, real(f)),)
    assert calls == [f]                      # one stat for both entries
    assert seen.known("a") == 1 and calls == [f, f]   # outside a look: every time


def test_a_miss_forgets_what_the_look_took_and_ends_its_run_of_hits(tmp_path, monkeypatch):
    seen, f = _aged(tmp_path, monkeypatch)
    seen.learn("a", 1, [(f, seen.stamp(f))])
    with seen.one_look():
        assert seen.known("a") == 1 and seen.looked()
        assert seen.known("absent") is None
        assert seen.looked() is None         # what follows a miss may have written files
    with seen.one_look():
        assert seen.known("absent", miss_counts=False) is None
        assert seen.known("a") == 1 and seen.looked() == ((f, seen.stamp(f)),)
        seen.not_from_memos()                # e.g. a folder listed
        assert seen.looked() is None


def test_a_change_inside_a_look_is_seen_by_the_next_look(tmp_path, monkeypatch):
    seen, f = _aged(tmp_path, monkeypatch)
    seen.learn("a", 1, [(f, seen.stamp(f))])
    with seen.one_look():
        assert seen.known("a") == 1
    with open(f, "ab") as h:
        h.write(b"y")
    with seen.one_look():
        assert seen.known("a") is None


def test_a_look_inside_a_look_counts_as_a_miss_of_the_outer_one(tmp_path, monkeypatch):
    seen, f = _aged(tmp_path, monkeypatch)
    seen.learn("a", 1, [(f, seen.stamp(f))])
    with seen.one_look():
        assert seen.known("a") == 1
        with seen.one_look():                # a load that loads: it may write files
            assert seen.known("a") == 1 and seen.looked()
        assert seen.looked() is None


def test_the_cache_key_is_asked_once_per_look(monkeypatch, tmp_path):
    from mnistforge.cache import seen

    asked = []
    monkeypatch.setattr(seen, "cache_key", lambda c: asked.append(c) or ("k", c))
    with seen.one_look():
        assert seen.memo_cache_key(None) == seen.memo_cache_key(None) == ("k", None)
    assert asked == [None]
    monkeypatch.setenv("MNISTFORGE_HOME", str(tmp_path))   # a new look asks again
    with seen.one_look():
        seen.memo_cache_key(None)
    assert asked == [None, None]
