"""Image similarity that knows no dataset: exact per-image digests, near neighbours, shifts."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

from .. import settings
from ..progress import progress

__all__ = ["DEFAULT_NEAR_L2", "SHIFTS", "NearDuplicates", "find_near_duplicates", "xorshift_image_digests",
           "blake2b_image_digests", "nearest_brute_force", "shift_images"]

DEFAULT_NEAR_L2 = 128.0
"""Default near-duplicate radius (L2 over 0..255 pixels).

The same drawing re-rendered with rounding differences lies within ~20 (the
QMNIST reconstruction's worst pair is 17.3), while two *different* drawings
of the MNIST test set are never closer than 273 (measured over all 5e7 pairs,
see docs/verify.md).  128 (an RMS difference of 4.6 grey levels) sits well
between the two.
"""


SHIFTS = [(0, 0)] + [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)]
"""The nine placements tried; (0, 0) first so that ties prefer "no shift"."""


_DIGEST_KEYS = np.random.default_rng(0x6D6E6973).integers(1, 2**63, 4096, np.uint64) | np.uint64(1)
"""Odd multipliers, one per 8-byte word of an image (fixed, so digests repeat across runs)."""


def xorshift_image_digests(images: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """One 64-bit digest per image, as ``uint64``: a multiply-xorshift hash of its bytes.

    Only compared for equality within one run (digest groups are then compared byte for byte, so a collision
    never reports a false duplicate); never recorded.  Vectorised over the images: one pass of NumPy
    operations instead of a hash call per image.

    >>> import numpy as np
    >>> d = xorshift_image_digests(np.zeros((2, 28, 28), np.uint8))
    >>> d.dtype, bool(d[0] == d[1])
    (dtype('uint64'), True)
    """
    images = np.asarray(images)
    n = len(images)
    flat = np.ascontiguousarray(images).reshape(n, -1).view(np.uint8)
    if flat.shape[1] % 8:  # whole 8-byte words: pad each row with zeros
        flat = np.pad(flat, ((0, 0), (0, 8 - flat.shape[1] % 8)))
    words = flat.view("<u8")
    m = words.shape[1]
    keys = _DIGEST_KEYS[np.arange(m) % _DIGEST_KEYS.size] if m > _DIGEST_KEYS.size else _DIGEST_KEYS[:m]
    out = np.empty(n, np.uint64)
    for s in range(0, n, 8192):  # blocks of rows: temporaries stay small
        x = words[s:s + 8192] * keys
        x ^= x >> np.uint64(29)
        x *= keys[::-1]
        h = x.sum(axis=1, dtype=np.uint64) + np.uint64(m)
        h ^= h >> np.uint64(31)   # splitmix64 finaliser
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        out[s:s + 8192] = h
    return out


def blake2b_image_digests(images: npt.ArrayLike) -> npt.NDArray[np.bytes_]:
    """The 16-byte blake2b digest of each image's bytes, as ``S16``: a per-image identity that is
    recorded (the SD19 index) or trusted without a byte comparison (a build's duplicates,
    FEMNIST's images by content), where :func:`xorshift_image_digests` would be too short.

    >>> import numpy as np
    >>> d = blake2b_image_digests(np.zeros((2, 28, 28), np.uint8))
    >>> d.dtype, bool(d[0] == d[1]), len(d[0])
    (dtype('S16'), True, 16)
    """
    images = np.ascontiguousarray(images)
    flat = images.reshape(images.shape[0], -1)
    return np.array([hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in flat], dtype="S16")


def shift_images(images: npt.ArrayLike, dy: int, dx: int) -> np.ndarray:
    """Shift every image by ``dy`` rows and ``dx`` columns, filling with zeros.

    >>> import numpy as np
    >>> x = np.arange(9, dtype=np.uint8).reshape(1, 3, 3)
    >>> shift_images(x, 1, 0)[0].tolist()
    [[0, 0, 0], [0, 1, 2], [3, 4, 5]]
    """
    x = np.asarray(images)
    out = np.zeros_like(x)
    h, w = x.shape[1:3]
    src_r = slice(max(0, -dy), h - max(0, dy))
    dst_r = slice(max(0, dy), h - max(0, -dy))
    src_c = slice(max(0, -dx), w - max(0, dx))
    dst_c = slice(max(0, dx), w - max(0, -dx))
    out[:, dst_r, dst_c] = x[:, src_r, src_c]
    return out


def _pool(images: np.ndarray, factor: int) -> npt.NDArray[np.float32]:
    n, h, w = images.shape
    # Integer sums (exact, at most factor^2 * 255) then float32: the same values
    # as summing in float32, without a float copy of every image.
    if images.dtype != np.uint8:
        x = images.reshape(n, h // factor, factor, w // factor, factor).astype(np.float32)
        sums: npt.NDArray[np.float32] = x.sum(axis=(2, 4))  # (NumPy's stubs: sum over axes is Any)
        return sums.reshape(n, -1) / np.float32(factor)
    # whole rows added, then neighbouring columns: contiguous adds (strided sums took 2.7x as long)
    r = images.reshape(n * (h // factor), factor, w)
    c = sum((r[:, k] for k in range(1, factor)), r[:, 0].astype(np.uint16)).reshape(-1, factor)
    pooled: npt.NDArray[np.uint16] = sum((c[:, k] for k in range(1, factor)), c[:, 0])
    return pooled.astype(np.float32).reshape(n, -1) / np.float32(factor)


def _pool_factor(h: int, w: int) -> int:
    for f in (4, 2):
        if h % f == 0 and w % f == 0:
            return f
    return 1


@dataclasses.dataclass
class NearDuplicates:
    """Pairs of close images: ``pairs[k] = (query index, base index)``, distance ``l2[k]``."""
    pairs: np.ndarray
    l2: np.ndarray
    threshold: float
    candidates: int = 0

    def __len__(self) -> int:
        return len(self.l2)

    @property
    def queries(self) -> np.ndarray:
        """Query images with at least one base image within the threshold."""
        return np.unique(self.pairs[:, 0])


@functools.cache
def _blas() -> Any:
    """threadpoolctl's controller of the loaded BLAS libraries (finding them takes 1.5 ms: once)."""
    return ThreadpoolController().select(user_api="blas")


_COLS = 8192
"""Columns of a product block made and compared at a time (279 x 8,192 float32: 9 MB, in the
last-level cache; the fastest of 2,048-60,000 measured on Fashion-MNIST)."""


def find_near_duplicates(query: npt.ArrayLike, base: npt.ArrayLike, threshold: float = DEFAULT_NEAR_L2, *,
                         block: int | None = None, prefilter: bool = True,
                         progress_bar: bool | None = None) -> NearDuplicates:
    """Every pair ``(i, j)`` with ``||query[i] - base[j]||_2 <= threshold``.

    Exact: no pair within the threshold is missed, none outside is reported (the pooled pre-filter and the
    float32 slack: comments below).  ``query``, ``base``: uint8 ``N x H x W``; ``threshold``: L2 radius over pixel
    values 0..255; ``block``: query rows per block (default ``2**24 // len(base)``, 16 to 1024).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> base = rng.integers(0, 256, (50, 28, 28), dtype=np.uint8)
    >>> q = base[[3, 7]].copy(); q[0, 0, 0] ^= 1
    >>> nd = find_near_duplicates(q, base, 10)
    >>> nd.pairs.tolist(), nd.l2.tolist()
    ([[0, 3], [1, 7]], [1.0, 0.0])
    """
    query, base = np.asarray(query), np.asarray(base)
    nq, nb = len(query), len(base)
    t2 = float(threshold) ** 2
    empty = NearDuplicates(np.zeros((0, 2), np.int64), np.zeros(0), float(threshold))
    if nq == 0 or nb == 0:
        return empty
    f = _pool_factor(*query.shape[1:]) if prefilter else 1
    if f > 1:
        qf, bf = _pool(query, f), _pool(base, f)
    else:
        qf = query.reshape(nq, -1).astype(np.float32)
        bf = base.reshape(nb, -1).astype(np.float32)
    qn = np.einsum("ij,ij->i", qf, qf, dtype=np.float64).astype(np.float32)
    bn = np.einsum("ij,ij->i", bf, bf, dtype=np.float64).astype(np.float32)
    qflat, bflat = query.reshape(nq, -1), base.reshape(nb, -1)
    if block is None:
        block = int(max(16, min(1024, (16 << 20) // max(1, nb))))  # 279 rows for 60,000
    starts, cols = range(0, nq, block), min(nb, _COLS)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (query, base, L2) of each tile's pairs
    bar = progress(total=len(starts), desc="near duplicates", unit="block",
                   disable=None if progress_bar is None else not progress_bar)
    # one more dimension: a 1 for every query, -col for every base image, so that the product
    # itself is a.b - col (no pass over it to subtract)
    qf1 = np.concatenate([qf, np.ones((nq, 1), np.float32)], axis=1)

    def scan(first: int) -> int:
        # A block's products are made and scanned a tile of columns at a time (in the cache); only rows whose
        # largest product reaches their bound (few) are compared. Worker `first` takes every `workers`-th
        # block, with its own buffer and offset row.
        buf, bft, n_cand = np.empty((min(block, nq), cols), np.float32), np.empty((qf1.shape[1], nb), np.float32), 0
        bft[:-1] = bf.T
        for s in starts[first::workers]:
            e = min(nq, s + block)
            slack = 1e-4 * (qn[s:e].max() + bn) + 1.0
            # |a-b|^2 <= t^2 + slack  <=>  a.b - (|b|^2 - slack)/2 >= (|a|^2 - t^2)/2. float32 rounding of a.b is far
            # below 1e-4 of the norms, so the slack (per column, using the block's largest query norm) keeps every
            # true pair; exact integer distances are checked below.
            np.negative((bn - slack) / 2, out=bft[-1])
            row = (qn[s:e] - t2) / 2
            for c in range(0, nb, cols):
                ab = np.matmul(qf1[s:e], bft[:, c:c + cols], out=buf[: e - s, : min(nb, c + cols) - c])
                rows = np.flatnonzero(ab.max(axis=1) >= row)
                ri, bj = np.nonzero(ab[rows] >= row[rows, None])
                qi, bj, n_cand = rows[ri] + s, bj + c, n_cand + ri.size
                diff = qflat[qi].astype(np.int32) - bflat[bj].astype(np.int32)
                exact = np.einsum("ij,ij->i", diff, diff).astype(np.float64)
                found.append((qi[exact <= t2], bj[exact <= t2], np.sqrt(exact[exact <= t2])))
            bar.update()
        return n_cand

    # BLAS's threads wait for each other after every tile and spin while it is scanned (up to 3x the products'
    # CPU on a busy machine); instead, as many threads as BLAS would use (at most the cores, and 1 GB of offset
    # rows), each running whole blocks on one BLAS thread. Pairs are sorted below: same result for any workers.
    blas = _blas()
    workers = min(len(starts), max((i["num_threads"] for i in blas.info()), default=1), settings.current().workers,
                  max(1, (1 << 28) // (nb * qf1.shape[1])))
    with bar, blas.limit(limits=1), ThreadPoolExecutor(workers) as pool:
        n_cand = sum(pool.map(scan, range(1, workers)), scan(0))  # worker 0 is this thread
    qi, bj, l2 = (np.concatenate(x) for x in zip(*found))
    order = np.lexsort((bj, qi))
    return NearDuplicates(np.stack([qi, bj], axis=1)[order].astype(np.int64), l2[order], float(threshold), n_cand)


def nearest_brute_force(query: npt.ArrayLike, base: npt.ArrayLike,
                        threshold: float = DEFAULT_NEAR_L2) -> NearDuplicates:
    """Reference implementation (one query at a time); for tests and the benchmark."""
    query, base = np.asarray(query), np.asarray(base)
    bflat = base.reshape(len(base), -1).astype(np.float32)
    pairs, dists = [], []
    for i, q in enumerate(query.reshape(len(query), -1).astype(np.float32)):
        d = np.sqrt(((bflat - q) ** 2).sum(axis=1))
        for j in np.flatnonzero(d <= threshold):
            pairs.append((i, j))
            dists.append(float(d[j]))
    return NearDuplicates(np.asarray(pairs, np.int64).reshape(-1, 2), np.asarray(dists), float(threshold))
