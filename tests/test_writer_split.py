"""Writers of the official EMNIST ``.mat`` files, and writer-disjoint re-splits without SD19.

The ``.mat`` files are written here with scipy in EMNIST's structure (``dataset.train`` /
``dataset.test`` with ``images`` N x 784, ``labels`` and ``writers`` N x 1, plus ``mapping``):
many writers, each writing a varying number of characters, every character put on the
official train or test side at random, as EMNIST did.  Nothing is downloaded.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.io

import mnistforge
from mnistforge.errors import ConfigError
from mnistforge.loaders import ClassBalance, writer_split

N_WRITERS = 40


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")  # tests never download


def emnist_letters_rows(seed: int = 0):
    """(stored images N x 28 x 28 as the files hold them, labels 1..26, writers, is_test)."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(100, 4000), N_WRITERS, replace=False)
    per_writer = rng.integers(4, 40, N_WRITERS)
    writers = np.repeat(ids, per_writer)
    rng.shuffle(writers)
    n = len(writers)
    labels = rng.integers(1, 27, n)
    images = np.zeros((n, 28, 28), np.uint8)
    images[:, 8:20, 12:16] = 255                 # ink in the middle, background frame
    images[:, 4, 4] = np.arange(n) % 256         # every image differs: rows can be traced
    images[:, 4, 5] = np.arange(n) // 256
    is_test = rng.random(n) < 1 / 7              # EMNIST's split: random per character
    return images, labels, writers, is_test


def write_mat(path, images, labels, writers, is_test):
    def part(sel):
        return {"images": images[sel].reshape(int(sel.sum()), -1),
                "labels": labels[sel].reshape(-1, 1).astype(np.float64),
                "writers": writers[sel].reshape(-1, 1).astype(np.uint16)}
    mapping = np.array([[i, 64 + i, 96 + i] for i in range(1, 27)])
    scipy.io.savemat(path, {"dataset": {"train": part(~is_test), "test": part(is_test),
                                        "mapping": mapping}}, do_compression=True)
    return path


@pytest.fixture
def mat(tmp_path):
    rows = emnist_letters_rows()
    return write_mat(tmp_path / "emnist-letters.mat", *rows), rows


@pytest.fixture
def loaded(mat):
    path, rows = mat
    return [mnistforge.load(path, s, with_metadata=True) for s in ("train", "test")], rows


def test_mat_load_gives_the_writer_of_every_row(mat):
    path, (images, labels, writers, is_test) = mat
    for split, sel in (("train", ~is_test), ("test", is_test)):
        ds = mnistforge.load(path, split, with_metadata=True)
        assert ds.name == "emnist-letters" and ds.split == split
        assert ds.metadata is not None and ds.metadata.dtype.names == ("writer",)
        assert ds.metadata["writer"].tolist() == writers[sel].tolist()
        assert np.array_equal(ds.labels, labels[sel])
        assert np.array_equal(ds.images, images[sel].transpose(0, 2, 1))  # upright
        assert mnistforge.load(path, split).metadata is None  # only when asked for
        head = mnistforge.load(path, f"{split}[:5]", with_metadata=True)  # a slice keeps its rows
        assert head.metadata["writer"].tolist() == writers[sel][:5].tolist()


def test_writer_split_is_writer_disjoint_and_holds_every_row_once(loaded):
    (train, test), (images, labels, writers, is_test) = loaded
    sides = writer_split([train, test], test_fraction=0.2, seed=3)
    a, b = sides.train, sides.test
    assert (a.split, b.split) == ("train-by-writer", "test-by-writer")
    assert a.name == b.name == "emnist-letters" and a.classes == train.classes
    assert not set(a.metadata["writer"]) & set(b.metadata["writer"])
    assert sides.writers == {"train": len(set(a.metadata["writer"])),
                             "test": len(set(b.metadata["writer"]))}
    assert sum(sides.writers.values()) == N_WRITERS
    # every pooled row on exactly one side, with its image, label and writer
    origin = {"train": (train, np.flatnonzero(~is_test)), "test": (test, np.flatnonzero(is_test))}
    seen = []
    for side in (a, b):
        for i, (split, row) in enumerate(zip(side.metadata["from_split"], side.metadata["from_row"])):
            src, where = origin[str(split)]
            j = where[row]                                # row of the generated data
            assert np.array_equal(side.images[i], images[j].T)
            assert side.labels[i] == labels[j] and side.metadata["writer"][i] == writers[j]
            assert np.array_equal(side.images[i], src.images[row])
            seen.append((str(split), int(row)))
    assert sorted(seen) == sorted([("train", i) for i in range(len(train))]
                                  + [("test", i) for i in range(len(test))])
    # whole writers: the test share is the reachable one closest to the fraction asked
    n = len(labels)
    assert abs(len(b) - 0.2 * n) <= np.bincount(np.unique(writers, return_inverse=True)[1]).max()


