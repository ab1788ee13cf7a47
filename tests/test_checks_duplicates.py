"""Duplicate and leakage checks, and the blocked near-duplicate search against brute force."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks_data import synth_digits
from mnistforge.checks import duplicates as dp


@pytest.fixture(scope="module")
def splits():
    return synth_digits(300, seed=2), synth_digits(80, seed=3)


def test_exact_within_finds_a_copied_image(splits):
    train, _ = splits
    assert dp.check_exact_within(train, "train").status == "pass"
    dup = train.copy()
    dup[200] = dup[17]
    r = dp.check_exact_within(dup, "train")
    assert r.status == "warn"
    assert r.values["groups"] == 1 and r.values["redundant"] == 1
    assert r.values["examples"] == [[17, 200]]


def test_exact_groups_are_byte_identical_even_on_digest_collision():
    x = np.zeros((4, 28, 28), np.uint8)
    x[1, 3, 3] = 1
    x[3, 3, 3] = 1
    # Force every digest equal: the byte comparison must still separate them.
    groups = dp.find_exact_duplicates(x, digests=np.zeros(4, np.uint64))
    assert [g.tolist() for g in groups] == [[0, 2], [1, 3]]


def test_train_test_leakage_fails_on_one_copied_image(splits):
    train, test = splits
    assert dp.check_exact_across(train, test).status == "pass"
    leak = test.copy()
    leak[41] = train[123]
    r = dp.check_exact_across(train, leak)
    assert r.status == "fail"
    assert r.values["test_images"] == 1 and r.values["examples"] == [[123, 41]]


def test_near_duplicates_warn_with_counts_and_examples(splits):
    train, test = splits
    assert dp.check_near_across(train, test).status == "pass"
    near = test.copy()
    near[5] = train[9]
    near[5, 10, 10] = 255 - near[5, 10, 10]  # one pixel changed: L2 <= 255
    near[6] = train[11]
    r = dp.check_near_across(train, near, threshold=256)
    d = abs(int(train[9, 10, 10]) - int(255 - train[9, 10, 10]))
    assert r.status == "warn"
    assert r.values["test_images"] == 2 and r.values["test_images_near_not_exact"] == 1
    assert r.values["examples_train_test_l2"] == [[9, 5, float(d)]]


def test_blocked_search_equals_brute_force_on_real_like_data(splits):
    train, test = splits
    q = np.concatenate([test[:40], train[:20]])
    rng = np.random.default_rng(0)
    noise = rng.integers(-6, 7, q[40:].shape)
    q[40:] = np.clip(q[40:].astype(int) + noise, 0, 255).astype(np.uint8)
    for t in (0.0, 60.0, 400.0, 1500.0):
        fast = dp.find_near_duplicates(q, train, t, block=7)
        slow = dp.nearest_brute_force(q, train, t)
        assert fast.pairs.tolist() == slow.pairs.tolist(), t
        np.testing.assert_allclose(fast.l2, slow.l2, rtol=1e-5)
        assert dp.find_near_duplicates(q, train, t, prefilter=False).pairs.tolist() == \
            slow.pairs.tolist()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), t=st.floats(0, 3000))
def test_blocked_search_is_exact_on_random_images(seed, t):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (30, 28, 28), dtype=np.uint8)
    q = base[rng.integers(0, 30, 12)].astype(int)
    q += rng.integers(-40, 41, q.shape) * (rng.random(q.shape) < 0.3)
    q = np.clip(q, 0, 255).astype(np.uint8)
    fast = dp.find_near_duplicates(q, base, t, block=5)
    slow = dp.nearest_brute_force(q, base, t)
    assert fast.pairs.tolist() == slow.pairs.tolist()


def test_digests_tell_images_apart_whatever_their_row_length():
    """Rows padded to whole 8-byte words (5 x 5 = 25 bytes) still separate images that
    differ only in their last byte; equal images share a digest; the digest is the same
    for the same bytes in another array (no dependence on position or batch)."""
    rng = np.random.default_rng(3)
    for shape in ((5, 5), (28, 28)):
        x = rng.integers(0, 256, (20000, *shape), dtype=np.uint8)
        x[1] = x[0]
        x[2] = x[0]
        x[2].reshape(-1)[-1] ^= 1
        d = dp.xorshift_image_digests(x)
        assert d[0] == d[1] and d[0] != d[2]
        assert np.unique(d).size == len(x) - 1
        assert dp.xorshift_image_digests(x[[12345]])[0] == d[12345]


def test_the_near_search_in_column_tiles_finds_what_brute_force_finds(monkeypatch):
    """The products are made and compared a tile of columns at a time: tiles that do not divide
    the base (and a tile of one column) give the pairs, distances and candidates of one tile."""
    from mnistforge.io import similar

    rng = np.random.default_rng(3)
    base = rng.integers(0, 40, (301, 28, 28), dtype=np.uint8)
    query = base[rng.choice(301, 40, replace=False)].copy()
    query[:, 5:9, 5:9] += rng.integers(0, 3, (40, 4, 4), dtype=np.uint8)
    query[::3] = rng.integers(0, 256, (14, 28, 28), dtype=np.uint8)   # far from everything
    want = similar.nearest_brute_force(query, base, 30.0)
    got = {}
    for cols in (1, 7, 64, 10_000):
        monkeypatch.setattr(similar, "_COLS", cols)
        nd = similar.find_near_duplicates(query, base, 30.0, block=16)
        got[cols] = (nd.pairs.tolist(), np.round(nd.l2, 4).tolist(), nd.candidates)
    assert len(set(map(repr, got.values()))) == 1
    assert got[7][0] == want.pairs.tolist() and len(want) > 10
    np.testing.assert_allclose(got[7][1], want.l2, rtol=1e-5)
