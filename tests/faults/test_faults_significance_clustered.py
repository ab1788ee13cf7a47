"""`significance --cluster/--groups/--runs` and the clustered functions on hostile input: named
errors with the exit code of their kind, never a traceback, a pickle load or a silent wrong answer."""
from __future__ import annotations

import numpy as np
import pytest

from mnistforge.cli import main
from mnistforge.errors import ConfigError, FormatError
from mnistforge.evaluators import significance as sg

KEYSERS = ["significance", "--example", "keysers2006", "--bootstrap", "200"]


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_pickled_groups_file_is_never_loaded(tmp_path, capsys):
    f = tmp_path / "g.npy"
    np.save(f, np.array([{"x": i} for i in range(10_000)], dtype=object), allow_pickle=True)
    assert main([*KEYSERS, "--groups", str(f)]) == 1
    assert "cannot read the groups" in _err(capsys)


@pytest.mark.parametrize("content, said", [
    (np.zeros((100, 100)), "shape (100, 100)"),       # 10,000 values, but a matrix
    (np.zeros(9_999), "shape (9999,)"),
    (np.zeros(10_000), "two clusters at least"),      # every row in one group
])
def test_groups_of_the_wrong_shape_or_one_cluster_are_named(tmp_path, capsys, content, said):
    f = tmp_path / "g.npy"
    np.save(f, content)
    assert main([*KEYSERS, "--groups", str(f)]) in (1, 2)
    assert said in _err(capsys)


def test_a_missing_or_binary_groups_file(tmp_path, capsys):
    assert main([*KEYSERS, "--groups", str(tmp_path / "absent.csv")]) == 2
    assert "file not found" in _err(capsys)
    junk = tmp_path / "g.csv"
    junk.write_bytes(b"\x00\x01" * 100)
    assert main([*KEYSERS, "--groups", str(junk)]) == 1
    assert "not text" in _err(capsys)


def test_cluster_and_groups_together_and_cluster_without_a_test_set(tmp_path, capsys):
    np.save(tmp_path / "g.npy", np.arange(10_000) // 30)
    assert main([*KEYSERS, "--cluster", "writer", "--groups", str(tmp_path / "g.npy")]) == 2
    assert "not allowed with argument --cluster" in _err(capsys)
    f = tmp_path / "e.tsv"
    f.write_text("# n: 100\nA\tdesc\t1,2\nB\tdesc\t3\n")
    assert main(["significance", str(f), "--cluster", "writer", "--bootstrap", "100"]) == 2
    assert "--cluster writer needs the test set" in _err(capsys)


def test_cluster_writer_on_mnist_without_qmnist_table_offline_says_so(cache, capsys):
    rc = main([*KEYSERS, "--cluster", "writer", "--offline"])
    assert rc != 0
    err = _err(capsys)
    assert "qmnist-test-labels-idx2-int.gz" in err


@pytest.mark.parametrize("runs", [["0"], ["-1"], ["2", "2"], ["5", "1"]])
def test_runs_that_do_not_fit_the_systems(runs, capsys):
    rc = main([*KEYSERS, "--runs", *runs])
    assert rc == 2
    _err(capsys)


def test_nan_and_non_boolean_values_in_the_functions():
    w = np.zeros(100, bool)
    with pytest.raises(ConfigError, match="not boolean"):
        sg.hierarchical_poi([w, np.full(100, 0.5)], w)
    with pytest.raises(ConfigError, match="groups do not match"):
        sg.clustered_mean(w, np.arange(100).reshape(10, 10))
    with pytest.raises(ConfigError, match="differ in length|no run"):
        sg.hierarchical_poi([], w)
    with pytest.raises(FormatError, match="do not match the test rows"):
        sg.read_groups(__file__, 3)


def test_zero_errors_everywhere_gives_no_design_effect_and_valid_json(tmp_path):
    c = sg.clustered_mean(np.zeros(100, bool), np.arange(100) // 10)
    assert c.se == 0.0 and c.design_effect is None and c.interval == (0.0, 0.0)
    import json

    assert json.loads(json.dumps(c.to_dict(), allow_nan=False))["design_effect"] is None


def test_cluster_writer_on_a_dataset_without_writers_is_refused_before_any_load(cache, capsys):
    assert main([*KEYSERS, "--cluster", "writer", "--test-set", "fashion-mnist:test"]) == 2
    err = _err(capsys)
    assert "writers of fashion-mnist's rows are not known" in err and "--groups FILE" in err


@pytest.mark.parametrize("train, said", [("nosuch:train", "unknown dataset 'nosuch'"),
                                         ("mnist:nosplit", "unknown split 'nosplit'")])
def test_a_mistyped_training_set_is_an_error_not_a_silent_no_overlap(tmp_path, capsys, train, said):
    assert main([*KEYSERS, "--train", train]) == 2
    assert said in _err(capsys)


def test_the_clustered_gap_refuses_one_cluster_or_an_empty_part():
    with pytest.raises(ConfigError, match="two clusters"):
        sg.clustered_gap([0, 1, 0, 1], [True, True, False, False], [7, 7, 7, 7])
    with pytest.raises(ConfigError, match="rows on both sides"):
        sg.clustered_gap([0, 1, 0, 1], [True] * 4, [0, 1, 2, 3])


def test_a_copy_with_rows_that_match_no_official_row_is_refused_by_name(mnist_reference, qmnist_reference, cache,
                                                                         tmp_path, capsys):
    from cache_helpers import put
    from mnistforge.evaluators import errorlists as el
    from mnistforge.io.idx import read_idx

    put(cache, "qmnist", qmnist_reference / "qmnist-test-labels-idx2-int.gz")
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        put(cache, "mnist", mnist_reference / f)
    images = np.array(read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz"))
    labels = np.asarray(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    images[:30] = np.random.default_rng(0).integers(0, 256, (30, 28, 28))   # 30 rows of noise: no row map
    copy = tmp_path / "copy.npz"
    np.savez(copy, x_test=images, y_test=labels)
    files = []
    for k in range(2):
        files.append(tmp_path / f"s{k}.tsv")
        el.write_predictions(files[-1], np.roll(labels, k), labels, name=f"s{k}")
    assert main(["significance", *map(str, files), "--cluster", "writer", "--test-set", str(copy),
                 "--bootstrap", "100"]) == 2
    err = _err(capsys)
    assert "not all known" in err and "not identified as a copy of an official split" in err and "--groups" in err
