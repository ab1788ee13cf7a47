"""Image statistics (QMNIST style) and orientation sanity."""
from __future__ import annotations

import numpy as np
import pytest

from checks_data import synth_digits, synth_labels
from mnistforge.checks import statistics as stt
from mnistforge.io.idx import read_idx

DIGITS = list("0123456789")


def test_statistics_of_a_known_image():
    x = np.zeros((2, 28, 28), np.uint8)
    x[0, 4:24, 10:14] = 255          # 20 x 4 bar, centre of mass (14, 12)
    x[1, 2:26, 2:26] = 128           # fills the frame, centre (14, 14)
    s = stt.image_statistics(x)
    assert s["com_mean"] == [14.0, 13.0]
    assert s["share_in_20x20"] == 0.5 and s["share_fills_frame"] == 0.5
    assert s["share_border4_empty"] == 0.5
    assert s["share_255"] == pytest.approx(80 / (2 * 784), abs=1e-6)
    assert s["ink_share_128"] == pytest.approx(576 / (576 + 80), abs=1e-6)


def test_mnist_style_passes_and_frame_filling_fails_for_mnist():
    mnist_like = synth_digits(200, seed=4)
    r = stt.check_statistics(mnist_like, "test", "mnist")
    assert r.status == "pass" and r.values["style"] == "mnist"
    emnist_like = synth_digits(200, seed=5, height=26, top=1, width=(14, 24))
    r = stt.check_statistics(emnist_like, "test", "mnist")
    assert r.status == "fail" and r.values["style"] == "frame-filling"
    assert stt.check_statistics(emnist_like, "test", "emnist-digits").status == "pass"
    assert stt.check_statistics(mnist_like, "test", "emnist-digits").status == "fail"
    # No expectation for datasets that are not handwriting rebuilt by us.
    assert stt.check_statistics(emnist_like, "test", "fashion-mnist").status == "pass"


def test_orientation_flags_a_transposed_set():
    x = synth_digits(300, seed=6, height=26, top=1, width=(10, 20))
    y = synth_labels(300, seed=6)
    assert stt.check_orientation(x, y, DIGITS, dataset="emnist-digits").status == "pass"
    r = stt.check_orientation(x.transpose(0, 2, 1), y, DIGITS, dataset="emnist-digits")
    assert r.status == "fail" and r.values["score"] < -0.1
    # Square blobs carry no cue: undecided, never guessed.
    blobs = np.zeros((50, 28, 28), np.uint8)
    blobs[:, 8:20, 8:20] = 200
    assert stt.check_orientation(blobs).status == "warn"
    # Fashion images are not judged.
    assert stt.check_orientation(x.transpose(0, 2, 1), dataset="fashion-mnist").status == "pass"


def test_orientation_on_real_mnist_uses_the_ones(mnist_reference):
    x = read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz")
    y = read_idx(mnist_reference / "t10k-labels-idx1-ubyte.gz")
    up = stt.check_orientation(x, y, DIGITS, dataset="mnist")
    assert up.status == "pass" and up.values["cue"] == "vertical-stroke classes"
    assert up.values["images_used"] == int((y == 1).sum())
    tr = stt.check_orientation(x.transpose(0, 2, 1), y, DIGITS, dataset="emnist-mnist")
    assert tr.status == "fail"
    assert tr.values["score"] == pytest.approx(-up.values["score"])
    # Without labels the whole-set cue still decides.
    assert stt.check_orientation(x[:2000].transpose(0, 2, 1)).status == "fail"


def test_real_mnist_sits_half_a_pixel_off_centre(mnist_reference):
    x = read_idx(mnist_reference / "t10k-images-idx3-ubyte.gz")
    s = stt.image_statistics(x)
    assert s["style"] == "mnist" and s["share_in_20x20"] == 1.0
    assert 0.3 < s["com_offset"][0] < 0.7 and 0.3 < s["com_offset"][1] < 0.7
