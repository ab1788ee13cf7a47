"""The QMNIST selection recipe, on the real published metadata and on small tables."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from mnistforge.builders import qmnist_recipe as qr
from mnistforge.builders.qmnist_recipe import QmnistRecipe, select_qmnist
from mnistforge.errors import BuildError, FormatError, MissingFileError


@pytest.fixture(scope="module")
def tables(qmnist_reference):
    xnist = qr.read_label_table(qmnist_reference / "xnist-labels.tsv.xz")
    train = qr.read_label_table(qmnist_reference / "qmnist-train-labels.tsv.gz")
    test = qr.read_label_table(qmnist_reference / "qmnist-test-labels.tsv.gz")
    return xnist, train, test


def test_read_label_table_matches_slow_parser(tables, qmnist_reference):
    xnist, train, test = tables
    assert xnist.shape == (qr.NIST_DIGITS, 8) and train.shape == test.shape == (60000, 8)
    with gzip.open(qmnist_reference / "qmnist-test-labels.tsv.gz", "rt") as f:
        first = [list(map(int, line.split("\t"))) for _, line in zip(range(500), f)]
    np.testing.assert_array_equal(test[:500], first)
    # the idx2-int version of the same table (int32 big-endian) reads the same
    idx = qmnist_reference / "qmnist-test-labels-idx2-int.gz"
    if idx.is_file():
        try:
            np.testing.assert_array_equal(qr.read_label_table(idx), test)
        except ImportError:
            pytest.skip("formats.idx not available")


def test_read_label_table_rejects_malformed(tmp_path):
    p = tmp_path / "bad.tsv"
    p.write_text("1\t2\t3\n")
    with pytest.raises(FormatError, match="bad.tsv"):
        qr.read_label_table(p)
    p.write_text("1\t2\t3\t4\t5\t6\t7\tx\n")
    with pytest.raises(FormatError):
        qr.read_label_table(p)
    with pytest.raises(MissingFileError):
        qr.read_label_table(tmp_path / "absent.tsv")


def test_recipe_gives_exactly_the_published_sets(tables):
    xnist, train, test = tables
    sel = select_qmnist(xnist)
    assert sel.recipe == QmnistRecipe()
    assert sel.train.size == sel.test.size == 60000
    assert set(sel.train.tolist()) == set(train[:, 5].tolist())
    assert set(sel.test.tolist()) == set(test[:, 5].tolist())
    assert (sel.train_core, sel.test_core) == (29050, 29595)
    assert np.intersect1d(sel.train, sel.test).size == 0
    # the fill parts: NIST #0-#30,949 and #35,000-#65,404 less duplicates
    assert sel.train[~np.isin(sel.train, sel.train[0::2][:29050])].max() == 30949
    assert sel.test[sel.test < 223000].min() == 35000 and sel.test[sel.test < 223000].max() == 65404
    # the published extended labels are the xnist rows of those digits
    np.testing.assert_array_equal(xnist[train[:, 5]], train)
    np.testing.assert_array_equal(xnist[test[:, 5]], test)


def test_duplicates_are_excluded(tables):
    xnist, _, _ = tables
    dups = np.flatnonzero(xnist[:, 6])
    assert dups.size == 3
    sel = select_qmnist(xnist)
    assert not np.isin(dups, sel.train).any() and not np.isin(dups, sel.test).any()
    # ignoring duplicates would change the sets (223125 is an hsf_4 writer-2100 digit)
    sel2 = select_qmnist(xnist, duplicate=np.zeros(len(xnist), bool))
    assert 223125 in sel2.train and not np.array_equal(np.sort(sel2.train), np.sort(sel.train))


def test_published_order_reproduced(tables):
    xnist, train, test = tables
    sel = qr.order_like_published(select_qmnist(xnist), train, test)
    assert sel.order == "published"
    np.testing.assert_array_equal(sel.train, train[:, 5])
    np.testing.assert_array_equal(sel.test, test[:, 5])
    np.testing.assert_array_equal(xnist[sel.test], test)
    first = xnist[sel.mnist_test]
    hsf4 = first[:, 1] == 4
    assert hsf4.sum() == 5001 and (~hsf4).sum() == 4999
    assert ((first[hsf4, 2] >= 2350) & (first[hsf4, 2] <= 2599)).all()
    np.testing.assert_array_equal(first[~hsf4, 5], np.arange(35000, 39999))


def test_mnist_train_fun_fact(tables):
    xnist, train, test = tables
    sel = qr.order_like_published(select_qmnist(xnist), train, test)
    head = xnist[sel.train[:58100]]
    even, odd = head[0::2], head[1::2]
    assert (even[:, 1] == 4).all() and ((even[:, 2] >= 2100) & (even[:, 2] <= 2349)).all()
    np.testing.assert_array_equal(odd[:, 5], np.arange(29050))
    np.testing.assert_array_equal(sel.train[58100:], np.arange(29050, 30950))


def test_deterministic_order_documented_structure(tables):
    xnist, train, _ = tables
    sel = select_qmnist(xnist)
    assert sel.order == "deterministic"
    core, fill = sel.train[0:58100:2], sel.train[1:58100:2]
    assert (xnist[core, 1] == 4).all() and (np.diff(core) > 0).all()
    np.testing.assert_array_equal(fill, np.arange(29050))
    # same structure as MNIST's training set, with the writer digits in global order
    assert (xnist[train[0:58100:2, 5], 1] == 4).all()
    # repeatable
    np.testing.assert_array_equal(select_qmnist(xnist).test, sel.test)


def test_order_like_published_rejects_other_sets(tables):
    xnist, train, test = tables
    sel = select_qmnist(xnist)
    bad = train.copy()
    bad[0, 5] = 400000
    with pytest.raises(BuildError, match="train"):
        qr.order_like_published(sel, bad, test)
    with pytest.raises(BuildError, match="test"):
        qr.order_like_published(sel, train, test[:-1])


def test_digit_table_from_index_matches_xnist_columns(tables):
    xnist, _, _ = tables
    sub = xnist[:2000]
    idx = np.zeros(2100, dtype=[("hsf", "u1"), ("writer", "i2"), ("template", "u1"), ("field", "S1"),
                                ("entry", "i4"), ("ascii", "u1"), ("digit_index", "i4"),
                                ("duplicate_of", "i4"), ("hash", "S16")])
    rows = np.sort(np.random.default_rng(0).choice(2100, 2000, replace=False))
    other = np.setdiff1d(np.arange(2100), rows)
    idx["field"][rows] = b"d"
    idx["field"][other] = b"u"
    idx["ascii"][other] = ord("A")
    idx["digit_index"][other] = -1
    idx["hsf"][rows], idx["writer"][rows], idx["entry"][rows] = sub[:, 1], sub[:, 2], sub[:, 3]
    idx["ascii"][rows] = 0x30 + sub[:, 0]
    idx["digit_index"][rows] = np.arange(2000)
    idx["hash"][rows] = [i.to_bytes(16, "big") for i in range(2000)]
    idx["hash"][rows[1500]] = idx["hash"][rows[700]]       # a planted duplicate
    idx["hash"][other] = idx["hash"][rows[5]]              # non-digits never count
    t = qr.digit_table(idx)
    np.testing.assert_array_equal(t[:, :6], sub[:, :6])
    assert t[1500, 6] == 700 and np.count_nonzero(t[:, 6]) == 1


def test_scaled_recipe_degrades_to_what_exists():
    rng = np.random.default_rng(1)
    n = 4000
    t = np.zeros((n, 8), np.int64)
    t[:, 5] = np.arange(n)
    t[:, 1] = np.repeat([0, 1, 2, 3, 4, 6, 7], [600, 600, 500, 600, 600, 600, 500])
    t[:, 2] = rng.integers(0, 4000, n)
    h4 = t[:, 1] == 4
    t[h4, 2] = np.sort(rng.integers(2100, 2600, h4.sum()))
    t[100, 6] = 99
    rec = QmnistRecipe.for_digits(n)
    assert rec.scale == pytest.approx(n / qr.NIST_DIGITS)
    sel = select_qmnist(t, rec)
    assert np.intersect1d(sel.train, sel.test).size == 0
    assert sel.train.size == rec.train_size and sel.test.size == rec.test_size
    assert 100 not in sel.train
    fill_train = sel.train[~np.isin(sel.train, np.flatnonzero(h4))]
    assert (fill_train < rec.test_fill_start).all()
    # a source too small for the targets gives smaller sets, still disjoint
    tiny = select_qmnist(t[:50], QmnistRecipe(train_size=40, test_size=40, test_fill_start=30))
    assert tiny.train.size == 30 and tiny.test.size == 20
    assert np.intersect1d(tiny.train, tiny.test).size == 0


def test_check_table():
    with pytest.raises(FormatError):
        select_qmnist(np.zeros((3, 7), np.int64))
    with pytest.raises(FormatError, match="global order"):
        select_qmnist(np.zeros((3, 8), np.int64) + 1)


def test_scaled_recipe_never_puts_a_writer_on_both_sides():
    # A tiny source: the scaled test-fill start falls inside a writer's digits.
    rows = []
    g = 0
    for hsf, writers in ((0, range(0, 6)), (4, range(2100, 2103)), (4, range(2350, 2353))):
        for wr in writers:
            for k in range(37):
                rows.append([k % 10, hsf, wr, k, 30 + k % 10, g, 0, 0])
                g += 1
    table = np.array(rows, np.int64)
    from mnistforge.builders.qmnist_recipe import QmnistRecipe, select_qmnist
    for start in range(1, 6 * 37):
        rec = QmnistRecipe(train_size=200, test_size=200, test_fill_start=start)
        sel = select_qmnist(table, rec)
        wt = set(map(tuple, table[sel.train][:, 1:3]))
        ws = set(map(tuple, table[sel.test][:, 1:3]))
        assert not wt & ws, start
        assert not set(sel.train) & set(sel.test)
