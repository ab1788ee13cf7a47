"""`mnistforge card` against hostile inputs: a pickled .npy is never unpickled, labels that are
not labels are refused, a file of the wrong length is a usage error, a file name made of HTML
stays text on the page and in the Markdown."""
from __future__ import annotations

import json
import shlex
import shutil
from html.parser import HTMLParser

import numpy as np
import pytest

from mnistforge.cli import main

N = 30   # the rows of conftest.py's test_folder (FOLDER_ROWS)



class Boom:
    """Unpickling this writes a file: proof that the .npy was unpickled."""

    target = ""

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_a_pickled_npy_is_never_unpickled(test_folder, tmp_path, capsys):
    proof = tmp_path / "unpickled"
    Boom.target = str(proof)
    arr = np.empty(N, dtype=object)
    arr[:] = [Boom() for _ in range(N)]
    f = tmp_path / "evil.npy"
    np.save(f, arr, allow_pickle=True)
    assert main(["card", str(f), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    assert "no pickled objects" in err and not proof.exists() and not (tmp_path / "c").exists()


def test_scores_that_are_not_labels_are_refused(test_folder, tmp_path, capsys):
    f = tmp_path / "p.npy"
    np.save(f, np.linspace(0, 1, N))            # 1-D floats: probabilities, not labels
    assert main(["card", str(f), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c")]) == 1
    assert "a prediction is a fraction" in capsys.readouterr().err
    c = tmp_path / "p.csv"
    c.write_text("pred\n1\nseven\n")
    assert main(["card", str(c), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c")]) == 1
    assert "malformed label" in capsys.readouterr().err


def test_a_csv_of_the_wrong_length_is_a_usage_error(test_folder, tmp_path, capsys):
    c = tmp_path / "p.csv"
    c.write_text("\n".join(["1"] * (N + 1)) + "\n")
    assert main(["card", str(c), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c")]) == 2
    assert f"{N} predictions" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_a_file_named_like_html_stays_text(test_folder, tmp_path, capsys):
    f = tmp_path / "<script>alert(1)<.npy"
    np.save(f, (np.arange(N) + 1) % 10)
    np.save(tmp_path / "ok.npy", np.arange(N) % 10)
    out, js = tmp_path / "c", tmp_path / "c.json"
    assert main(["card", str(f), str(tmp_path / "ok.npy"), "--test", f"{test_folder}:test", "--out",
                 str(out), "--markdown", "--json", str(js), "--bootstrap", "10"]) == 0
    tags = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append(tag)

    P().feed((out / "card.html").read_text())
    assert "script" not in tags and "&lt;script&gt;" in (out / "card.html").read_text()
    md = (out / "card.md").read_text()
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert json.loads(js.read_text())["system"] == "<script>alert(1)<"


@pytest.mark.parametrize("value", [-1, -3, 99, 2**63 - 1])
def test_labels_outside_the_classes_are_refused_naming_the_row(test_folder, tmp_path, capsys,
                                                               value):
    f = tmp_path / "p.npy"
    np.save(f, np.where(np.arange(N) == 7, value, np.arange(N) % 10))
    assert _card(f, test_folder, tmp_path) == 1
    err = capsys.readouterr().err
    assert "outside the classes" in err and f"{value} at row 7" in err and "0..9" in err


def _card(f, test_folder, tmp_path, *more) -> int:
    shutil.rmtree(tmp_path / "c", ignore_errors=True)   # (a card written by a call before)
    code = main(["card", *map(str, [f, *more]), "--test", f"{test_folder}:test", "--out",
                 str(tmp_path / "c"), "--bootstrap", "10"])
    if code:
        assert not (tmp_path / "c").exists()
    return code


def _save(tmp_path, name, a):
    np.save(tmp_path / name, a)
    return tmp_path / name


def test_floats_that_are_no_labels_are_refused(test_folder, tmp_path, capsys):
    for bad, said in ((np.inf, "NaN or infinity"), (np.nan, "NaN or infinity"),
                      (1e30, "outside the classes"), (2.5, "a fraction")):
        a = (np.arange(N) % 10).astype(float)
        a[4] = bad
        assert _card(_save(tmp_path, "f.npy", a), test_folder, tmp_path) == 1
        err = capsys.readouterr().err
        assert said in err and "row 4" in err


def test_score_matrices_need_one_finite_column_per_class(test_folder, tmp_path, capsys):
    rng = np.random.default_rng(0)
    scores = rng.random((N, 10))
    scores[np.arange(N), np.arange(N) % 10] = 2.0       # argmax = the true label
    assert _card(_save(tmp_path, "s.npy", scores), test_folder, tmp_path) == 0
    capsys.readouterr()
    scores[11] = np.nan
    assert _card(_save(tmp_path, "s.npy", scores), test_folder, tmp_path) == 1
    assert "row 11" in capsys.readouterr().err
    assert _card(_save(tmp_path, "s.npy", rng.random((N, 3))), test_folder, tmp_path) == 1
    assert "one column per class" in capsys.readouterr().err


def test_a_csv_with_two_columns_needs_a_header_saying_which_is_the_prediction(test_folder,
                                                                              tmp_path, capsys):
    c = tmp_path / "p.csv"
    c.write_text("".join(f"{i % 10},{i}\n" for i in range(N)))      # (prediction, row)
    assert _card(c, test_folder, tmp_path) == 1
    assert "which one is the prediction" in capsys.readouterr().err
    c.write_text("prediction,row\n" + "".join(f"{i % 10},{i}\n" for i in reversed(range(N))))
    js = tmp_path / "c.json"
    assert _card(c, test_folder, tmp_path, "--json", js) == 0
    assert json.loads(js.read_text())["rate"]["errors"] == 0     # ordered by the row column


@pytest.mark.parametrize("encoding,said", [("utf-16", "UTF-16"), ("latin-1", "not UTF-8")])
def test_a_csv_in_another_encoding_is_refused_by_name(test_folder, tmp_path, capsys, encoding,
                                                      said):
    c = tmp_path / "p.csv"
    c.write_bytes(("prédiction\n" + "".join(f"{i % 10}\n" for i in range(N))).encode(encoding))
    assert _card(c, test_folder, tmp_path) == 1
    assert said in capsys.readouterr().err


def test_a_23_digit_label_is_refused(test_folder, tmp_path, capsys):
    c = tmp_path / "p.csv"
    c.write_text("12345678901234567890123\n" * N)
    assert _card(c, test_folder, tmp_path) == 1
    assert "outside the classes" in capsys.readouterr().err


def test_an_error_list_of_another_test_set_size_is_refused(test_folder, tmp_path, capsys):
    e = tmp_path / "e.tsv"
    e.write_text("# n: 60000\nA\tsome system\t1,2,3\n")
    assert _card(e, test_folder, tmp_path) == 2
    assert "60000 (its '# n:' line)" in capsys.readouterr().err
    e.write_text("A\tsome system\t1,2,3\n")                  # no '# n:': the test set's
    assert _card(e, test_folder, tmp_path) == 0


def test_a_fifo_a_device_or_a_link_loop_is_refused_before_it_is_opened(test_folder, tmp_path,
                                                                       capsys):
    import os
    import subprocess
    import sys

    fifo, loop = tmp_path / "p.csv", tmp_path / "loop.csv"
    os.mkfifo(fifo)
    os.symlink(loop, loop)
    for f, said in ((fifo, "FIFO"), ("/dev/zero", "character device"), (loop, "link loop")):
        r = subprocess.run([sys.executable, "-m", "mnistforge", "card", str(f), "--test",
                            f"{test_folder}:test", "--out", str(tmp_path / "c")],
                           capture_output=True, text=True, timeout=60)   # never blocks
        assert r.returncode == 1 and said in r.stderr and "Traceback" not in r.stderr


def test_a_prediction_file_of_another_size_names_the_test_set_not_an_option(test_folder, tmp_path,
                                                                            capsys):
    from mnistforge.evaluators.errorlists import write_predictions

    f = tmp_path / "p.tsv"
    write_predictions(f, np.arange(N + 5) % 10, np.arange(N + 5) % 10, name="p")
    assert main(["card", str(f), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert f"{N} predictions" in err and f"{N + 5}" in err and "--n" not in err


def test_a_perfect_system_is_carded_without_a_gallery(test_folder, tmp_path, capsys):
    f = tmp_path / "p.npy"
    np.save(f, np.arange(N) % 10)
    out = tmp_path / "c"
    assert main(["card", str(f), "--test", f"{test_folder}:test", "--out", str(out)]) == 0
    html = (out / "card.html").read_text()
    assert "0 errors on 30 test images" in html and "no difference" in html


def test_a_closed_pipe_leaves_the_page_with_its_record_and_overwrite_works(test_folder, tmp_path):
    import subprocess
    import sys

    f = _save(tmp_path, "p.npy", np.arange(N) % 10)
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "mnistforge", "card", str(f), "--test", f"{test_folder}:test",
           "--out", str(out), "--bootstrap", "10"]
    for more in ([], ["--overwrite"]):   # `card ... | head -1`, then again over the same folder
        r = subprocess.run(" ".join(map(shlex.quote, cmd + more)) + " | head -1", shell=True,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert sorted(p.name for p in out.iterdir()) == ["card-manifest.json", "card.html"]
        record = json.loads((out / "card-manifest.json").read_text())
        assert record["kind"] == "card" and set(record["outputs"]) == {"card.html"}
    (out / "notes.txt").write_text("mine")
    assert main(cmd[3:] + ["--overwrite"]) == 1             # a file the record does not list
    assert (out / "notes.txt").read_text() == "mine"


def test_two_systems_of_other_training_sizes_are_said_and_get_no_vote_row(test_folder, tmp_path):
    from mnistforge.evaluators.errorlists import write_predictions

    y = np.arange(N) % 10
    a, b = tmp_path / "small.tsv", tmp_path / "a-much-longer-system-name.tsv"
    write_predictions(a, (y + (np.arange(N) < 3)) % 10, y, name="small", metadata={"train_size": 5000})
    write_predictions(b, y, y, name="a-much-longer-system-name", metadata={"train_size": 60000})
    js = tmp_path / "c.json"
    assert _card(a, test_folder, tmp_path, b, "--json", js) == 0
    doc = json.loads(js.read_text())
    assert doc["combination"] is None and doc["training"] == {"small": 5000,
                                                              "a-much-longer-system-name": 60000}
    assert any("small trained on 5,000 images" in n for n in doc["notes"])
    html = (tmp_path / "c" / "card.html").read_text()
    assert "a-much-longer-system-name: 60,000" in html and "file://" not in html
    assert str(tmp_path) not in html.split("</h1>")[0]       # the title names no local folder
