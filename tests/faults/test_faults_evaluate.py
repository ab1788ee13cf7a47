"""Evaluation bullets of issue 17: significance refuses prediction files with different ground
truths, an error-list "# n: 1e11" is refused before allocating, evaluate refuses a test set whose
labels the classifier never saw, and classifier specs with nan / huge values are usage errors."""
from __future__ import annotations

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.commands.evaluate import check_label_space
from mnistforge.errors import ConfigError
from mnistforge.evaluators.errorlists import read_error_lists, read_systems, write_predictions


def _predictions(path, labels, seed):
    rng = np.random.default_rng(seed)
    pred = np.where(rng.random(labels.size) < 0.9, labels, (labels + 1) % 10)
    write_predictions(path, pred, labels, name=path.stem)
    return path


def test_significance_refuses_different_ground_truths(tmp_path, capsys):
    y = np.arange(200) % 10
    a = _predictions(tmp_path / "a.tsv", y, 0)
    b = _predictions(tmp_path / "b.tsv", y, 1)
    assert len(read_systems([a, b])) == 2
    c = _predictions(tmp_path / "c.tsv", np.roll(y, 1), 2)   # same size, other truth
    with pytest.raises(ConfigError, match="different ground truths"):
        read_systems([a, c])
    assert main(["significance", str(a), str(c)]) == 2
    assert "different ground truths" in capsys.readouterr().err


def test_an_error_list_claiming_1e11_samples_is_refused(tmp_path):
    for n in ("100000000000", "1e11"):
        text = f"# n: {n}\nA\tfirst\t1,3\n"
        with pytest.raises(ConfigError):
            read_error_lists(None, text=text)


def test_evaluate_refuses_a_letters_model_on_digits():
    with pytest.raises(ConfigError, match="label space"):
        check_label_space(np.arange(1, 27), np.arange(10), "emnist-letters", "mnist:test")
    check_label_space(np.arange(10), np.array([0, 9, 9]), "mnist", "mnist:test")


@pytest.mark.parametrize("spec", ["linear:ridge=nan", "elm:hidden=1e7", "knn:k=-1",
                                  "elm:ridge=inf"])
def test_classifier_specs_out_of_range_are_usage_errors(spec, tmp_path, monkeypatch, capsys):
    from mnistforge.classifiers.base import make_classifier

    with pytest.raises(ConfigError, match="bad value"):
        make_classifier(spec)
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")
    assert main(["evaluate", spec, "--train", "mnist:train", "--test", "mnist:test"]) == 2
    assert "Traceback" not in capsys.readouterr().err
