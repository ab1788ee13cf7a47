"""Joining by_write without .cls to by_class / by_field by exact image content."""
from __future__ import annotations

import numpy as np
import pytest

from mnistforge.errors import JoinError
from mnistforge.sd19 import open_sd19
from mnistforge.sd19.join import join_classes

from sd19_helpers import write_tree


@pytest.mark.parametrize("other", ["by_class", "by_field"])
@pytest.mark.parametrize("packaging", ["zip", "dir"])
def test_join_recovers_every_class(tmp_path, other, packaging):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging=packaging, cls=False,
                                   hierarchies=("by_write", other))
    src = open_sd19(root, strict=True)
    assert not src.cls_present
    assert src.index["ascii"].tolist() == [c["ascii"] for c in chars]
    rep = src.join_report
    assert rep.ok and rep.other == other and rep.joined == len(chars) == rep.rows
    # the planted duplicate pair (same class) joined too, not reported
    assert (src.index["duplicate_of"] >= 0).sum() == 1


def test_altered_image_is_reported_not_dropped(tmp_path):
    altered = 40
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="zip", cls=False,
                                   hierarchies=("by_write", "by_class"), alter_row=altered)
    src = open_sd19(root)
    assert len(src) == len(chars)                          # still indexed
    assert src.index["ascii"][altered] == 0                # but without a class
    others = np.delete(np.arange(len(chars)), altered)
    assert (src.index["ascii"][others] == [chars[i]["ascii"] for i in others]).all()
    rep = src.join_report
    assert not rep.ok
    assert rep.unjoined_rows.tolist() == [altered]
    assert len(rep.unmatched_other) == 1 and rep.unmatched_other[0].startswith("by_class/")
    assert "1 unjoined" in rep.summary()
    # strict callers get an error naming the problem (also when the index comes from the cache)
    with pytest.raises(JoinError, match="first unjoined rows \\[40\\]"):
        open_sd19(root, strict=True)
    with pytest.raises(JoinError, match="unjoined"):
        open_sd19(root, strict=True, reindex=True)


def test_no_class_source_at_all_is_reported(tmp_path):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="dir", cls=False,
                                   hierarchies=("by_write",))
    src = open_sd19(root)
    assert (src.index["ascii"] == 0).all()
    assert len(src.join_report.unjoined_rows) == len(chars)
    assert any("no class" in a for a in src.anomalies)
    with pytest.raises(JoinError):
        open_sd19(root, strict=True)


def _h(*names):
    return np.array([n.ljust(16, "x").encode() for n in names], "S16")


def test_join_duplicates_with_one_class_and_ambiguous_ones():
    # rows: a, b, a(dup), c ; other tree: a, a, b, c(different partition)
    hsf = np.array([0, 0, 0, 1])
    field = np.array([b"d"] * 4, "S1")
    hashes = _h("a", "b", "a", "c")
    asc, rep = join_classes(hsf, field, hashes, np.array([0, 0, 0, 0]), None,
                            np.array([0x31, 0x31, 0x32, 0x33]), _h("a", "a", "b", "c"),
                            ["o0", "o1", "o2", "o3"])
    assert asc.tolist() == [0x31, 0x32, 0x31, 0]       # c lives in another partition: no join
    assert rep.unjoined_rows.tolist() == [3] and rep.unmatched_other == ["o3"]
    assert len(rep.ambiguous_rows) == 0
    # identical images with different classes: paired in order and reported as ambiguous
    asc, rep = join_classes(np.array([0, 0]), field[:2], _h("a", "a"), np.array([0, 0]), None,
                            np.array([0x31, 0x37]), _h("a", "a"), ["o0", "o1"])
    assert asc.tolist() == [0x31, 0x37]
    assert rep.ambiguous_rows.tolist() == [0, 1] and not rep.ok


def test_join_uses_field_when_the_other_tree_knows_it():
    # the same image as an upper-case O (field u) and a digit 0 (field d)
    hashes = _h("o", "o")
    asc, rep = join_classes(np.array([0, 0]), np.array([b"u", b"d"], "S1"), hashes,
                            np.array([0, 0]), np.array([b"d", b"u"], "S1"),
                            np.array([0x30, 0x4f]), hashes, ["d/30", "u/4f"])
    assert asc.tolist() == [0x4f, 0x30] and rep.ok


@pytest.mark.parametrize("other", ["by_class", "by_field"])
def test_first_edition_without_cls_joins_with_mis_trees(tmp_path, other):
    root, chars, imgs = write_tree(tmp_path / "s", edition=1, packaging="zip", cls=False,
                                   hierarchies=("by_write", other))
    src = open_sd19(root, strict=True)
    assert src.join_report.ok and src.join_report.other == other
    assert src.index["ascii"].tolist() == [c["ascii"] for c in chars]


def _with_text_chunk(png: bytes) -> bytes:
    """The same image in other bytes: a tEXt chunk before IEND (a PNG reader skips it)."""
    import struct
    import zlib
    body = b"tEXt" + b"Comment\x00re-encoded"
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body))
    return png[:-12] + chunk + png[-12:]


def test_the_join_decodes_only_files_whose_bytes_are_not_by_write_s(tmp_path, monkeypatch):
    # issue 44: a by_class PNG with the bytes of a by_write PNG has its image: SD19 is decoded
    # once; a file with other bytes (the same image re-encoded here) is decoded and joined
    from mnistforge.sd19 import decode

    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="dir", cls=False,
                                   hierarchies=("by_write", "by_class"))
    other = sorted((root / "by_class").rglob("*.png"))[3]
    other.write_bytes(_with_text_chunk(other.read_bytes()))
    decoded = []
    real = decode.decode_png1_many
    monkeypatch.setattr(decode, "decode_png1_many", lambda blobs, **k: (decoded.append(len(blobs)),
                                                                         real(blobs, **k))[1])
    src = open_sd19(root, strict=True, workers=1, cache=False)
    assert src.index["ascii"].tolist() == [c["ascii"] for c in chars] and src.join_report.ok
    assert sum(decoded) == len(chars) + 1     # by_write once, and the one re-encoded by_class file
