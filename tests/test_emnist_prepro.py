"""EMNIST conversion: hand-made images, and the batched path against the per-image definition."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from scipy.ndimage import binary_dilation, gaussian_filter1d

from mnistforge.builders.emnist_prepro import (EmnistPreproConfig, blur_matrix, convert_batch,
                                               convert_reference, resample_matrix)
from mnistforge.errors import ConfigError


def blank(n=1):
    return np.zeros((n, 128, 128), bool)


def ink_extent(img, level=0):
    rows = np.flatnonzero((img > level).any(axis=1))
    cols = np.flatnonzero((img > level).any(axis=0))
    return rows[0], rows[-1], cols[0], cols[-1]


def centre_of_mass(img):
    w = img.astype(float)
    yy, xx = np.mgrid[:img.shape[0], :img.shape[1]]
    return (w * yy).sum() / w.sum(), (w * xx).sum() / w.sum()


def random_glyphs(n, seed=0):
    """Blobby stroke-like shapes of random size and position (some touching the frame)."""
    rng = np.random.default_rng(seed)
    x = blank(n)
    for i in range(n):
        h, w = rng.integers(3, 120, 2)
        r, c = rng.integers(0, 129 - h), rng.integers(0, 129 - w)
        m = rng.random((h, w)) < 0.04
        m[rng.integers(h), rng.integers(w)] = True
        x[i, r:r + h, c:c + w] = binary_dilation(m, iterations=int(rng.integers(1, 5)))
    return x


def test_centred_square_fills_frame_with_empty_border():
    x = blank()
    x[0, 44:84, 44:84] = True
    y = convert_batch(x)[0]
    assert y.dtype == np.uint8 and y.shape == (28, 28)
    assert y.max() == 255 and y.min() == 0
    # 2-pixel border empty, content reaches it
    assert not y[:2].any() and not y[-2:].any() and not y[:, :2].any() and not y[:, -2:].any()
    r0, r1, c0, c1 = ink_extent(y)
    assert (r0, c0) == (2, 2) and (r1, c1) == (25, 25)
    # a square stays symmetric
    assert np.array_equal(y, y.T)
    assert np.abs(y.astype(int) - y[::-1, ::-1]).max() <= 1


def test_off_centre_bar_is_centred_and_translation_invariant():
    a, b = blank(), blank()
    a[0, 3:13, 5:65] = True        # near the top-left corner
    b[0, 70:80, 50:110] = True     # same bar elsewhere
    ya, yb = convert_batch(np.concatenate([a, b]))
    assert np.array_equal(ya, yb)
    cy, cx = centre_of_mass(ya)
    assert abs(cy - 13.5) < 0.6 and abs(cx - 13.5) < 0.6
    # wide bar: full width, a few rows only
    r0, r1, c0, c1 = ink_extent(ya, 20)
    assert c0 <= 3 and c1 >= 24
    assert r1 - r0 + 1 <= 8


def test_tall_thin_stroke_keeps_aspect_ratio():
    x = blank()
    x[0, 20:100, 60:66] = True    # 80 x 6 ink; blurred box (radius 2) 84 x 10
    y = convert_batch(x)[0]
    r0, r1, c0, c1 = ink_extent(y, 0)
    assert (r0, r1) == (2, 25)
    # width in output pixels ~ 24 * 10 / 84 ~ 2.9 (+ the kernel's spread)
    width = c1 - c0 + 1
    assert 2 <= width <= 6
    cy, cx = centre_of_mass(y)
    assert abs(cx - 13.5) < 0.6
    # a stretched (non aspect-keeping) conversion would fill the width
    assert not y[:, 2:8].any() and not y[:, 20:26].any()


def test_transposed_input_gives_transposed_output():
    x = random_glyphs(40, seed=3)
    y = convert_batch(x)
    yt = convert_batch(x.transpose(0, 2, 1))
    assert np.array_equal(yt, y.transpose(0, 2, 1))


def test_full_range_per_image_and_empty_image():
    x = random_glyphs(30, seed=4)
    x[7] = False
    y = convert_batch(x)
    peaks = y.reshape(30, -1).max(axis=1)
    assert (np.delete(peaks, 7) == 255).all()
    assert not y[7].any()
    assert (y.reshape(30, -1).min(axis=1) == 0).all()


@pytest.mark.parametrize("cfg", [
    EmnistPreproConfig(),
    EmnistPreproConfig(bbox_threshold=0.25),
    EmnistPreproConfig(border_stage="before"),
    EmnistPreproConfig(truncate=4.0),
    EmnistPreproConfig(sigma=1.5, border=1),
], ids=["default", "threshold", "before", "truncate4", "sigma1.5"])
def test_batched_matches_per_image_reference(cfg):
    x = random_glyphs(120, seed=1)
    y = convert_batch(x, cfg, chunk=50)
    ref = np.stack([convert_reference(im, cfg) for im in x])
    diff = np.abs(y.astype(int) - ref)
    # float32 matrix products vs Pillow's float path: only values sitting on a .5
    # rounding boundary may differ, by one grey level
    assert diff.max() <= 1
    assert (diff > 0).mean() < 1e-3


def test_resample_matrix_is_pillow_bicubic():
    rng = np.random.default_rng(0)
    for size, out in [(130, 24), (57, 24), (24, 24), (11, 24), (101, 28), (3, 28)]:
        f = rng.random((size, size)).astype(np.float32)
        w = resample_matrix(size, out)
        mine = w @ f.astype(np.float64) @ w.T
        pil = np.asarray(Image.fromarray(f, mode="F").resize((out, out),
                                                            Image.Resampling.BICUBIC))
        assert np.abs(mine - pil).max() < 1e-5, size
        assert np.allclose(w.sum(axis=1), 1.0)


def test_blur_matrix_is_scipy_gaussian():
    rng = np.random.default_rng(0)
    v = rng.random(128)
    for sigma, radius, trunc in [(1.0, 2, 2.0), (1.0, 4, 4.0), (1.5, 3, 2.0)]:
        ref = gaussian_filter1d(v, sigma, mode="constant", truncate=trunc)
        assert np.allclose(blur_matrix(sigma, radius) @ v, ref)


def test_before_stage_differs_and_keeps_range():
    x = blank()
    x[0, 30:90, 50:70] = True
    after = convert_batch(x)[0]
    before = convert_batch(x, EmnistPreproConfig(border_stage="before"))[0]
    assert before.max() == 255 and not np.array_equal(after, before)
    ref = convert_reference(x[0], EmnistPreproConfig(border_stage="before"))
    assert np.abs(before.astype(int) - ref).max() <= 1
    # the border is resampled too: ink spreads into it, unlike the default
    assert before[:2].any() or before[:, :2].any() or before[-2:].any()


@pytest.mark.parametrize("kw", [dict(sigma=0), dict(border_stage="middle"), dict(border=14),
                                dict(bbox_threshold=-1), dict(truncate=0)])
def test_bad_config_raises(kw):
    with pytest.raises(ConfigError):
        EmnistPreproConfig(**kw)


def test_reference_refuses_other_kernels():
    with pytest.raises(ConfigError, match="Pillow"):
        convert_reference(blank()[0], EmnistPreproConfig(cubic_a=-0.75))


def test_other_kernel_runs_batched():
    x = random_glyphs(5, seed=9)
    a = convert_batch(x, EmnistPreproConfig(cubic_a=-0.75, antialias=False))
    b = convert_batch(x)
    assert a.shape == b.shape and not np.array_equal(a, b)


def test_bad_shape_raises():
    with pytest.raises(ConfigError, match="3-D"):
        convert_batch(np.zeros((128, 128), bool))
