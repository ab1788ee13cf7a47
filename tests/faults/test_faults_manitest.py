"""Issue 41, Manitest on absurd numbers: named errors saying what was expected (was a raw
TypeError from NumPy for a fractional sample size, a ValueError for a negative seed, an
OverflowError for a huge init_radius, which below that size would build a ball of (2r+1)^d
nodes for ever)."""
from __future__ import annotations

import numpy as np
import pytest

from mnistforge.errors import ConfigError
from mnistforge.evaluators.manitest.score import manitest

YY, XX = np.mgrid[0:28, 0:28]
IMAGES = np.stack([np.exp(-((XX - 13.5 - s) ** 2 + (YY - 13.5) ** 2) / 6.0) for s in (-1.0, 0.0, 1.0)])


def right(x):
    return (np.tensordot(x, np.arange(28.0), ([2], [0])).sum(1) / x.sum(axis=(1, 2)) > 13.5).astype(int)


@pytest.mark.parametrize("kw,words", [
    (dict(samples=2.5), "invalid samples: expected a whole number"),
    (dict(samples=True), "invalid samples"),
    (dict(seed=-1, samples=2), "invalid seed: expected an integer >= 0"),
    (dict(seed="7", samples=2), "invalid seed"),
    (dict(init_radius=10**30), "invalid init_radius: expected an integer in 0..4"),
    (dict(init_radius=50), "invalid init_radius"),
    (dict(init_radius=-1), "invalid init_radius"),
])
def test_absurd_numbers_are_config_errors(kw, words):
    with pytest.raises(ConfigError, match=words):
        manitest(IMAGES, right, "translation", cap=300, **kw)


def test_huge_samples_and_seeds_are_fine():
    assert manitest(IMAGES, right, "translation", cap=300, samples=10**30).samples == 3
    assert manitest(IMAGES, right, "translation", cap=300, samples=2, seed=10**30).samples == 2
