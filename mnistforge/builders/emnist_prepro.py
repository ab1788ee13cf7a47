"""EMNIST conversion: 128x128 binary SD19 characters to 28x28 bytes.

The EMNIST paper (Cohen et al., 2017, fig. 1) describes six steps (blur, bounding box, centring in a square, a 2-pixel
border, bicubic resampling, intensity scaling) and leaves some details open.  Every open point is a field of
:class:`EmnistPreproConfig` with a documented default (steps, defaults and reasons: ``docs/provenance-emnist.md``).

:func:`convert_batch` is the fast path: blur, crop, centring, padding and resampling are linear and separable, so each
output image is ``A_y @ X @ A_x.T`` over a window around the ink box.  :func:`convert_reference` is the straightforward
per-image definition (SciPy ``gaussian_filter`` + NumPy box + Pillow resize) that tests and
``benchmarks/bench_emnist_prepro.py`` compare against.

>>> import numpy as np
>>> x = np.zeros((1, 128, 128), bool); x[0, 40:90, 60:70] = True
>>> out = convert_batch(x)
>>> out.shape, out.dtype, int(out.max())
((1, 28, 28), dtype('uint8'), 255)
"""
from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from PIL import Image
from scipy.ndimage import gaussian_filter, gaussian_filter1d

from ..errors import ConfigError

logger = logging.getLogger(__name__)

SOURCE_SIDE = 128
OUT_SIDE = 28


@dataclass(frozen=True)
class EmnistPreproConfig:
    """Parameters of the EMNIST conversion (defaults: see module docstring).

    ``sigma``: Standard deviation of the Gaussian blur, in source pixels (paper: 1).
    ``truncate``: Kernel radius in sigmas; radius = ``int(truncate * sigma + 0.5)`` (SciPy's
        convention).  Default 2.0: a 5x5 kernel like MATLAB's ``imgaussfilt`` default.
    ``bbox_threshold``: A row/column belongs to the box when a blurred value exceeds it (ink =
        1).  Default 0.0: the whole extent reached by the blur.
    ``border``: Empty border in output pixels (paper: 2).
    ``border_stage``: ``"after"`` (default): resample to ``out_side - 2*border``, then pad;
        ``"before"``: pad the square frame by ``border`` source pixels, then resample to ``out_side``.
    ``cubic_a``: Keys' cubic kernel parameter (default -0.5, Pillow's and MATLAB's).
    ``antialias``: Stretch the kernel by the shrink factor (default True, as Pillow and MATLAB's
        ``imresize`` do when shrinking).  False: plain interpolation.
    ``out_side``: Output side (28).
    """

    sigma: float = 1.0
    truncate: float = 2.0
    bbox_threshold: float = 0.0
    border: int = 2
    border_stage: str = "after"
    cubic_a: float = -0.5
    antialias: bool = True
    out_side: int = OUT_SIDE

    def __post_init__(self) -> None:
        if not self.sigma > 0:
            raise ConfigError("EMNIST conversion: sigma must be positive", found=self.sigma)
        if self.truncate <= 0:
            raise ConfigError("EMNIST conversion: truncate must be positive", found=self.truncate)
        if self.bbox_threshold < 0:
            raise ConfigError("EMNIST conversion: bbox_threshold must be >= 0", found=self.bbox_threshold)
        if self.border_stage not in ("after", "before"):
            raise ConfigError("EMNIST conversion: unknown border_stage",
                              expected="'after' or 'before'", found=repr(self.border_stage))
        if self.border < 0 or self.out_side - 2 * self.border < 1:
            raise ConfigError("EMNIST conversion: border does not fit the output",
                              expected=f"0 <= border < {self.out_side / 2}", found=self.border)

    @property
    def radius(self) -> int:
        return int(self.truncate * self.sigma + 0.5)

    @property
    def resample_side(self) -> int:
        """Side the square frame is resampled to."""
        return self.out_side - 2 * self.border if self.border_stage == "after" else self.out_side

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


DEFAULT_CONFIG = EmnistPreproConfig()


# ----------------------------------------------------------------------------- kernels
def gaussian_weights(sigma: float, radius: int) -> np.ndarray:
    """1-D Gaussian weights of SciPy's ``gaussian_filter1d`` (sum 1, length 2r+1)."""
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 / (sigma * sigma) * x * x)
    weights: np.ndarray = w / w.sum()
    return weights


