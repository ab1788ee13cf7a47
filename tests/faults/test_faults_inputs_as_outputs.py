"""Issue 41: no output of a command (``--json``, ``--predictions``, ``--markdown``'s folder,
``--out``, ``--plot``) may be, hold or lie inside one of its inputs: refused before any work
(exit 2), the input untouched."""
from __future__ import annotations

import os

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.errors import ConfigError
from mnistforge.evaluators.errorlists import write_predictions
from mnistforge.io.outputs import check_apart

N = 30   # the rows of conftest.py's test_folder (FOLDER_ROWS)



def _snapshot(folder):
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_card_json_naming_the_predictions_file_is_refused(test_folder, tmp_path, capsys):
    f = tmp_path / "p.csv"
    f.write_text("".join(f"{i % 10}\n" for i in range(N)))
    before = f.read_bytes()
    for json_path in (f, tmp_path / "." / "p.csv"):
        assert main(["card", str(f), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c"),
                     "--json", str(json_path)]) == 2
        err = capsys.readouterr().err
        assert "the output is an input" in err and f.read_bytes() == before
    assert not (tmp_path / "c").exists()


def test_card_out_inside_the_test_folder_is_refused(test_folder, tmp_path, capsys):
    f = tmp_path / "p.csv"
    f.write_text("".join(f"{i % 10}\n" for i in range(N)))
    before = _snapshot(test_folder)
    assert main(["card", str(f), "--test", f"{test_folder}:test", "--out",
                 str(test_folder / "card")]) == 2
    assert "inside an input" in capsys.readouterr().err and _snapshot(test_folder) == before


def test_a_hard_link_to_an_input_is_the_input(tmp_path, capsys):
    a = tmp_path / "a.tsv"
    y = np.arange(N) % 10
    write_predictions(a, y, y, name="a")
    os.link(a, tmp_path / "same.json")
    before = a.read_bytes()
    assert main(["significance", str(a), "--json", str(tmp_path / "same.json")]) == 2
    assert "the output is an input" in capsys.readouterr().err and a.read_bytes() == before


def test_find_copies_json_into_a_folder_it_searches_is_refused(tmp_path, capsys):
    d = tmp_path / "scan"
    d.mkdir()
    assert main(["find-copies", str(d), "--json", str(d / "found.json")]) == 2
    assert "inside an input" in capsys.readouterr().err and not any(d.iterdir())


def test_evaluate_predictions_inside_the_test_folder_is_refused(test_folder, capsys):
    before = _snapshot(test_folder)
    assert main(["evaluate", "knn", "--train", f"{test_folder}:train", "--test",
                 f"{test_folder}:test", "--predictions", str(test_folder / "p.tsv")]) == 2
    assert "inside an input" in capsys.readouterr().err and _snapshot(test_folder) == before


def test_check_apart_accepts_what_is_apart(tmp_path):
    check_apart("-", [tmp_path])
    check_apart(tmp_path / "a" / "x.json", [tmp_path / "b", None])
    with pytest.raises(ConfigError, match="contains an input"):
        check_apart(tmp_path, [tmp_path / "b" / "c.npy"])
