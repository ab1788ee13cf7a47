"""Row maps of third-party copies (issue 29): each row joined to its official (dataset, split,
index) by image content, on real data: the MNIST test set (``../shared/reference``) and Debian's
Fashion-MNIST (``/usr/share/datasets/fashion-mnist``), put in an offline cache of the test's own.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from cache_helpers import put
from test_foreign_formats import write_copy
from test_label_issues import PAPER_15

import mnistforge
from mnistforge.checks import verify
from mnistforge.cli import main
from mnistforge.errors import ConfigError
from mnistforge.io.idx import read_idx

FASHION = Path("/usr/share/datasets/fashion-mnist")
FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
FASHION_FILES = FILES + ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")


def _arrays(folder: Path, prefix: str = "t10k"):
    return (np.asarray(read_idx(folder / f"{prefix}-images-idx3-ubyte.gz")),
            np.asarray(read_idx(folder / f"{prefix}-labels-idx1-ubyte.gz")))


@pytest.fixture(scope="module")
def mnist(mnist_reference):
    return _arrays(mnist_reference)


@pytest.fixture
def mnist_cache(cache, mnist_reference, reference_dir):
    """MNIST's test files and the label study in the test's offline cache."""
    for f in FILES:
        put(cache, "mnist", mnist_reference / f)
    study = reference_dir / "papers" / "northcutt2021-mnist-test-mturk.json"
    if not study.is_file():
        pytest.skip(f"the study's file is not at {study}")
    put(cache, "label-errors", study, "mnist_mturk.json")
    return cache


@pytest.fixture(scope="module")
def fashion(fashion_dir):
    if not all((fashion_dir / f).is_file() for f in FASHION_FILES):
        pytest.skip(f"Debian's Fashion-MNIST files are not all in {fashion_dir}")
    return _arrays(fashion_dir, "train"), _arrays(fashion_dir)


@pytest.fixture
def fashion_cache(cache, fashion_dir, fashion):
    for f in FASHION_FILES:
        put(cache, "fashion-mnist", fashion_dir / f)
    return cache


SUBSET = np.random.default_rng(29).permutation(10000)[:3000]


@pytest.fixture
def subset_csv(tmp_path, mnist):
    x, y = mnist
    return write_copy("csv", tmp_path, x[SUBSET], y[SUBSET])


# --------------------------------------------------------------------------- MNIST test subset

def test_a_shuffled_subset_loads_with_its_official_rows(subset_csv, mnist_cache, mnist):
    ds = mnistforge.load("mnist", "test", root=subset_csv)
    assert ds.status == {"content": "mapped"}
    np.testing.assert_array_equal(ds.official_index, SUBSET)
    assert set(ds.official_split.tolist()) == {"test"}
    assert ds.leakage["rows"] == 0
    np.testing.assert_array_equal(ds.labels, mnist[1][SUBSET])
    # unnamed (the file's name suggests mnist): the same map
    again = mnistforge.load(subset_csv, "test")
    assert again.name == "mnist"
    np.testing.assert_array_equal(again.official_index, SUBSET)
    # the map follows a selection
    np.testing.assert_array_equal(ds[10:20].official_index, SUBSET[10:20])
    np.testing.assert_array_equal(mnistforge.load(subset_csv, "test[:5]").official_index, SUBSET[:5])


def test_label_issues_exclude_drops_exactly_the_known_errors_among_the_rows(subset_csv, mnist_cache):
    errors = [i for i, o in enumerate(SUBSET.tolist()) if o in PAPER_15]
    assert errors, "the subset must hold some of the 15 known errors for the test to mean anything"
    ds = mnistforge.load("mnist", "test", root=subset_csv, label_issues="exclude")
    assert ds.label_issues.dropped == errors
    assert len(ds) == 3000 - len(errors)
    np.testing.assert_array_equal(ds.official_index, np.delete(SUBSET, errors))
    assert not set(ds.official_index.tolist()) & set(PAPER_15)
    meta = mnistforge.load("mnist", "test", root=subset_csv, with_metadata=True).metadata
    assert np.flatnonzero(meta["label_issue"]).tolist() == errors


def test_verify_calls_it_a_subset_and_carries_the_map(subset_csv, mnist_cache, tmp_path, capsys):
    rep = verify(subset_csv, near=False)
    ident = rep.info["identification"][0]
    assert (ident["verdict"], ident["dataset"], ident["split"]) == ("subset", "mnist", "test")
    rm = ident["row_map"]
    assert (rm["rows"], rm["mapped"], rm["exact"], rm["unmapped"]) == (3000, 3000, 3000, 0)
    assert rm["by_split"] == {"mnist test": 3000} and ident["leakage"]["rows"] == 0
    assert rep[f"row_map[{ident['split_key']}]"].status == "pass"
    code = main(["verify", str(subset_csv), "--no-near", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert "a subset of mnist test: 3,000 official rows" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["info"]["identification"][0]["row_map"]["mapped"] == 3000
    assert code == 0


def test_without_the_official_images_the_subset_is_refused_as_before(subset_csv, cache):
    with pytest.raises(mnistforge.errors.DataMismatchError, match="no known dataset"):
        mnistforge.load("mnist", "test", root=subset_csv)
    with pytest.raises(ConfigError, match="official order"):
        mnistforge.load("mnist", "test", root=subset_csv, trust_files=True, label_issues="exclude")


def test_a_transposed_subset_with_labels_offset_is_mapped_and_undone(tmp_path, mnist_cache, mnist):
    x, y = mnist
    rows = SUBSET[:500]
    path = tmp_path / "t.npz"
    np.savez(path, x_test=np.ascontiguousarray(x[rows].transpose(0, 2, 1)), y_test=y[rows] + 1)
    ds = mnistforge.load("mnist", "test", root=path)
    np.testing.assert_array_equal(ds.official_index, rows)
    np.testing.assert_array_equal(ds.images, x[rows])
    np.testing.assert_array_equal(ds.labels, y[rows])
    assert {c.kind for c in ds.changes} == {"transposed", "labels-1"}


def test_rows_shifted_by_a_pixel_map_by_the_near_rule(tmp_path, mnist_cache, mnist):
    x, y = mnist
    rows = SUBSET[:200]
    xs = x[rows].copy()
    xs[:5] = np.pad(x[rows[:5]], ((0, 0), (0, 0), (1, 0)))[:, :, :28]  # one pixel right
    path = write_copy("npz", tmp_path, xs, y[rows])
    ds = mnistforge.load("mnist", "test", root=path)
    np.testing.assert_array_equal(ds.official_index, rows)
    s = ds.row_map.summary()
    assert (s["exact"], s["near"]) == (195, 5)


# --------------------------------------------------------------------------- leakage

@pytest.fixture
def leaky_npz(tmp_path, fashion):
    """A Fashion-MNIST "test" of 1,000 official test rows and 50 official train rows, shuffled."""
    (trx, try_), (tex, tey) = fashion
    rng = np.random.default_rng(50)
    te, tr = rng.permutation(10000)[:1000], rng.permutation(60000)[:50]
    x, y = np.concatenate([tex[te], trx[tr]]), np.concatenate([tey[te], try_[tr]])
    p = rng.permutation(len(y))
    path = tmp_path / "fashion_leaky.npz"
    np.savez_compressed(path, x_test=x[p], y_test=y[p])
    where = np.argsort(p)[1000:]  # the copy's rows holding the train rows
    return path, np.sort(where), dict(zip(np.argsort(p)[1000:].tolist(), tr.tolist()))


def test_fifty_train_rows_in_a_test_copy_are_reported_as_leakage(leaky_npz, fashion_cache, caplog):
    path, where, train_of = leaky_npz
    rep = verify(path, near=False)
    ident = rep.info["identification"][0]
    assert (ident["dataset"], ident["verdict"]) == ("fashion-mnist", "subset")
    assert ident["leakage"]["rows"] == 50 and ident["leakage"]["by_split"] == {"train": 50}
    assert ident["leakage"]["first_rows"] == where[:10].tolist()
    check = rep[f"row_map[{ident['split_key']}]"]
    assert check.status == "fail" and "LEAKAGE: 50 rows of this test split are official " \
        "rows of train (50)" in check.message
    assert rep.exit_code != 0
    with caplog.at_level(logging.WARNING):
        ds = mnistforge.load("fashion-mnist", "test", root=path)
    assert ds.leakage["rows"] == 50 and ds.leakage["by_split"] == {"train": 50}
    assert np.flatnonzero(ds.official_split == "train").tolist() == where.tolist()
    assert [int(ds.official_index[i]) for i in where] == [train_of[i] for i in where.tolist()]
    assert any("leakage: 50 rows" in r.getMessage() for r in caplog.records)


def test_leakage_found_through_a_reference_folder_without_a_cache(leaky_npz, cache, fashion_dir,
                                                                tmp_path):
    path, where, _ = leaky_npz
    out = tmp_path / "r.json"
    code = main(["verify", str(path), "--no-near", "--reference", f"{fashion_dir}:fashion-mnist",
                 "--json", str(out)])
    ident = json.loads(out.read_text())["info"]["identification"][0]
    assert code != 0
    assert ident["leakage"]["rows"] == 50 and ident["leakage"]["first_rows"] == where[:10].tolist()
    assert ident["row_map"]["by_split"] == {"fashion-mnist test": 1000, "fashion-mnist train": 50}


def test_an_unnamed_identical_copy_maps_row_to_row_and_takes_label_issues(tmp_path, cache, mnist,
                                                                          reference_dir):
    study = reference_dir / "papers" / "northcutt2021-mnist-test-mturk.json"
    if not study.is_file():
        pytest.skip(f"the study's file is not at {study}")
    put(cache, "label-errors", study, "mnist_mturk.json")  # no official images needed
    path = write_copy("npz", tmp_path, *mnist)
    ds = mnistforge.load(path, "test")
    assert ds.name == "mnist" and ds.official_index.tolist() == list(range(10000))
    clean = mnistforge.load(path, "test", label_issues="exclude")
    assert sorted(clean.label_issues.dropped) == PAPER_15 and len(clean) == 10000 - 15


def test_label_issues_relabel_on_a_subset_follows_the_official_rows(subset_csv, mnist_cache):
    from test_label_issues import MAJORITY_GUESSED, NO_MAJORITY

    ds = mnistforge.load("mnist", "test", root=subset_csv, label_issues="relabel")
    where = {o: i for i, o in enumerate(SUBSET.tolist())}
    assert ds.label_issues.dropped == sorted(where[o] for o in NO_MAJORITY if o in where)
    assert {where[o]: new for o, new in MAJORITY_GUESSED.items() if o in where} == \
        {i: new for i, (_, new) in ds.label_issues.relabelled.items()}
    assert len(ds) == 3000 - len(ds.label_issues.dropped)