@functools.lru_cache(maxsize=16)
def blur_matrix(sigma: float, radius: int, side: int = SOURCE_SIDE) -> np.ndarray:
    """``side x side`` matrix G with ``G @ x`` = 1-D blur of x, zero outside (mode constant)."""
    w = gaussian_weights(sigma, radius)
    g = np.zeros((side, side), np.float64)
    for k, wk in enumerate(w):
        d = k - radius
        idx = np.arange(max(0, -d), min(side, side - d))
        g[idx, idx + d] = wk
    g.setflags(write=False)
    return g


def cubic_kernel(x: np.ndarray, a: float = -0.5) -> np.ndarray:
    """Keys' cubic convolution kernel (support 2)."""
    x = np.abs(x)
    out = np.zeros_like(x)
    m1 = x < 1.0
    m2 = (x >= 1.0) & (x < 2.0)
    x1, x2 = x[m1], x[m2]
    out[m1] = ((a + 2.0) * x1 - (a + 3.0)) * x1 * x1 + 1.0
    out[m2] = (((x2 - 5.0) * x2 + 8.0) * x2 - 4.0) * a
    return out


@functools.lru_cache(maxsize=512)
def resample_matrix(in_size: int, out_size: int, a: float = -0.5, antialias: bool = True) -> np.ndarray:
    """``out_size x in_size`` bicubic resampling matrix, Pillow's construction.

    Follows ``precompute_coeffs`` in Pillow's ``Resample.c``: output pixel ``i`` is centred at ``(i + 0.5) * scale`` in
    input coordinates, the kernel is stretched by ``max(scale, 1)`` when ``antialias``, taps outside the input are
    dropped and the rest renormalised to sum 1.
    """
    scale = in_size / out_size
    fscale = max(scale, 1.0) if antialias else 1.0
    support = 2.0 * fscale
    m = np.zeros((out_size, in_size), np.float64)
    for i in range(out_size):
        center = (i + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), in_size)
        xs = np.arange(lo, hi)
        w = cubic_kernel((xs - center + 0.5) / fscale, a)
        s = w.sum()
        if s != 0.0:
            w = w / s
        m[i, lo:hi] = w
    m.setflags(write=False)
    return m


