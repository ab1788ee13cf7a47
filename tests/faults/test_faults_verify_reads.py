"""verify judges the files as its load read them (issue 44): each file inflated once, and what the
parse and hash checks judge is what the other checks were served."""
from __future__ import annotations

import shutil
from pathlib import Path

from mnistforge.checks import integrity, verify


def _parse(rep):
    return next(r for r in rep.results if r.name == "integrity.parse")


def test_the_parse_check_takes_the_loads_reads(built, monkeypatch):
    opened = []
    real = integrity.read_idx
    monkeypatch.setattr(integrity, "read_idx", lambda p, **k: (opened.append(Path(p).name), real(p, **k))[1])
    rep = verify(built, near=False)
    parse = _parse(rep)
    assert parse.status == "pass" and parse.values["files"] >= 4, parse
    assert opened == []                                          # no file opened a second time
    assert next(r for r in rep.results if r.name == "hashes.manifest").status == "pass"


def test_a_file_damaged_on_disk_is_still_caught(built, tmp_path):
    # the reads are the load's: a file the load refuses never reaches the parse check as read,
    # and the manifest's sha256 still judges the bytes on disk
    folder = shutil.copytree(built, tmp_path / "b")
    f = next(folder.glob("t10k-images*"))
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    rep = verify(folder, near=False)
    assert rep.status == "fail"
    assert any(r.status == "fail" and r.name in ("integrity.parse", "hashes.manifest", "load[test]")
               for r in rep.results)
