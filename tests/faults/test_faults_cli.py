"""CLI values of issue 17: every numeric argument is checked at parse time with its range (a
usage error, exit 2, naming the option), before any load, allocation or output."""
from __future__ import annotations

import pytest

from mnistforge.cli import main

BAD = [
    ["show", "mnist", "--seed", "-1", "--out", "x.png"],
    ["show", "mnist", "--cols", "-3", "--out", "x.png"],
    ["show", "mnist", "--scale", "400", "--out", "x.png"],
    ["show", "mnist", "--start", "1e20", "--out", "x.png"],
    ["show", "mnist", "--start", "100000000000000000000", "--out", "x.png"],
    ["show", "mnist", "-n", "0", "--out", "x.png"],
    ["synth-sd19", "s", "--scale", "100000"],
    ["synth-sd19", "s", "--scale", "0"],
    ["synth-sd19", "s", "--seed", "-1"],
    ["build", "mnist", "--sd19", "s", "--out", "o", "--workers", "0"],
    ["build", "mnist", "--sd19", "s", "--out", "o", "--fudge", "nan"],
    ["verify", "mnist", "--near-threshold", "nan"],
    ["verify", "mnist", "--near-threshold", "-1"],
    ["tarp", "mnist", "--task", "0v1", "--runs", "0"],
    ["tarp", "mnist", "--task", "0v1", "--k", "a..b"],
    ["tarp", "mnist", "--task", "0v1", "--k", "6..0"],
    ["significance", "--seed", "-1"],
    ["significance", "--bootstrap", "1e10"],
    ["significance", "--bootstrap", "10000000000"],
    ["significance", "--confidence", "1"],
    ["evaluate", "mnist", "--classifier", "linear", "--bootstrap", "1e10"],
    ["evaluate", "mnist", "--classifier", "linear", "--confidence", "nan"],
    ["manitest", "mnist", "--classifier", "linear", "--slice", "10:5"],
    ["manitest", "mnist", "--classifier", "linear", "--slice", "-5:"],
    ["fetch", "mnist", "--timeout", "0"],
    ["fetch", "mnist", "--timeout", "-1"],
    ["fetch", "mnist", "--retries", "-1"],
    ["export", "hf", "mnist", "--out", "r", "--max-shard-mb", "0"],
    ["export", "hf", "mnist", "--out", "r", "--workers", "-2"],
    ["demo", "--scale", "5"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_numeric_values_are_usage_errors(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")   # a value checked too late must not download
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []     # nothing written, nothing started


def test_the_range_is_named(capsys):
    assert main(["show", "mnist", "--scale", "400", "--out", "x.png"]) == 2
    assert "1..32" in capsys.readouterr().err


def test_json_naming_a_folder_and_report_naming_a_file(tmp_path, capsys):
    f = tmp_path / "f.txt"
    f.write_text("keep")
    assert main(["verify", "mnist", "--report", str(f), "--no-download"]) == 2
    assert "existing file" in capsys.readouterr().err
    assert f.read_text() == "keep"
    from mnistforge.errors import ConfigError
    from mnistforge.io.atomic import atomic_file
    with pytest.raises(ConfigError, match="existing folder"):
        with atomic_file(tmp_path):
            pass
    with pytest.raises(ConfigError, match="under a file"):
        with atomic_file(f / "x.json"):
            pass