# ----------------------------------------------------------------------------- geometry
def ink_boxes(images: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bounding boxes ``(r0, r1, c0, c1)`` (inclusive) of True pixels; empty -> r1 < r0."""
    # arrays (images is 3-D); NumPy types any(axis=k) of an unknown shape as "scalar or array"
    rows = cast(np.ndarray, images.any(axis=2))
    cols = cast(np.ndarray, images.any(axis=1))
    n, h = rows.shape
    w = cols.shape[1]
    r0 = np.argmax(rows, axis=1)
    r1 = h - 1 - np.argmax(rows[:, ::-1], axis=1)
    c0 = np.argmax(cols, axis=1)
    c1 = w - 1 - np.argmax(cols[:, ::-1], axis=1)
    empty = ~rows.any(axis=1)
    r0[empty], r1[empty], c0[empty], c1[empty] = 0, -1, 0, -1
    return r0, r1, c0, c1


def blurred_boxes(images: np.ndarray,
                  config: EmnistPreproConfig = DEFAULT_CONFIG) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Boxes of the blurred images (``value > bbox_threshold``), as :func:`ink_boxes`.

    With threshold 0 this is the ink box grown by the blur radius and clipped to the raster (no blur needed); otherwise
    the batch is blurred (float64, same as the reference).
    """
    if config.bbox_threshold == 0.0:
        r0, r1, c0, c1 = ink_boxes(images)
        side = images.shape[1]
        empty = r1 < r0
        rad = config.radius
        r0 = np.maximum(r0 - rad, 0)
        c0 = np.maximum(c0 - rad, 0)
        r1 = np.minimum(r1 + rad, side - 1)
        c1 = np.minimum(c1 + rad, images.shape[2] - 1)
        r0[empty], r1[empty], c0[empty], c1[empty] = 0, -1, 0, -1
        return r0, r1, c0, c1
    return ink_boxes(blur_batch(images, config) > config.bbox_threshold)


def blur_batch(images: np.ndarray, config: EmnistPreproConfig = DEFAULT_CONFIG,
               dtype: npt.DTypeLike = np.float64) -> np.ndarray:
    """Blur a batch (n, H, W) along H and W with SciPy (mode constant)."""
    x = images.astype(dtype)
    for axis in (1, 2):
        x = gaussian_filter1d(x, config.sigma, axis=axis, mode="constant", cval=0.0, truncate=config.truncate)
    return x


def frame_geometry(r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray,
                   config: EmnistPreproConfig = DEFAULT_CONFIG
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Frame side and the offsets of the box inside the frame, per image.

    Returns ``(side, h, w, oy, ox)``: the resampled frame has side ``side``;
    box row ``u`` lands on frame row ``oy + u`` (likewise columns).
    """
    h = (r1 - r0 + 1).astype(np.int64)
    w = (c1 - c0 + 1).astype(np.int64)
    s = np.maximum(h, w)
    oy = (s - h) // 2
    ox = (s - w) // 2
    if config.border_stage == "before":
        s = s + 2 * config.border
        oy = oy + config.border
        ox = ox + config.border
    return s, h, w, oy, ox


@functools.lru_cache(maxsize=8)
def _resample_table(max_side: int, n_out: int, a: float, antialias: bool) -> np.ndarray:
    """``T[s, j, :]`` = column ``j`` of the ``n_out x s`` resampling matrix, zero for ``j >= s``.

    Column ``max_side`` is zero for every ``s``: out-of-box pixels point there.
    """
    t = np.zeros((max_side + 1, max_side + 1, n_out), np.float32)
    for s in range(1, max_side + 1):
        t[s, :s] = resample_matrix(s, n_out, a, antialias).T
    t.setflags(write=False)
    return t


def _placement_matrices(start: np.ndarray, length: np.ndarray, offset: np.ndarray, side: np.ndarray, n_src: int,
                        config: EmnistPreproConfig, dtype: npt.DTypeLike) -> np.ndarray:
    """Per image, ``n_out x n_src`` matrix: resample(frame) o place(box) (no blur).

    Source pixel ``k`` inside the box (``start <= k < start + length``) lands on frame pixel ``k - start + offset``; the
    frame (side ``side``) is resampled to ``n_out`` pixels.
    """
    max_side = SOURCE_SIDE + 2 * config.border + 1
    if len(side) and int(side.max()) > max_side:
        max_side = int(side.max())
    table = _resample_table(max_side, config.resample_side, config.cubic_a, config.antialias)
    src = np.arange(n_src)
    idx = src[None, :] - start[:, None] + offset[:, None]
    inside = (src[None, :] >= start[:, None]) & (src[None, :] < (start + length)[:, None])
    idx = np.where(inside, idx, max_side)
    flat = table.reshape(-1, table.shape[2])
    mats = np.take(flat, (side[:, None] * table.shape[1] + idx).ravel(), axis=0)
    mats = mats.reshape(len(side), n_src, -1)          # (n, n_src, n_out)
    return np.ascontiguousarray(mats.transpose(0, 2, 1), dtype=dtype)


def _finish(resampled: np.ndarray, config: EmnistPreproConfig) -> np.ndarray:
    """Clip ringing, scale each image to max 255, round half up, add the border."""
    v = np.maximum(resampled, 0.0)
    peak = v.reshape(len(v), -1).max(axis=1)
    scale = np.divide(255.0, peak, out=np.zeros_like(peak), where=peak > 0)
    v = np.floor(v * scale[:, None, None] + 0.5)
    out8: np.ndarray = np.clip(v, 0, 255).astype(np.uint8)
    if config.border_stage == "after" and config.border:
        b = config.border
        out8 = np.pad(out8, ((0, 0), (b, b), (b, b)))
    return out8


def convert_batch(images: np.ndarray, config: EmnistPreproConfig = DEFAULT_CONFIG, *, chunk: int = 512) -> np.ndarray:
    """Convert a batch of 128x128 binary characters to EMNIST 28x28 bytes.

    ``images`` (ndarray, bool or 0/1 integers, shape (n, 128, 128)): True (1) = ink.
    ``chunk``: Images converted at once (bounds the float32 working memory).

    Returns ndarray, uint8, shape (n, 28, 28), upright, ink high.

    >>> import numpy as np
    >>> x = np.zeros((2, 128, 128), bool); x[:, 50:80, 50:80] = True
    >>> y = convert_batch(x)
    >>> bool((y[:, :2] == 0).all() and (y[:, :, -2:] == 0).all())
    True
    """
    images = np.asarray(images)
    if images.ndim != 3:
        raise ConfigError("EMNIST conversion: images must be a 3-D batch",
                          expected="shape (n, H, W)", found=f"shape {images.shape}")
    n = len(images)
    out = np.empty((n, config.out_side, config.out_side), np.uint8)
    for s in range(0, n, chunk):
        out[s:s + chunk] = _convert_chunk(images[s:s + chunk], config)
    return out


WINDOW_STEP = 16  # window sides are multiples of this (a few distinct shapes per batch)


def _convert_chunk(images: np.ndarray, config: EmnistPreproConfig) -> np.ndarray:
    dtype = np.float32
    n, hsrc, wsrc = images.shape
    r0, r1, c0, c1 = blurred_boxes(images, config)
    side, h, w, oy, ox = frame_geometry(r0, r1, c0, c1, config)
    n_out = config.resample_side
    res = np.empty((n, n_out, n_out), dtype)
    if config.bbox_threshold != 0.0:
        ay = _placement_matrices(r0, h, oy, side, hsrc, config, dtype)
        ax = _placement_matrices(c0, w, ox, side, wsrc, config, dtype)
        x = blur_batch(images, config, dtype=dtype)
        np.matmul(np.matmul(ay, x), ax.transpose(0, 2, 1), out=res)
        return _finish(res, config)
    # Threshold 0: the box is the ink box grown by the blur radius, so the source is zero outside it and blurring a
    # window that holds the box (zero outside the window) gives the same values inside the box.  Windows come in a few
    # sizes; per size, the blur matrix folds into the per-image matrices in one product.
    need = np.maximum(h, w)
    win = np.clip(-(-need // WINDOW_STEP) * WINDOW_STEP, WINDOW_STEP, max(hsrc, wsrc))
    for size in np.unique(win):
        sel = np.flatnonzero(win == size)
        wy, wx = min(int(size), hsrc), min(int(size), wsrc)
        ys = np.minimum(r0[sel], hsrc - wy)
        xs = np.minimum(c0[sel], wsrc - wx)
        ay = _placement_matrices(r0[sel] - ys, h[sel], oy[sel], side[sel], wy, config, dtype)
        ax = _placement_matrices(c0[sel] - xs, w[sel], ox[sel], side[sel], wx, config, dtype)
        gy = blur_matrix(config.sigma, config.radius, wy).astype(dtype)
        gx = gy if wx == wy else blur_matrix(config.sigma, config.radius, wx).astype(dtype)
        # A G X G^T B^T with G symmetric
        ay = (ay.reshape(-1, wy) @ gy).reshape(ay.shape)
        ax = (ax.reshape(-1, wx) @ gx).reshape(ax.shape)
        windows = np.lib.stride_tricks.sliding_window_view(images, (wy, wx), axis=(1, 2))
        x = windows[sel, ys, xs].astype(dtype)
        res[sel] = np.matmul(np.matmul(ay, x), ax.transpose(0, 2, 1))
    return _finish(res, config)


# ----------------------------------------------------------------------------- reference
def convert_reference(image: np.ndarray, config: EmnistPreproConfig = DEFAULT_CONFIG) -> np.ndarray:
    """The straightforward per-image definition (SciPy blur, NumPy box, Pillow bicubic).

    Supports Pillow's kernel only (``cubic_a == -0.5`` and ``antialias``).

    >>> import numpy as np
    >>> x = np.zeros((128, 128), bool); x[30:100, 60:66] = True
    >>> convert_reference(x).shape
    (28, 28)
    """
    if config.cubic_a != -0.5 or not config.antialias:
        raise ConfigError("convert_reference uses Pillow's BICUBIC", expected="cubic_a=-0.5 and antialias=True",
                          found=f"cubic_a={config.cubic_a}, antialias={config.antialias}")
    img = np.asarray(image).astype(np.float64)
    blurred = gaussian_filter(img, config.sigma, mode="constant", cval=0.0, truncate=config.truncate)
    mask = blurred > config.bbox_threshold
    n_out = config.resample_side
    if not mask.any():
        res = np.zeros((n_out, n_out))
    else:
        rows = np.flatnonzero(mask.any(axis=1))
        cols = np.flatnonzero(mask.any(axis=0))
        crop = blurred[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
        h, w = crop.shape
        s = max(h, w)
        pad = config.border if config.border_stage == "before" else 0
        frame = np.zeros((s + 2 * pad, s + 2 * pad))
        oy, ox = (s - h) // 2 + pad, (s - w) // 2 + pad
        frame[oy:oy + h, ox:ox + w] = crop
        pil = Image.fromarray(frame.astype(np.float32), mode="F")
        res = np.asarray(pil.resize((n_out, n_out), Image.Resampling.BICUBIC), np.float64)
    one: np.ndarray = _finish(res[None], config)[0]
    return one
