"""EMNIST class mappings and splits, on fabricated SD19 index tables."""
from __future__ import annotations

import numpy as np
import pytest

from mnistforge.builders.emnist_splits import (DATASETS, MERGED_LETTERS, OFFICIAL_SIZES,
                                               SD19_CLASS_TOTALS,
                                               EmnistSplitConfig, apportion, class_list,
                                               label_table, make_metadata, make_splits,
                                               mapping_lines, split_sides)
from mnistforge.errors import BuildError, ConfigError

SD19_TOTAL = 814_255  # NIST's published number of SD19 characters (spec/sd19.md)

DTYPE = [("hsf", "u1"), ("writer", "i2"), ("template", "u1"), ("field", "S1"),
         ("entry", "i4"), ("ascii", "u1")]
PARTITIONS = (0, 1, 2, 3, 4, 6, 7)


def fabricate_index(scale=1.0, seed=0, n_writers=3600):
    """An SD19-like index with the official class totals (scaled), writers in partitions."""
    rng = np.random.default_rng(seed)
    chars = list(SD19_CLASS_TOTALS)
    counts = np.array([max(1, round(SD19_CLASS_TOTALS[c] * scale)) for c in chars])
    asc = np.repeat([ord(c) for c in chars], counts)
    rng.shuffle(asc)
    n = len(asc)
    idx = np.zeros(n, DTYPE)
    idx["ascii"] = asc
    n_writers = max(14, min(n_writers, n // 20))
    idx["writer"] = np.sort(rng.integers(0, n_writers, n))
    idx["hsf"] = np.asarray(PARTITIONS)[idx["writer"] * len(PARTITIONS) // n_writers]
    is_digit = (asc >= 48) & (asc <= 57)
    idx["field"] = np.where(is_digit, b"d", np.where(asc < 97, b"u", b"l"))
    idx["entry"] = np.arange(n) % 100
    return idx


@pytest.fixture(scope="module")
def full_index():
    return fabricate_index(1.0)


@pytest.fixture(scope="module")
def full_splits(full_index):
    cfg = EmnistSplitConfig(seed=2)
    is_test = split_sides(full_index, cfg)
    return is_test, make_splits(full_index, DATASETS, cfg, is_test=is_test)


# ----------------------------------------------------------------------------- mappings
def test_byclass_mapping_is_official():
    t = label_table("byclass")
    assert len(class_list("byclass")) == 62
    assert [t[ord(c)] for c in "09AZaz"] == [0, 9, 10, 35, 36, 61]
    assert mapping_lines("byclass")[10] == "10 65" and mapping_lines("byclass")[61] == "61 122"


def test_bymerge_and_balanced_have_exactly_the_11_separate_lowercase():
    for kind in ("bymerge", "balanced"):
        t = label_table(kind)
        chars = class_list(kind)
        assert len(chars) == 47
        lower_labels = {c: int(t[ord(c)]) for c in "abcdefghijklmnopqrstuvwxyz"}
        separate = [c for c, lab in lower_labels.items() if lab >= 36]
        assert "".join(separate) == "abdefghnqrt"
        assert [lower_labels[c] for c in separate] == list(range(36, 47))
        merged = [c for c, lab in lower_labels.items() if lab < 36]
        assert "".join(merged).upper() == MERGED_LETTERS and len(merged) == 15
        for c in merged:
            assert t[ord(c)] == t[ord(c.upper())]
        lines = mapping_lines(kind)
        assert lines[36:] == [f"{36 + i} {ord(c)}" for i, c in enumerate("abdefghnqrt")]


def test_letters_labels_start_at_one():
    t = label_table("letters")
    for i, (u, lo) in enumerate(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")):
        assert t[ord(u)] == t[ord(lo)] == i + 1
    assert (t[[ord(d) for d in "0123456789"]] == -1).all()
    assert mapping_lines("letters")[0] == "1 65 97" and len(mapping_lines("letters")) == 26
    assert class_list("letters")[0] == "" and len(class_list("letters")) == 27


def test_paper37_letters_and_digits():
    t = label_table("letters37")
    assert len(class_list("letters37")) == 37
    assert t[ord("A")] == 0 and t[ord("c")] == t[ord("C")] == 2 and t[ord("t")] == 36
    assert (t[[ord(d) for d in "0123456789"]] == -1).all()
    for kind in ("digits", "mnist"):
        assert class_list(kind) == list("0123456789")
        assert (label_table(kind)[65:123] == -1).all()


def test_class_totals_are_sd19s():
    assert sum(SD19_CLASS_TOTALS.values()) == SD19_TOTAL
    assert len(SD19_CLASS_TOTALS) == 62


def test_apportion_sums_and_is_proportional():
    rng = np.random.default_rng(0)
    for _ in range(20):
        c = rng.integers(0, 1000, 30)
        total = int(rng.integers(0, c.sum() + 1))
        a = apportion(c, total)
        assert a.sum() == total
        assert np.all(np.abs(a - c * total / c.sum()) < 1)


# ----------------------------------------------------------------------------- official sizes
def test_official_sizes_from_a_complete_source(full_index, full_splits):
    assert len(full_index) == SD19_TOTAL
    splits = full_splits[1]
    for name, d in splits.items():
        assert (len(d.train_rows), len(d.test_rows)) == OFFICIAL_SIZES[name], name
    # balanced datasets: equal per-class counts, validation = test size, itself balanced
    for name in ("balanced", "letters", "digits", "mnist"):
        d = splits[name]
        ncls = 26 if name == "letters" else len(d.classes)
        assert d.n_validation == len(d.test_rows)
        val = d.train_labels[-d.n_validation:]
        tr_only = d.train_labels[:-d.n_validation]
        for arr in (d.train_labels, d.test_labels, val, tr_only):
            counts = np.bincount(arr, minlength=len(d.classes))
            counts = counts[1:] if name == "letters" else counts
            assert len(counts) == ncls and (counts == counts[0]).all(), name
        assert d.quota["per_class"]["train"] * ncls == len(d.train_rows)
        assert d.quota["limited_by"] == {}
    p37 = make_splits(full_index, ["letters"],
                      EmnistSplitConfig(letters_variant="paper37"))["letters"]
    assert (len(p37.train_rows), len(p37.test_rows)) == OFFICIAL_SIZES["letters37"]
    assert p37.kind == "letters37" and p37.train_labels.max() == 36


def test_byclass_bymerge_hold_every_character_once(full_index, full_splits):
    s = {k: full_splits[1][k] for k in ("byclass", "bymerge")}
    for d in s.values():
        allrows = np.concatenate([d.train_rows, d.test_rows])
        assert np.array_equal(np.sort(allrows), np.arange(len(full_index)))
    assert np.array_equal(s["byclass"].train_rows, s["bymerge"].train_rows)
    # labels follow the mapping
    bc = s["byclass"]
    assert np.array_equal(bc.train_labels, label_table("byclass")[
        full_index["ascii"][bc.train_rows]])
    # stratified: every class's test share close to 1/7
    cls = label_table("byclass")[full_index["ascii"]]
    is_test = np.zeros(len(full_index), bool)
    is_test[bc.test_rows] = True
    share = np.bincount(cls[is_test], minlength=62) / np.bincount(cls, minlength=62)
    assert np.all(np.abs(share - 1 / 7) < 1e-3)


def test_random_split_mixes_partitions(full_index, full_splits):
    is_test = full_splits[0]
    for p in PARTITIONS:
        frac = is_test[full_index["hsf"] == p].mean()
        assert 0.12 < frac < 0.165, p


def test_tests_are_inside_the_common_test_side(full_index, full_splits):
    is_test, s = full_splits
    for d in s.values():
        assert is_test[d.test_rows].all() and not is_test[d.train_rows].any()
        seen = np.bincount(np.concatenate([d.train_rows, d.test_rows]),
                           minlength=len(full_index))
        assert seen.max() == 1


def test_same_seed_same_split_other_seed_differs():
    idx = fabricate_index(0.05)
    a = make_splits(idx, ["balanced", "byclass"], EmnistSplitConfig(seed=3))
    b = make_splits(idx, ["balanced", "byclass"], EmnistSplitConfig(seed=3))
    c = make_splits(idx, ["balanced", "byclass"], EmnistSplitConfig(seed=4))
    for k in a:
        assert np.array_equal(a[k].train_rows, b[k].train_rows)
        assert np.array_equal(a[k].test_rows, b[k].test_rows)
        assert not np.array_equal(a[k].train_rows, c[k].train_rows)


# ----------------------------------------------------------------------------- scaled sources
@pytest.mark.parametrize("scale", [0.01, 0.05])
def test_scaled_source_scales_balanced_quotas(scale):
    idx = fabricate_index(scale, seed=1)
    s = make_splits(idx, DATASETS, EmnistSplitConfig(seed=0))
    n = len(idx)
    assert len(s["byclass"].test_rows) == n - (6 * n) // 7
    for name, (off_tr, off_te) in (("balanced", (2400, 400)), ("letters", (4800, 800)),
                                   ("digits", (24000, 4000)), ("mnist", (6000, 1000))):
        d = s[name]
        q = d.quota
        assert abs(q["scale"] - scale) < 0.01
        want_te = max(1, int(np.floor(off_te * q["scale"] + 1e-9)))
        assert q["wanted_per_class"] == {"train": 6 * want_te, "test": want_te}
        # actual = wanted unless a class on that side is too small, and then reported
        for side, n_side in (("train", q["per_class"]["train"]),
                             ("test", q["per_class"]["test"])):
            if n_side < q["wanted_per_class"][side]:
                assert side in q["limited_by"]
                assert n_side == q["smallest_class"][side][1]
            else:
                assert n_side == q["wanted_per_class"][side]
        ncls = 26 if name == "letters" else len(d.classes)
        assert len(d.test_rows) == ncls * q["per_class"]["test"]
        assert d.n_validation == ncls * q["per_class"]["validation"]


def test_small_class_limits_quota_and_is_reported():
    idx = fabricate_index(0.05, seed=2)
    # remove most 'f' characters: balanced must shrink to what 'f' allows
    f_rows = np.flatnonzero(idx["ascii"] == ord("f"))
    idx = np.delete(idx, f_rows[10:])
    d = make_splits(idx, ["balanced"], EmnistSplitConfig(seed=0))["balanced"]
    q = d.quota
    assert q["limited_by"].get("train") == "f" or q["limited_by"].get("test") == "f"
    counts = np.bincount(d.train_labels, minlength=47)
    assert (counts == counts[0]).all() and counts[0] <= 10


def test_missing_class_raises():
    idx = fabricate_index(0.01)
    idx = idx[idx["ascii"] != ord("q")]
    with pytest.raises(BuildError, match="q"):
        make_splits(idx, ["balanced"])
    # byclass is fine without it
    d = make_splits(idx, ["byclass"])["byclass"]
    assert len(d.train_rows) + len(d.test_rows) == len(idx)


# ----------------------------------------------------------------------------- writer split
def test_writer_disjoint_split(full_index):
    cfg = EmnistSplitConfig(seed=1, split_by="writer")
    is_test = split_sides(full_index, cfg)
    w = full_index["writer"]
    assert len(np.intersect1d(w[is_test], w[~is_test])) == 0
    assert abs(is_test.mean() - 1 / 7) < 0.01
    for p in PARTITIONS:  # every partition contributes writers to both sides
        sel = full_index["hsf"] == p
        assert 0.08 < is_test[sel].mean() < 0.2
    s = make_splits(full_index, DATASETS, cfg, is_test=is_test)
    for d in s.values():
        assert len(np.intersect1d(w[d.train_rows], w[d.test_rows])) == 0
    b = s["balanced"]
    assert (np.bincount(b.test_labels) == b.quota["per_class"]["test"]).all()


def test_metadata_columns():
    idx = fabricate_index(0.01)
    rows = np.array([5, 0, 17])
    m = make_metadata(idx, rows)
    assert m.dtype == np.int32 and m.shape == (3, 6)
    assert m[:, 0].tolist() == idx["writer"][rows].tolist()
    assert m[:, 1].tolist() == idx["hsf"][rows].tolist()
    fmap = {b"d": 0, b"u": 1, b"l": 2, b"c": 3}
    assert m[:, 2].tolist() == [fmap[f] for f in idx["field"][rows]]
    assert m[:, 3].tolist() == idx["ascii"][rows].tolist()
    assert m[:, 4].tolist() == idx["entry"][rows].tolist()
    assert m[:, 5].tolist() == rows.tolist()


@pytest.mark.parametrize("kw", [dict(seed=-1), dict(split_by="hsf"), dict(letters_variant="x"),
                                dict(scale=0)])
def test_bad_split_config(kw):
    with pytest.raises(ConfigError):
        EmnistSplitConfig(**kw)


def test_unknown_dataset_and_foreign_class():
    idx = fabricate_index(0.01)
    with pytest.raises(ConfigError):
        make_splits(idx, ["kanji"])
    idx["ascii"][0] = ord("#")
    with pytest.raises(BuildError, match="62 NIST classes"):
        split_sides(idx)


def test_duplicate_images_stay_on_one_side():
    # SD19's duplicated images must not straddle train and test (leakage).
    from mnistforge.builders.emnist_splits import EmnistSplitConfig, split_sides
    n = 7000
    idx = np.zeros(n, dtype=[("ascii", "u1"), ("duplicate_of", "i4"), ("writer", "i2"),
                             ("hsf", "u1")])
    rng = np.random.default_rng(0)
    idx["ascii"] = rng.integers(0x30, 0x3A, n)
    idx["duplicate_of"] = -1
    pairs = [(5, 6000), (10, 6001), (20, 6002)]
    for a, b in pairs:
        idx["ascii"][b] = idx["ascii"][a]
        idx["duplicate_of"][b] = a
    for seed in range(20):
        no_dup = idx.copy()
        no_dup["duplicate_of"] = -1
        plain = split_sides(no_dup, EmnistSplitConfig(seed=seed))
        sides = split_sides(idx, EmnistSplitConfig(seed=seed))
        for a, b in pairs:
            assert sides[a] == sides[b]
        # per-class side sizes unchanged
        for c in range(0x30, 0x3A):
            m = idx["ascii"] == c
            assert sides[m].sum() == plain[m].sum()
        assert sides.sum() == plain.sum()
