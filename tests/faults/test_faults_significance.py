"""`significance` and its functions on absurd numbers: named errors, never an OverflowError, a
decimal.Overflow or an integer too long to print."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.errors import ConfigError, FormatError
from mnistforge.evaluators import errorlists as el
from mnistforge.evaluators import significance as sg

BIG = 10**400


@pytest.mark.parametrize("call", [
    lambda: sg.wald_interval(1, BIG), lambda: sg.exact_interval(1, BIG),
    lambda: sg.error_rate(5, BIG), lambda: sg.error_rate(float("inf"), 10),
    lambda: sg.paired_worse(BIG, 0), lambda: sg.paired_worse(30, 10, k=BIG),
    lambda: sg.max_bonferroni_k(BIG, 0), lambda: sg.mcnemar_exact(BIG, 1),
    lambda: sg.mcnemar_exact(-1, 1), lambda: sg.error_rate(2.5, 10)])
def test_absurd_counts_are_config_errors(call):
    with pytest.raises(ConfigError, match="expected a whole number in 0.."):
        call()


def test_an_overwhelming_difference_has_a_printable_k():
    k = sg.max_bonferroni_k(54_000, 0)          # a random classifier against a good one on 60k
    assert k == sg.MAX_K and json.loads(json.dumps(k)) == k and sg.format_k(k) == ">= 1e1000"
    assert sg.max_bonferroni_k(2**52, 0) == sg.MAX_K   # (was decimal.Overflow)


def test_a_prediction_file_with_absurd_numbers_is_a_format_error(tmp_path, capsys):
    head = "# mnistforge predictions\nindex\tlabel\tprediction\n"
    for body, said in (("0\t1\t12345678901234567890123\n", "malformed prediction rows"),
                       ("0\t1\t-3\n", "a negative number")):
        f = tmp_path / "p.tsv"
        f.write_text(head + body)
        with pytest.raises(FormatError, match=said):
            el.read_predictions(f)
        assert main(["significance", str(f), str(f)]) == 1
        assert said in capsys.readouterr().err


def test_significance_prints_a_huge_k(tmp_path, capsys):
    y = np.zeros(60_000, np.int64)
    el.write_predictions(tmp_path / "good.tsv", y, y, name="good")
    el.write_predictions(tmp_path / "bad.tsv", np.ones(60_000, np.int64), y, name="bad")
    assert main(["significance", str(tmp_path / "good.tsv"), str(tmp_path / "bad.tsv"),
                 "--bootstrap", "10", "--json", str(tmp_path / "s.json")]) == 0
    assert ">= 1e1000" in capsys.readouterr().out
    pairs = json.loads((tmp_path / "s.json").read_text())
    assert pairs


def test_an_error_list_with_a_23_digit_index_is_a_format_error(tmp_path, capsys):
    f = tmp_path / "e.tsv"
    f.write_text("# n: 100\nA\tdesc\t1,99999999999999999999999\n")
    with pytest.raises(FormatError, match="bad index list for system 'A'"):
        el.read_error_lists(f)
    assert main(["significance", str(f)]) == 1 and "Traceback" not in capsys.readouterr().err


def test_significance_refuses_a_fifo_and_utf16_through_the_one_reader(tmp_path):
    import os
    import subprocess
    import sys

    fifo, u16 = tmp_path / "p.tsv", tmp_path / "u.tsv"
    os.mkfifo(fifo)
    u16.write_bytes("A\tdesc\t1,2\n".encode("utf-16"))
    for f, said in ((fifo, "a FIFO (named pipe)"), (u16, "UTF-16")):
        r = subprocess.run([sys.executable, "-m", "mnistforge", "significance", str(f), "--n", "10"],
                           capture_output=True, text=True, timeout=60)   # never blocks
        assert r.returncode == 1 and said in r.stderr and "Traceback" not in r.stderr
