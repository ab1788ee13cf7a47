"""Reference matching: the counts and quartiles reported equal the ones constructed."""
from __future__ import annotations

import numpy as np
import pytest

from checks_data import synth_digits, synth_labels
from mnistforge.checks import reference as rf

N, N_SHIFT, N_PERTURB = 400, 37, 120


@pytest.fixture(scope="module")
def constructed():
    """A rebuilt split and a synthetic "official" one made from it.

    The official images are the rebuilt ones, 37 of them shifted by one pixel
    (all eight directions) and 120 others perturbed on a few pixels; the
    distances each pair must show are computed here, from the construction.
    """
    rng = np.random.default_rng(7)
    rebuilt = synth_digits(N, seed=8)
    labels = synth_labels(N, seed=8)
    official = rebuilt.copy()
    pick = rng.permutation(N)
    shifted, perturbed = pick[:N_SHIFT], pick[N_SHIFT:N_SHIFT + N_PERTURB]
    for k, i in enumerate(shifted):
        dy, dx = rf.SHIFTS[1 + k % 8]
        official[i] = rf.shift_images(rebuilt[i:i + 1], dy, dx)[0]
    for i in perturbed:
        img = official[i].astype(int)
        where = rng.choice(784, int(rng.integers(1, 6)), replace=False)
        img.reshape(-1)[where] += rng.integers(-9, 10, where.size)
        official[i] = np.clip(img, 0, 255).astype(np.uint8)
    l2 = np.zeros(N)
    mx = np.zeros(N)
    d = official[perturbed].astype(int) - rebuilt[perturbed].astype(int)
    l2[perturbed] = np.sqrt((d ** 2).sum(axis=(1, 2)))
    mx[perturbed] = np.abs(d).max(axis=(1, 2))
    expected = {
        "unshifted": N - N_SHIFT, "shifted": N_SHIFT,
        "l2_quartiles": [round(float(v), 2) for v in np.percentile(l2, [0, 25, 50, 75, 100])],
        "maxdiff_quartiles": [round(float(v), 2) for v in np.percentile(mx, [0, 25, 50, 75, 100])],
    }
    return rebuilt, labels, official, expected


def _assert_stats(values, expected):
    for k, v in expected.items():
        assert values[k] == v, k


def test_known_order_reports_the_constructed_statistics(constructed):
    rebuilt, labels, official, expected = constructed
    r = rf.check_reference(rebuilt, official, labels, labels)
    assert r.status == "pass", r.message
    assert r.values["order"] == "known" and r.values["matched"] == N
    _assert_stats(r.values, expected)


def test_assignment_recovers_a_shuffled_reference(constructed):
    rebuilt, labels, official, expected = constructed
    perm = np.random.default_rng(9).permutation(N)
    m = rf.match_reference(rebuilt[perm], official, labels[perm], labels)
    assert m.order == "assignment"
    assert (m.index == perm).all()
    r = rf.check_reference(rebuilt[perm], official, labels[perm], labels)
    assert r.status == "pass"
    _assert_stats(r.values, expected)
    # Without labels: one block, same answer.
    r = rf.check_reference(rebuilt[perm], official)
    _assert_stats(r.values, expected)


def test_a_flipped_label_fails(constructed):
    rebuilt, labels, official, _ = constructed
    bad = labels.copy()
    bad[10] = (bad[10] + 1) % 10
    r = rf.check_reference(rebuilt, official, bad, labels)
    assert r.status == "fail" and r.values["label_mismatches"] == 1
    assert r.values["label_mismatch_examples"] == [10]


def test_a_split_one_image_short_fails(constructed):
    rebuilt, labels, official, _ = constructed
    r = rf.check_reference(rebuilt[:-1], official, labels[:-1], labels)
    assert r.status == "fail" and r.values["reference_unmatched"] == 1


def test_a_foreign_image_is_a_far_pair(constructed):
    rebuilt, labels, official, _ = constructed
    other = rebuilt.copy()
    other[3] = synth_digits(1, seed=99)[0]
    r = rf.check_reference(other, official, labels, labels)
    assert r.status == "warn" and r.values["far_pairs"] == 1
    assert r.values["worst"][0][:2] == [3, 3]


def test_longer_rebuilt_split_matches_the_reference_prefix(constructed):
    # QMNIST's test split starts with MNIST's 10,000 test digits.
    rebuilt, labels, official, _ = constructed
    r = rf.check_reference(rebuilt, official[:300], labels, labels[:300])
    assert r.status == "pass" and r.values["order"] == "known" and r.values["matched"] == 300


def test_shift_ties_prefer_no_shift():
    x = np.zeros((1, 28, 28), np.uint8)
    l2, mx, sh = rf.paired_distances(x, x)
    assert sh.tolist() == [0] and l2.tolist() == [0.0] and mx.tolist() == [0]