def test_same_seed_same_sides_whatever_the_order_of_the_inputs(loaded):
    (train, test), _ = loaded
    one = writer_split([train, test], test_fraction=0.25, seed=11)
    two = writer_split([test, train], test_fraction=0.25, seed=11)
    assert set(one.test.metadata["writer"]) == set(two.test.metadata["writer"])
    again = writer_split([train, test], test_fraction=0.25, seed=11)
    for side in ("train", "test"):
        x, y = getattr(one, side), getattr(again, side)
        assert np.array_equal(x.images, y.images) and np.array_equal(x.labels, y.labels)
        assert np.array_equal(x.metadata, y.metadata)
    other = writer_split([train, test], test_fraction=0.25, seed=12)
    assert set(other.test.metadata["writer"]) != set(one.test.metadata["writer"])


def test_class_balance_of_each_side(loaded):
    (train, test), (_, labels, _, _) = loaded
    sides = writer_split([train, test], test_fraction=0.2, seed=3)
    bal = sides.balance
    present = np.unique(labels)
    assert bal.labels.tolist() == present.tolist()
    assert bal.names == [train.classes[i] for i in present]
    pool_share = np.bincount(labels, minlength=27)[present] / len(labels)
    worst = {}
    for side in ("train", "test"):
        y = getattr(sides, side).labels
        counts = np.bincount(y, minlength=27)[present]
        assert bal.counts[side].tolist() == counts.tolist()
        dev = counts / len(y) / pool_share - 1
        assert bal.max_deviation[side] == pytest.approx(np.abs(dev).max())
        worst[side] = train.classes[present[np.argmax(np.abs(dev))]]
        assert bal.worst[side] == worst[side]
    assert (bal.counts["train"] + bal.counts["test"]).tolist() == \
        np.bincount(labels, minlength=27)[present].tolist()
    lines = bal.table()
    assert len(lines) == 1 + len(present) and lines[0].split()[:3] == ["class", "train", "test"]
    assert f"(class {worst['test']!r})" in bal.summary()
    assert sides.to_dict()["balance"]["counts"]["test"] == bal.counts["test"].tolist()


def test_balance_of_a_perfect_split_is_zero():
    bal = ClassBalance.of({"train": np.array([0, 1, 0, 1]), "test": np.array([1, 0])}, ["a", "b"])
    assert bal.max_deviation == {"train": 0.0, "test": 0.0}


def test_writer_split_refuses_what_it_cannot_split(loaded, tmp_path):
    (train, test), _ = loaded
    bare = train.select(slice(None))
    bare.metadata = None
    with pytest.raises(ConfigError, match="with_metadata=True"):
        writer_split(bare)
    with pytest.raises(ConfigError, match="test_fraction"):
        writer_split([train, test], test_fraction=1.0)
    one = train.select(train.metadata["writer"] == train.metadata["writer"][0])
    with pytest.raises(ConfigError, match="two writers"):
        writer_split(one)
    other = mnistforge.load(write_mat(tmp_path / "emnist-digits.mat", *_digits()), "train",
                            with_metadata=True)
    with pytest.raises(ConfigError, match="different datasets"):
        writer_split([train, other])


def _digits():
    images, labels, writers, is_test = emnist_letters_rows(1)
    return images, labels % 10, writers, is_test


def test_the_same_split_twice_is_refused(loaded):
    (train, test), _ = loaded
    with pytest.raises(ConfigError, match="same split is given twice"):
        writer_split([train, test, train])
    # two different slices of one split are distinct rows: pooled
    halves = [train.select(slice(0, 300)), train.select(slice(300, None))]
    assert len(writer_split(halves, seed=1).train) + len(writer_split(halves, seed=1).test) == len(train)


def test_splits_made_in_memory_pool_unless_they_are_the_same_arrays():
    from mnistforge.loaders import DatasetSplit
    from mnistforge.registry import get_dataset

    def made(first_writer):
        meta = np.zeros(20, dtype=[("writer", "i4")])
        meta["writer"] = first_writer + np.arange(20) % 4
        return DatasetSplit("emnist-digits", "train", np.zeros((20, 28, 28), np.uint8),
                            np.arange(20) % 10, get_dataset("emnist-digits"), meta)
    a, b = made(0), made(10)                      # no source, same split name, other rows
    assert len(writer_split([a, b], seed=2).test) + len(writer_split([a, b], seed=2).train) == 40
    with pytest.raises(ConfigError, match="same split is given twice"):
        writer_split([a, a])
