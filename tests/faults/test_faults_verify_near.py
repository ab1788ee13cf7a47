"""`verify` of a copy in MNIST's order with three images changed by one grey level: found by the
row map as near rows, it is not "identical content in another order" (it was, with MNIST test in
the cache) but a failing identification that names the near rows."""
from __future__ import annotations

import shutil

import numpy as np

from faults_helpers import cli
from mnistforge.io.idx import read_idx


def test_a_copy_with_three_changed_images_is_not_identical_content(mnist_reference, tmp_path):
    x = np.array(read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz"))
    y = np.array(read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz"))
    x[[5, 100, 2000]] ^= 1
    np.savez(tmp_path / "x.npz", x_test=x, y_test=y)
    home = tmp_path / "cache"
    (home / "mnist").mkdir(parents=True)
    for f in mnist_reference.glob("t10k-*-ubyte.gz"):
        shutil.copy(f, home / "mnist" / f.name)
    env = {"MNISTFORGE_HOME": str(home), "MNISTFORGE_OFFLINE": "1"}
    r = cli("verify", tmp_path / "x.npz", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "identical content" not in r.stdout, r.stdout
    assert "FAIL  identify[test]" in r.stdout and "3 near" in r.stdout, r.stdout
