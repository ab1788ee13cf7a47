"""`mnistforge card` against hostile inputs: a pickled .npy is never unpickled, labels that are
not labels are refused, a file of the wrong length is a usage error, a file name made of HTML
stays text on the page and in the Markdown."""
from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.io.idx import write_idx
from mnistforge.io.manifest import Manifest

N = 30


@pytest.fixture
def test_folder(tmp_path):
    d = tmp_path / "digits"
    rng = np.random.default_rng(0)
    for part in ("train", "test"):
        write_idx(d / f"emnist-digits-{part}-images-idx3-ubyte.gz",
                  rng.integers(0, 256, (N, 28, 28), dtype=np.uint8))
        write_idx(d / f"emnist-digits-{part}-labels-idx1-ubyte.gz", (np.arange(N) % 10).astype(np.uint8))
    Manifest(kind="emnist").write(d)
    return d


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
    assert "predictions are not labels" in capsys.readouterr().err
    c = tmp_path / "p.csv"
    c.write_text("pred\n1\nseven\n")
    assert main(["card", str(c), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c")]) == 1
    assert "malformed predictions" in capsys.readouterr().err


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


def test_labels_outside_the_classes_are_errors_named_as_unknown(test_folder, tmp_path, capsys):
    f = tmp_path / "p.npy"
    np.save(f, np.full(N, 99))
    js = tmp_path / "c.json"
    assert main(["card", str(f), "--test", f"{test_folder}:test", "--out", str(tmp_path / "c"),
                 "--json", str(js)]) == 0
    doc = json.loads(js.read_text())
    assert doc["rate"]["errors"] == N and {g["predicted_name"] for g in doc["gallery"]} == {"?"}
    assert sum(map(sum, doc["confusion"])) == 0     # no cell for a class that does not exist


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
