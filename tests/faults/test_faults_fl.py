"""Hostile inputs of the federated-learning path: writers in .mat files, writer re-splits."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.io

import mnistforge
from mnistforge.errors import FormatError


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("MNISTFORGE_OFFLINE", "1")


def test_a_mat_file_with_fewer_writers_than_images_is_refused(tmp_path):
    n = 12
    images = np.zeros((n, 784), np.uint8)
    images[:, 300:310] = 255
    part = {"images": images, "labels": np.arange(1, n + 1).reshape(-1, 1),
            "writers": np.arange(n - 2).reshape(-1, 1)}        # two writers short
    path = tmp_path / "emnist-letters.mat"
    scipy.io.savemat(path, {"dataset": {"train": part, "test": part}})
    with pytest.raises(FormatError, match=r"writers do not match the images.*12 writer ids"):
        mnistforge.load(path, "train", with_metadata=True)
