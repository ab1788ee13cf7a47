"""``mnistforge sd19 info``."""
from __future__ import annotations

import json

from mnistforge.cli import main

from sd19_helpers import write_tree


def test_info_json_counts(tmp_path, capsys):
    root, chars, imgs = write_tree(tmp_path / "s", edition=1, packaging="zip")
    assert main(["sd19", "info", str(root), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["edition"] == 1 and s["packaging"] == "zip"
    assert s["hierarchies"] == ["by_class", "by_field", "by_write"]
    assert s["characters"] == [len(chars), 814255]
    assert s["partitions"]["hsf_0"]["digits"] == [24, 53449]
    assert s["partitions"]["hsf_7"]["writers"] == 1 and s["partitions"]["hsf_7"]["writer_folders"] == 2
    assert s["partitions"]["hsf_7"]["const"] == [0, 0]
    assert sum(v[0] for v in s["classes"].values()) == len(chars)
    assert s["classes"]["O"][1] == 29139
    assert s["n_duplicates"] == 1 and s["classes_from"] == ".cls files"
    # hsf_1/2/3/6 are absent from this tiny tree: said so
    assert "hsf_1: no characters" in s["anomalies"]


def test_info_reports_unjoined_and_strict_fails(tmp_path, capsys):
    root, chars, imgs = write_tree(tmp_path / "s", edition=2, packaging="dir", cls=False,
                                   hierarchies=("by_write", "by_class"), alter_row=5)
    assert main(["sd19", "info", str(root)]) == 0
    out = capsys.readouterr().out
    assert "content join with by_class" in out and "1 unjoined" in out
    assert "1 characters without a class" in out
    assert main(["sd19", "info", str(root), "--strict"]) == 1


def test_info_missing_source_is_a_clean_error(tmp_path, capsys):
    assert main(["sd19", "info", str(tmp_path / "nope")]) == 2  # usage error: no such path
    assert "not found" in capsys.readouterr().err
