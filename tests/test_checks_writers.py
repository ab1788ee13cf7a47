"""Writer checks on synthetic ids and on the real QMNIST extended labels."""
from __future__ import annotations

import numpy as np

from mnistforge.checks import writers as wr
from mnistforge.io.idx import read_idx


def test_disjoint_writers_pass_shared_writers_fail_or_warn():
    tr, te = np.array([1, 1, 2, 3]), np.array([4, 5, 5])
    r = wr.check_writers(tr, te, expect_disjoint=True)
    assert r.status == "pass" and r.values["shared"] == 0
    te2 = np.array([4, 3, 3, 2])
    r = wr.check_writers(tr, te2, expect_disjoint=True)
    assert r.status == "fail"
    assert r.values["shared"] == 2 and r.values["test_images_by_shared_writers"] == 3
    r = wr.check_writers(tr, te2, expect_disjoint=False)   # official EMNIST style
    assert r.status == "warn" and r.values["shared"] == 2


def test_writer_ids_from_the_known_layouts():
    q = np.zeros((3, 8), np.int32)
    q[:, 2] = [7, 8, 9]
    assert wr.writer_ids(q).tolist() == [7, 8, 9]
    e = np.zeros((2, 6), np.int32)
    e[:, 0] = [11, 12]
    assert wr.writer_ids(e).tolist() == [11, 12]
    s = np.zeros(2, dtype=[("writer", "i4"), ("hsf", "i4")])
    s["writer"] = [5, 6]
    assert wr.writer_ids(s).tolist() == [5, 6]
    assert wr.metadata_labels(q).tolist() == [0, 0, 0]
    assert wr.expects_disjoint_writers("qmnist") is True
    assert wr.expects_disjoint_writers("emnist-letters") is False
    assert wr.expects_disjoint_writers("emnist-letters", {"split_by": "writer"}) is True


def test_real_qmnist_shares_no_writer(qmnist_reference):
    tr = read_idx(qmnist_reference / "qmnist-train-labels-idx2-int.gz")
    te = read_idx(qmnist_reference / "qmnist-test-labels-idx2-int.gz")
    r = wr.check_writers(wr.writer_ids(tr), wr.writer_ids(te), expect_disjoint=True)
    assert r.status == "pass" and r.values["shared"] == 0
    assert r.values["writers_train"] > 500 and r.values["writers_test"] > 500
