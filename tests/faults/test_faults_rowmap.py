"""Row maps of hostile copies (issue 29): duplicate rows, rows of another dataset mixed in, an
all-black image that matches many.  Real images: MNIST's test set and Debian's Fashion-MNIST."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cache_helpers import put
from test_foreign_formats import write_copy

import mnistforge
from mnistforge.checks import verify
from mnistforge.errors import DataMismatchError
from mnistforge.io.idx import read_idx
from mnistforge.loaders import DatasetSplit
from mnistforge.loaders.rowmap import AMBIGUOUS, Official, map_rows
from mnistforge.registry import get_dataset

FASHION = Path("/usr/share/datasets/fashion-mnist")
IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


@pytest.fixture(scope="module")
def mnist(mnist_reference):
    return np.asarray(read_idx(mnist_reference / IMAGES)), np.asarray(read_idx(mnist_reference / LABELS))


@pytest.fixture
def mnist_cache(cache, mnist_reference):
    for f in (IMAGES, LABELS):
        put(cache, "mnist", mnist_reference / f)
    return cache


@pytest.fixture(scope="module")
def fashion_test():
    if not (FASHION / IMAGES).is_file():
        pytest.skip(f"Debian's Fashion-MNIST not at {FASHION} (apt install dataset-fashion-mnist)")
    return np.asarray(read_idx(FASHION / IMAGES)), np.asarray(read_idx(FASHION / LABELS))


def test_duplicate_rows_map_to_the_same_official_row_and_are_counted(tmp_path, mnist_cache, mnist):
    x, y = mnist
    rows = np.r_[np.arange(300), 7, 7, 42]  # row 7 three times, 42 twice
    ds = mnistforge.load("mnist", "test", root=write_copy("npz", tmp_path, x[rows], y[rows]))
    np.testing.assert_array_equal(ds.official_index, rows)
    s = ds.row_map.summary()
    assert s["mapped"] == 303 and s["duplicates"] == 5  # 7 x 3 and 42 x 2
    assert ds.row_map.duplicate_rows.tolist() == [7, 42, 300, 301, 302]
    assert "5 rows share their official row with another row" in ds.row_map.message()


def test_rows_of_another_dataset_mixed_in_are_refused_then_named(tmp_path, mnist_cache, mnist,
                                                                 fashion_test):
    (x, y), (fx, fy) = mnist, fashion_test
    cx, cy = np.concatenate([x[:500], fx[:20]]), np.concatenate([y[:500], fy[:20]])
    path = write_copy("npz", tmp_path, cx, cy)
    with pytest.raises(DataMismatchError, match="500 of 520 rows are official mnist rows"):
        mnistforge.load("mnist", "test", root=path)
    ds = mnistforge.load("mnist", "test", root=path, trust_files=True)
    assert ds.official_index[:500].tolist() == list(range(500))
    assert (ds.official_index[500:] == -1).all() and (ds.official_split[500:] == "").all()
    assert ds.row_map.summary()["first_unmapped"] == list(range(500, 510))
    # with Fashion-MNIST's test files at hand too, verify says where the 20 rows come from
    put(mnist_cache, "fashion-mnist", FASHION / IMAGES)
    put(mnist_cache, "fashion-mnist", FASHION / LABELS)
    ident = verify(path, near=False).info["identification"][0]
    assert ident["row_map"]["by_split"] == {"mnist test": 500, "fashion-mnist test": 20}
    assert ident["verdict"] != "subset"


def _blank_reference(x, y, blanks=(10, 20, 30)):
    """MNIST's test set with three rows blanked: an official split holding one image thrice."""
    rx = x.copy()
    rx[list(blanks)] = 0
    return DatasetSplit("mnist", "test", rx, y, get_dataset("mnist"), source="blanked reference")


def test_an_all_black_image_that_matches_many_official_rows_is_ambiguous(tmp_path, cache, mnist):
    x, y = mnist
    ref = _blank_reference(x, y)
    cx = np.concatenate([x[100:200], np.zeros((1, 28, 28), np.uint8)])
    cy = np.r_[y[100:200], 0]
    rm = map_rows(cx, cy, [Official("mnist", "test", ref.images, ref.labels)], dataset="mnist",
                  claimed="test")
    assert rm.official_index[:100].tolist() == list(range(100, 200))
    assert rm.official_index[100] == -1 and rm.how[100] == AMBIGUOUS and rm.candidates[100] == 3
    s = rm.summary()
    assert (s["mapped"], s["ambiguous"], s["unmapped"], s["first_ambiguous"]) == (100, 1, 0, [100])
    ident = verify(write_copy("npz", tmp_path, cx, cy), reference=ref,
                   near=False).info["identification"][0]
    assert ident["row_map"]["ambiguous"] == 1 and ident["verdict"] != "subset"
    assert "1 match several official rows (first: 100)" in ident["message"]


def test_an_all_black_image_is_near_no_real_digit(mnist):
    x, y = mnist
    rm = map_rows(np.zeros((1, 28, 28), np.uint8), np.zeros(1), [Official("mnist", "test", x, y)],
                  dataset="mnist")
    assert rm.official_index.tolist() == [-1] and rm.summary()["unmapped"] == 1


def test_a_copy_of_fashion_rows_claimed_as_mnist_says_whose_rows_they_are(tmp_path, mnist_cache,
                                                                         fashion_test):
    put(mnist_cache, "fashion-mnist", FASHION / IMAGES)
    put(mnist_cache, "fashion-mnist", FASHION / LABELS)
    path = write_copy("npz", tmp_path, fashion_test[0][:300], fashion_test[1][:300])
    with pytest.raises(DataMismatchError, match="none of the rows is an official mnist row"):
        mnistforge.load("mnist", "test", root=path)
    with pytest.raises(DataMismatchError, match="300 are official fashion-mnist rows"):
        mnistforge.load("mnist", "test", root=path)


# --- labels that are not the official rows' labels, and splits that are not what they say (issue 40)

def _relabelled(y: np.ndarray, how: str) -> np.ndarray:
    y = y.copy()
    if how == "one label changed":
        y[5] = (y[5] + 1) % 10
    elif how == "two labels swapped":
        i, j = 3, int(np.flatnonzero(y != y[3])[0])
        y[[i, j]] = y[[j, i]]
    else:   # image-label pairs shuffled: the images in place, the labels permuted
        y = y[np.random.default_rng(0).permutation(len(y))]
    return y


@pytest.mark.parametrize("how", ["one label changed", "two labels swapped", "pairs shuffled"])
def test_a_copy_whose_labels_differ_from_the_official_rows_is_named_not_mapped(tmp_path, mnist_cache,
                                                                               mnist, how):
    x, y = mnist
    rows = np.arange(1000)[::-1]     # a reordered subset: only a row map can tell what it is
    path = write_copy("npz", tmp_path, x[rows], _relabelled(y[rows], how))
    with pytest.raises(DataMismatchError, match="carry another label than the official row"):
        mnistforge.load("mnist", "test", root=path)
    ds = mnistforge.load("mnist", "test", root=path, trust_files=True)   # the opt-out still loads
    assert ds.row_map.summary()["mapped"] == 1000


def test_test_rows_loaded_as_train_are_leakage_whatever_the_route(tmp_path, mnist_cache, mnist):
    x, y = mnist
    path = write_copy("npz", tmp_path, x, y, split="train")   # x_train: MNIST's test set
    with pytest.raises(DataMismatchError, match="not mnist train"):
        mnistforge.load(str(path), "train")                   # the path as the name
    with pytest.raises(DataMismatchError, match="not mnist train"):
        mnistforge.load("mnist", "train", root=path)          # the named load
