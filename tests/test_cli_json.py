"""The CLI for scripts: --json PATH and --json -, exit codes, one spelling per option, widths."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mnistforge.cli import build_parser, main
from mnistforge.commands.common import EXIT_CODES, exit_code
from mnistforge.errors import (CheckFailed, ConfigError, DataMismatchError, DatasetNotFoundError,
                               MissingDependencyError, OfflineError, TargetNotFoundError, UploadError)
from mnistforge.io.idx import write_idx
from mnistforge.io.manifest import Manifest

ROOT = Path(__file__).resolve().parents[1]
REPORTING = ["info", "fetch", "build", "verify", "export", "evaluate", "significance", "tarp",
             "manitest", "sd19"]


def mnist_folder(d, n_train=60, n_test=30, seed=0):
    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    for stem, n in (("train", n_train), ("t10k", n_test)):
        x = np.zeros((n, 28, 28), np.uint8)
        y = (np.arange(n) % 2).astype(np.uint8)
        x[y == 0, 4:24, 12:16] = 255          # bars: 0 vertical, 1 horizontal
        x[y == 1, 12:16, 4:24] = 255
        x = np.clip(x.astype(int) + rng.integers(0, 30, x.shape), 0, 255).astype(np.uint8)
        write_idx(d / f"{stem}-images-idx3-ubyte.gz", x)
        write_idx(d / f"{stem}-labels-idx1-ubyte.gz", y)
    Manifest(kind="mnist").write(d)
    return d


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")


def json_out(capsys):
    cap = capsys.readouterr()
    return json.loads(cap.out), cap.err


# --------------------------------------------------------------------------- --json

def test_every_reporting_command_takes_json():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in REPORTING:
        opts = {o for a in sub.choices[name]._actions for o in a.option_strings}
        assert "--json" in opts, name


def test_json_dash_writes_only_json_to_stdout(capsys, offline):
    assert main(["info", "--json", "-"]) == 0
    doc, err = json_out(capsys)
    assert [d["name"] for d in doc["datasets"]][:2] == ["mnist", "fashion-mnist"]
    assert "dataset" in err and "classes" in err  # the table went to stderr
    assert main(["info", "EMNIST-Letters", "--json"]) == 0  # a bare --json is stdout too
    doc, _ = json_out(capsys)
    assert doc["name"] == "emnist-letters" and doc["stored_orientation"] == "transposed"
    assert {s["name"]: s["count"] for s in doc["splits"]}["test"] == 20800


def test_json_path_is_written(tmp_path, capsys, offline):
    out = tmp_path / "info.json"
    assert main(["info", "qmnist", "--json", str(out)]) == 0
    assert "qmnist: QMNIST" in capsys.readouterr().out
    assert json.loads(out.read_text())["name"] == "qmnist"


def test_fetch_json_and_exit_code_when_offline(capsys, offline):
    assert main(["fetch", "mnist", "--json", "-"]) == 3
    doc, err = json_out(capsys)
    assert doc["failed"] == 4 and {f["error_type"] for f in doc["files"]} == {"OfflineError"}
    assert "FAILED" in err


def test_verify_json_dash_and_exit_codes(tmp_path, capsys):
    d = mnist_folder(tmp_path / "bars")
    rc = main(["verify", str(d), "--no-near", "--json", "-"])
    doc, err = json_out(capsys)
    assert rc in (0, 1) and doc["target"] and isinstance(doc["results"], list)
    assert any(r["name"].startswith("integrity") for r in doc["results"])
    assert "mnistforge verify" in err
    assert main(["verify", "/nonexistent"]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_evaluate_tarp_json_dash(tmp_path, capsys):
    d = mnist_folder(tmp_path / "bars")
    assert main(["evaluate", "linear", "--train", f"{d}:train", "--test", f"{d}:test",
                 "--json", "-"]) == 0
    doc, _ = json_out(capsys)
    assert doc["n_test"] == 30 and doc["errors"] == 0
    assert main(["tarp", f"{d}:test", "--task", "0v1", "--n", "1", "--k", "0..1", "--runs", "2",
                 "--workers", "1", "--json", "-"]) == 0
    doc, _ = json_out(capsys)
    assert [r["k"] for r in doc["results"]] == [0, 1]


def test_significance_json_dash(capsys):
    assert main(["significance", "--example", "keysers2006", "--bootstrap", "200", "--json", "-"]) == 0
    doc, err = json_out(capsys)
    assert isinstance(doc, dict) and doc and "POI" in err


def test_export_json_and_push_without_token_before_any_work(tmp_path, capsys, monkeypatch):
    d = mnist_folder(tmp_path / "bars")
    repo = tmp_path / "repo"
    assert main(["export", "hf", str(d), "--out", str(repo), "--workers", "1", "--no-croissant",
                 "--json", "-"]) == 0
    doc, _ = json_out(capsys)
    assert doc["configs"] == {"mnist": {"train": 60, "test": 30}} and doc["checked"]
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-hf-home"))  # no stored token either
    out2 = tmp_path / "never"
    assert main(["export", "hf", str(d), "--out", str(out2), "--push", "me/x"]) == 3
    assert "no Hugging Face token" in capsys.readouterr().err
    assert not out2.exists() and not Path(str(out2) + ".incomplete").exists()  # no work done
    assert main(["export", "hf", str(d), "--out", str(out2), "--push", "not a repo id"]) == 2


# --------------------------------------------------------------------------- exit codes

def test_exit_codes_of_errors():
    assert exit_code(ConfigError("x")) == 2 and exit_code(DatasetNotFoundError("x")) == 2
    assert exit_code(TargetNotFoundError("x")) == 2
    assert exit_code(OfflineError("x")) == 3 and exit_code(UploadError("x")) == 3
    assert exit_code(MissingDependencyError("x")) == 3
    assert exit_code(DataMismatchError("x")) == 1 and exit_code(CheckFailed("x")) == 1
    assert exit_code(KeyboardInterrupt()) == 130
    assert set(EXIT_CODES) == {0, 1, 2, 3, 130}


def test_exit_codes_applied(tmp_path, capsys, monkeypatch):
    assert main(["info", "mnsit"]) == 2
    assert "did you mean 'mnist'?" in capsys.readouterr().err
    assert main(["show", "mnist", "--out", str(tmp_path / "g.png"), "--bogus"]) == 2
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    # wrong data: Fashion-like labels under MNIST names, no manifest
    d = mnist_folder(tmp_path / "m")
    (d / "manifest.json").unlink()
    assert main(["show", str(d) + ":mnist:test", "--out", str(tmp_path / "g.png")]) == 1
    assert "trust_files=True" in capsys.readouterr().err
    monkeypatch.setenv("MNISTFORGE_TRUST_FILES", "1")
    assert main(["show", str(d) + ":mnist:test", "--out", str(tmp_path / "g.png")]) == 0
    import mnistforge.commands.info as info

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(info, "run", interrupted)
    assert main(["info"]) == 130

    def missing(args):
        from mnistforge.errors import require
        require("no_such_module_xyz", "plot", "a picture")
    monkeypatch.setattr(info, "run", missing)
    assert main(["info"]) == 3
    assert "mnistforge[plot]" in capsys.readouterr().err


def test_exit_codes_in_help():
    for argv in (["--help"], ["verify", "--help"], ["fetch", "--help"]):
        r = subprocess.run([sys.executable, "-m", "mnistforge"] + argv, capture_output=True, text=True,
                           cwd=ROOT, env={**os.environ, "COLUMNS": "100"})
        assert r.returncode == 0
        for code in ("0 ", "1 ", "2 ", "3 ", "130"):
            assert f"\n  {code}" in r.stdout, (argv, code)
    usage = (ROOT / "docs" / "usage.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} |" in usage


# --------------------------------------------------------------------------- spellings, widths

def test_one_spelling_per_option():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        opts = {o: a for a in p._actions for o in a.option_strings}
        if "--offline" in opts or "--no-download" in opts:
            assert opts["--offline"] is opts["--no-download"], name  # one option, two spellings
    for name in ("fetch", "info", "show", "verify"):
        assert "--cache" in {o for a in sub.choices[name]._actions for o in a.option_strings}, name


def test_show_takes_name_split_with_a_slice(tmp_path, capsys):
    d = mnist_folder(tmp_path / "bars")
    out = tmp_path / "g.png"
    assert main(["show", f"{d}:mnist:train[-10:]", "--out", str(out), "-n", "4"]) == 0
    assert "mnist train[-10:]: images 0..3 of 10" in capsys.readouterr().out


def test_info_folder_lists_every_dataset_with_counts(tmp_path, capsys):
    d = tmp_path / "emnist"
    rng = np.random.default_rng(0)
    for name, k in (("balanced", 47), ("digits", 10)):
        for part, n in (("train", 50), ("test", 8)):
            write_idx(d / f"emnist-{name}-{part}-images-idx3-ubyte.gz",
                      rng.integers(0, 255, (n, 28, 28), dtype=np.uint8))
            write_idx(d / f"emnist-{name}-{part}-labels-idx1-ubyte.gz", (np.arange(n) % k).astype(np.uint8))
    Manifest(kind="emnist").write(d)
    assert main(["info", str(d)]) == 0
    out = capsys.readouterr().out
    assert "2 datasets" in out and "emnist-balanced" in out and "emnist-digits" in out
    assert "validation                        8  view of train" in out
    assert "train-without-validation         42  view of train" in out
    assert main(["info", str(d), "--json", "-"]) == 0
    doc, _ = json_out(capsys)
    counts = {s["name"]: s["count"] for s in doc["datasets"][0]["splits"]}
    assert counts == {"train": 50, "test": 8, "validation": 8, "train-without-validation": 42}


def test_tables_fit_columns_and_never_cut_reasons(tmp_path, capsys, monkeypatch):
    d = mnist_folder(tmp_path / "bars")
    monkeypatch.setenv("COLUMNS", "60")
    main(["verify", str(d), "--no-near", "--json", str(tmp_path / "v.json")])
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.rstrip().endswith("result"))
    reason_at = lines[head].index("result")
    table = lines[head + 2:]
    # reasons wrap at the width (at least 30 columns are kept for them after the check names)
    assert table and all(len(line) <= max(60, reason_at + 30) for line in table if " " in line[reason_at:])
    doc = json.loads((tmp_path / "v.json").read_text())
    words = " ".join(r["message"] for r in doc["results"]).split()
    assert all(w in out for w in words)  # every word of every reason is printed
    assert "..." not in out
