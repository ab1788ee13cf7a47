"""MNIST preprocessing: each step on hand-made images, and batch == oracle byte for byte."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mnistforge.builders import mnist_prepro as mp
from mnistforge.builders.mnist_prepro import MnistPreproConfig, preprocess, preprocess_one
from mnistforge.errors import ConfigError
from mnistforge.io.similar import blake2b_image_digests
from mnistforge.sd19.index import find_duplicates

CLEAN = MnistPreproConfig(fudge=1.0, centring="true")


def blank(n=1):
    return np.zeros((n, 128, 128), dtype=bool)


def random_shapes(n, seed=0):
    """Rings, bars, specks and noise of every size, some touching the edges."""
    rng = np.random.default_rng(seed)
    imgs = blank(n)
    for k in range(n):
        kind = k % 5
        h = int(rng.integers(1, 128)) if kind == 0 else int(rng.integers(2, 100))
        w = int(rng.integers(1, 60))
        t = int(rng.integers(0, 129 - h))
        left = int(rng.integers(0, 129 - w))
        if kind == 1:                                   # specks: small boxes below 10
            h, w = int(rng.integers(1, 10)), int(rng.integers(1, 10))
            t, left = int(rng.integers(0, 129 - h)), int(rng.integers(0, 129 - w))
        yy, xx = np.mgrid[:h, :w]
        if kind in (0, 1):
            shape = rng.random((h, w)) < 0.6
        else:
            r = ((yy - h / 2) / max(h / 2, 1)) ** 2 + ((xx - w / 2) / max(w / 2, 1)) ** 2
            shape = np.abs(r - 0.6) < 0.35
        imgs[k, t:t + h, left:left + w] |= shape
        if kind == 4:                                   # touch the bottom/right edges
            imgs[k, 127, int(rng.integers(0, 128))] = True
            imgs[k, int(rng.integers(100, 128)), 127] = True
    return imgs


# -- configuration -------------------------------------------------------------------

def test_config_defaults_and_validation():
    c = MnistPreproConfig()
    assert (c.fudge, c.centring, c.variant) == (0.99, "mnist", "published")
    assert CLEAN.variant == "clean"
    assert MnistPreproConfig(fudge=1.0).variant == "custom"
    with pytest.raises(ConfigError, match="fudge"):
        MnistPreproConfig(fudge=1.5)
    with pytest.raises(ConfigError, match="centring"):
        MnistPreproConfig(centring="middle")


# -- step 1: bounding box ------------------------------------------------------------

def test_bounding_box_three_passes_is_the_tight_box():
    img = blank()[0]
    img[20, 30:40] = True          # a bar
    img[21:50, 35] = True          # a stem
    img[60, 90] = True             # a far speck widens both the rows and the columns
    assert mp.bounding_box(img) == (20, 61, 30, 91)
    for im in random_shapes(40, seed=3):
        rr, cc = np.nonzero(im)
        assert mp.bounding_box(im) == (rr.min(), rr.max() + 1, cc.min(), cc.max() + 1)
    assert mp.bounding_box(blank()[0]) is None


def test_batch_boxes_match_oracle_boxes():
    imgs = random_shapes(60, seed=4)
    top, left, m, isblank = mp._boxes(imgs)
    for k, im in enumerate(imgs):
        t, b, l_, r = mp.bounding_box(im)
        crop = mp.square_crop(im, (t, b, l_, r))
        assert crop.shape == (m[k], m[k])
        np.testing.assert_array_equal(crop, mp._crops(imgs, np.array([k]), top[[k]], left[[k]], m[k])[0])
    assert not isblank.any()


# -- step 2: square box with a floor of 10 -------------------------------------------

def test_minimum_box_of_ten_and_centred_by_truncated_halves():
    img = blank()[0]
    img[50:53, 60:63] = True                      # 3x3 -> 10x10, 7 extra: trunc(3.5) = 3 above
    crop = mp.square_crop(img, mp.bounding_box(img))
    assert crop.shape == (10, 10)
    assert np.array_equal(np.nonzero(crop.any(1))[0], [3, 4, 5])
    img = blank()[0]
    img[10:40, 60:64] = True                      # 30 x 4: width grows to 30, 26 extra: 13 left
    crop = mp.square_crop(img, mp.bounding_box(img))
    assert crop.shape == (30, 30)
    assert np.array_equal(np.nonzero(crop.any(0))[0], [13, 14, 15, 16])


def test_box_clamped_at_top_and_padded_past_bottom():
    img = blank()[0]
    img[0:2, 0:2] = True                           # at the corner: top/left clamp to 0
    crop = mp.square_crop(img, mp.bounding_box(img))
    assert crop.shape == (10, 10) and crop[:2, :2].all() and crop.sum() == 4
    img = blank()[0]
    img[126:128, 126:128] = True                   # would run past the edge: padded with background
    crop = mp.square_crop(img, mp.bounding_box(img))
    assert crop.shape == (10, 10) and crop[4:6, 4:6].all() and crop.sum() == 4
    np.testing.assert_array_equal(preprocess(img[None])[0], preprocess_one(img))


# -- step 3: pixel doubling ----------------------------------------------------------

@pytest.mark.parametrize("m, expected", [(10, 20), (13, 26), (19, 38), (20, 20), (57, 57)])
def test_pixel_doubling(m, expected):
    crop = np.random.default_rng(m).random((m, m)) < 0.5
    out = mp.double_small(crop)
    assert out.shape == (expected, expected)
    if expected != m:
        np.testing.assert_array_equal(out[::2, ::2], crop)
        np.testing.assert_array_equal(out[1::2, 1::2], crop)


def test_doubling_rows_then_columns_for_non_square():
    crop = np.ones((5, 12), bool)
    assert mp.double_small(crop).shape == (20, 24)


# -- step 4: area-overlap resampling -------------------------------------------------

@pytest.mark.parametrize("side", [20, 23, 30, 40, 57, 77, 128])
def test_mass_conservation_with_fudge_one(side):
    rng = np.random.default_rng(side)
    crop = rng.random((side, side)) < 0.4
    out = mp.resample_area(crop, fudge=1.0)
    # every pixel deposits exactly its area si*sj = (20/side)^2
    assert math.isclose(out.astype(np.float64).sum(), crop.sum() * (20 / side) ** 2, rel_tol=1e-6)
    full = mp.resample_area(np.ones((side, side), bool), fudge=1.0)
    np.testing.assert_allclose(full, 1.0, rtol=1e-6)


def test_fudge_099_asymmetry_draws_stripes():
    # 30 -> 20: scale 2/3, rows alternate between footprints inside one cell (full
    # un-shrunk area) and split ones (shrunk by 0.99): a full block comes out striped
    full = mp.resample_area(np.ones((30, 30), bool), fudge=0.99)
    rows = full[:, 10]
    assert rows[0] == pytest.approx(1.0, abs=1e-6)            # single 2/3 + split part 1/3
    assert rows[1] == pytest.approx(0.99 * 2 / 3 - 1 / 3 + 2 / 3, abs=1e-6)
    assert (rows[1::2] < 0.999).all() and (np.abs(rows[0::2] - 1) < 1e-6).all()
    # a pixel whose footprint lies inside one cell gets the un-shrunk si*sj ...
    one = np.zeros((30, 30), bool); one[0, 0] = True
    assert mp.resample_area(one, 0.99)[0, 0] == np.float32((20 / 30) ** 2)
    # ... a split one only 0.99 of it, in total
    one = np.zeros((30, 30), bool); one[1, 0] = True
    out = mp.resample_area(one, 0.99)
    assert out[0, 0] + out[1, 0] == pytest.approx(0.99 * (20 / 30) ** 2, rel=1e-6)
    # scale 1 (side 20) and 1/2 (side 40): every footprint fits in one cell, nothing lost
    for side in (20, 40):
        np.testing.assert_allclose(mp.resample_area(np.ones((side, side), bool), 0.99), 1.0, rtol=1e-6)


def test_resample_accumulates_in_double_and_stores_float32():
    crop = np.random.default_rng(1).random((77, 77)) < 0.5
    out = mp.resample_area(crop)
    assert out.dtype == np.float32
    img20, _ = mp.resample_batch(np.pad(crop, ((0, 51), (0, 51)))[None])
    np.testing.assert_array_equal(img20[0], out)


# -- step 5: bytes ---------------------------------------------------------------------

def test_byte_rounding_half_up_and_scale_by_ink():
    img = np.zeros((20, 20), np.float32)
    img[0, 0], img[0, 1], img[0, 2] = 0.5, 0.25, np.float32(0.5) / np.float32(255) * np.float32(1.5)
    out = mp.to_bytes(img)
    assert out[0, 0] == 255 and out[0, 1] == 128          # 0.25 * 510 = 127.5 -> 128
    assert out[0, 2] == math.floor(float(img[0, 2] * np.float32(510)) + 0.5) == 2   # 1.5 -> 2
    img[0, 0] = 1.3                                        # max above 1: a = 255, clipped
    out = mp.to_bytes(img)
    assert out[0, 0] == 255 and out[0, 1] == math.floor(0.25 * 255 + 0.5)
    np.testing.assert_array_equal(mp.bytes_batch(img[None])[0], out)


def test_byte_product_is_float32():
    # find values where the float32 product and the exact product round differently;
    # the specification says float32, so the float32 answer must win
    rng = np.random.default_rng(0)
    vals = rng.random(200_000).astype(np.float32) * np.float32(0.8)
    a = np.float32(255) / np.float32(0.8)
    p32 = np.floor(vals * a + np.float32(0.5))
    p64 = np.floor(vals.astype(np.float64) * float(a) + 0.5)
    differ = np.flatnonzero(p32 != p64)
    assert differ.size > 0
    img = np.zeros((20, 20), np.float32)
    img[0, 0] = 0.8
    img[1, :] = vals[differ[:20]] if differ.size >= 20 else np.resize(vals[differ], 20)
    out = mp.to_bytes(img)
    np.testing.assert_array_equal(out[1], np.floor(img[1] * a + np.float32(0.5)).astype(np.uint8))
    np.testing.assert_array_equal(mp.bytes_batch(img[None])[0], out)


# -- steps 6-7: centre of mass and placement -------------------------------------------

def block_with_centre(lo_weight, hi_weight, row=14):
    b = np.zeros((20, 20), np.uint8)
    b[row, 8:12] = lo_weight
    b[row + 1, 8:12] = hi_weight
    return b


def test_centre_of_mass_pixel_centres():
    b = block_with_centre(90, 10)                  # rows 14, 15: (14.5*.9 + 15.5*.1) = 14.6
    ci, cj = mp.centre_of_mass(b)
    assert ci == np.float32(14.6) and cj == np.float32(10.0)
    bi, bj = mp.centres_batch(b[None])
    assert bi[0] == ci and bj[0] == cj


def test_truncating_centring_14_6_vs_15_4():
    # 15 - 14.6 = 0.4 -> 0 ; 15 - 15.4 = -0.4 -> 0 (truncation toward zero; floor gives -1)
    for lo, hi, ci in ((90, 10, 14.6), (10, 90, 15.4)):
        b = block_with_centre(lo, hi)
        assert mp.centre_of_mass(b)[0] == np.float32(ci)
        assert mp.placement_offset(np.float32(ci)) == 0
        out = mp.place(b, *mp.centre_of_mass(b))
        # offset 0: the block's rows 14/15 land on image rows 14/15 (canvas 24/25)
        assert out[14, 13] == lo and out[15, 13] == hi and out[:, 13].sum() == lo + hi
        np.testing.assert_array_equal(mp.place_batch(b[None], *mp.centres_batch(b[None]))[0], out)
    assert math.floor(15 - 15.4) == -1               # what floor would have done
    # the two land differently relative to their centres: one at 14.6, one at 15.4
    assert mp.placement_offset(np.float32(10.3)) == 4 and mp.placement_offset(np.float32(9.7)) == 5


def test_true_centring_brings_centre_within_half_a_pixel():
    rng = np.random.default_rng(5)
    for _ in range(30):
        b = (rng.random((20, 20)) < 0.2).astype(np.uint8) * rng.integers(1, 256, (20, 20)).astype(np.uint8)
        ci, cj = mp.centre_of_mass(b)
        out = mp.place(b, ci, cj, "true")
        oi, oj = mp.centre_of_mass(out)
        assert abs(oi - 14) <= 0.5 + 1e-6 and abs(oj - 14) <= 0.5 + 1e-6
        out_m = mp.place(b, ci, cj, "mnist")
        mi, _ = mp.centre_of_mass(out_m)
        assert -0.5 - 1e-5 <= mi - 14 - 0.5 <= 0.5 + 1e-5   # MNIST: within [14, 15]


def test_mnist_centring_bias_half_a_pixel_on_average():
    out = preprocess(random_shapes(200, seed=8))
    ci = np.array([mp.centre_of_mass(o)[0] for o in out if o.any()])
    assert 14.3 < ci.mean() < 14.7
    out = preprocess(random_shapes(200, seed=8), CLEAN)
    ci = np.array([mp.centre_of_mass(o)[0] for o in out if o.any()])
    assert 13.8 < ci.mean() < 14.2


# -- the whole pipeline ----------------------------------------------------------------

@pytest.mark.parametrize("config", [MnistPreproConfig(), CLEAN, MnistPreproConfig(0.95, "mnist")],
                         ids=["published", "clean", "fudge095"])
def test_batch_equals_oracle_byte_for_byte(config):
    imgs = random_shapes(150, seed=11)
    imgs[7] = False                                 # a blank one
    fast = preprocess(imgs, config)
    slow = np.stack([preprocess_one(im, config) for im in imgs])
    np.testing.assert_array_equal(fast, slow)
    assert not fast[7].any()
    assert fast.dtype == np.uint8 and fast.shape == (150, 28, 28)


def test_full_box_of_20_reproduces_the_input():
    img = blank()[0]
    rng = np.random.default_rng(2)
    patch = rng.random((20, 20)) < 0.5
    patch[0, :] = patch[:, 0] = patch[-1, :] = patch[:, -1] = True
    img[30:50, 70:90] = patch
    out = preprocess_one(img)
    r, c = np.nonzero(out)
    np.testing.assert_array_equal(out[r.min():r.min() + 20, c.min():c.min() + 20] == 255, patch)


def test_polarity_minority_is_ink():
    imgs = random_shapes(10, seed=2)
    ref = preprocess(imgs)
    for raster in (imgs.astype(np.uint8), np.where(imgs, 0, 255).astype(np.uint8),
                   np.where(imgs, 255, 0).astype(np.uint8), ~imgs):
        np.testing.assert_array_equal(preprocess(mp.ink_mask(raster)), ref)


def test_preprocess_input_checks():
    with pytest.raises(ConfigError):
        preprocess(np.zeros((128, 128), bool))
    assert preprocess(blank(0)).shape == (0, 28, 28)
    assert preprocess(blank(2).astype(np.uint8)).sum() == 0


# -- step 8: duplicates ----------------------------------------------------------------

def test_duplicates_earlier_wins():
    imgs = random_shapes(6, seed=1)
    out = preprocess(imgs[[0, 1, 0, 2, 1, 0]])
    d = find_duplicates(blake2b_image_digests(out))
    assert d.tolist() == [-1, -1, 0, -1, 1, 0]
