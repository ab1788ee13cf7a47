"""verify's near-duplicate search and pixel statistics give the same answer however they run.

The search runs as many worker threads as BLAS would use (each on one BLAS thread, its own
buffer and offset row; issue 44): the pairs, distances and candidate count must not depend on
how many, nor on tiles and blocks that do not divide the data.  The statistics take the ink box
from row/column sums for unsigned pixels and from the pixels themselves otherwise: both agree.
"""
from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from mnistforge.checks.statistics import image_statistics, ink_moments
from mnistforge.io import similar


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    base = (rng.random((230, 28, 28)) < 0.2).astype(np.uint8) * rng.integers(0, 256, (230, 28, 28), dtype=np.uint8)
    query = base[rng.integers(0, 230, 61)].copy()
    query[::2, 5:9, 5:9] ^= 3      # near copies, some exact copies, and unrelated images
    query[::5] = rng.integers(0, 256, (13, 28, 28), dtype=np.uint8)
    return query, base


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_search_is_the_same_for_any_number_of_workers(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    query, base = _data()
    monkeypatch.setenv("MNISTFORGE_WORKERS", "3")
    monkeypatch.setattr(similar, "_COLS", 37)          # tiles that do not divide the 230 columns
    with threadpool_limits(1, user_api="blas"):
        want = similar.find_near_duplicates(query, base, 600.0, block=7, progress_bar=False)
    with threadpool_limits(threads, user_api="blas"):
        got = similar.find_near_duplicates(query, base, 600.0, block=7, progress_bar=False)
    brute = similar.nearest_brute_force(query, base, 600.0)
    assert len(want) > 20 and want.candidates >= len(want)
    assert got.pairs.tolist() == want.pairs.tolist() == brute.pairs.tolist()
    assert got.l2.tolist() == want.l2.tolist() and got.candidates == want.candidates
    np.testing.assert_allclose(got.l2, brute.l2, rtol=1e-6)


def test_ink_box_from_sums_equals_the_box_from_pixels() -> None:
    query, base = _data()
    x = np.concatenate([query, base, np.zeros((3, 28, 28), np.uint8)])
    x[-1, 27, 0] = 1                                    # ink in a corner only
    from_sums, from_pixels = ink_moments(x), ink_moments(x.astype(np.int16))
    for a, b in zip(from_sums, from_pixels):
        assert np.array_equal(a, b)
    assert from_sums[5][-1].tolist() == [27, 28, 0, 1] and from_sums[5][-2].tolist() == [0, 0, 0, 0]
    assert image_statistics(x) == image_statistics(x, from_sums) == image_statistics(x.astype(np.int16))
