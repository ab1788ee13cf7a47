"""MNIST-style preprocessing of SD19 characters: 128x128 binary -> 28x28 bytes.

This is the preprocessing reconstructed by QMNIST (Yadav & Bottou 2019), in eight steps
(bounding box, square box, pixel doubling, area-overlap resampling with the fudge factor,
bytes, centre of mass, placement, duplicates; each in ``docs/provenance-mnist-qmnist.md``).

Two implementations live here: :func:`preprocess_one`, a per-image oracle written straight from the specification (loops
included; used by the tests), and :func:`preprocess`, the batch implementation used by the builders.  The batch version
reproduces the oracle byte for byte: the step-4 accumulation adds the contributions of each output cell in the same
(row-major input pixel) order, in float64, so even the last bit of every float32 intermediate agrees.

A blank input (no ink) gives an all-zero 28x28 image.

>>> import numpy as np
>>> img = np.zeros((128, 128), bool); img[40:90, 50:70] = True
>>> out = preprocess(img[None])
>>> out.shape, out.dtype, int(out.max())
((1, 28, 28), dtype('uint8'), 255)
>>> bool((out[0] == preprocess_one(img)).all())
True
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import ConfigError

logger = logging.getLogger(__name__)

BOX = 20            # the digit's box inside the MNIST image
OUT = 28            # MNIST image side
CANVAS = 48         # the placement canvas (rows/columns 10..37 are kept)
MIN_BOX = 10        # the floor of the square box side (step 2)
EPS = 1e-11         # tolerance of the cell index computation (step 4)
CENTRINGS = ("mnist", "true")


@dataclass(frozen=True)
class MnistPreproConfig:
    """Parameters of the MNIST preprocessing.

    ``fudge``: Footprint shrink factor of the area-overlap resampling (step 4).  0.99 is the
        published value (it draws MNIST's faint stripes); 1 gives the "clean" variant with exact mass conservation.
    ``centring`` ({"mnist", "true"}): ``"mnist"``: placement at ``trunc(15 - c)`` (the published rule, with its
        half-pixel bias); ``"true"``: the integer shift bringing the centre of mass nearest to the image centre.

    >>> MnistPreproConfig().is_published
    True
    >>> MnistPreproConfig(fudge=1.0, centring="true").variant
    'clean'
    """

    fudge: float = 0.99
    centring: str = "mnist"

    def __post_init__(self) -> None:
        if not (isinstance(self.fudge, (int, float)) and 0.0 < float(self.fudge) <= 1.0):
            raise ConfigError("invalid fudge factor", expected="a number in (0, 1]",
                              found=repr(self.fudge), hint="use 0.99 (published) or 1 (clean)")
        if self.centring not in CENTRINGS:
            raise ConfigError("invalid centring", expected=" or ".join(CENTRINGS), found=repr(self.centring))
        object.__setattr__(self, "fudge", float(self.fudge))

    @property
    def is_published(self) -> bool:
        """True for the published MNIST/QMNIST parameters."""
        return self.fudge == 0.99 and self.centring == "mnist"

    @property
    def variant(self) -> str:
        """``"published"``, ``"clean"`` (fudge 1 and true centring) or ``"custom"``."""
        if self.is_published:
            return "published"
        return "clean" if self.fudge == 1.0 and self.centring == "true" else "custom"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "variant": self.variant}


# --- Polarity ---------------------------------------------------------------------------------

def ink_mask(raster: npt.ArrayLike) -> np.ndarray:
    """Return a boolean ink mask (True = ink) of one or more binary rasters.

    SD19 rasters are two-valued; the character is the minority value, whatever its polarity (0/1, 0/255, black-on-white
    or white-on-black).  Works per image on an array of shape ``(..., H, W)``.

    >>> r = np.full((4, 4), 255, np.uint8); r[1, 1:3] = 0
    >>> int(ink_mask(r).sum())
    2
    """
    r = np.asarray(raster)
    lo = r.min(axis=(-2, -1), keepdims=True)
    high = r != lo                       # True where the larger value is
    n = r.shape[-2] * r.shape[-1]
    n_high = high.sum(axis=(-2, -1), keepdims=True)
    # the larger value is ink when it is the minority (ties: the larger value)
    mask: np.ndarray = np.where(n_high <= n - n_high, high, ~high)
    return mask


# --- The oracle: one image, written straight from the specification ---------------------------

def bounding_box(img: npt.ArrayLike) -> tuple[int, int, int, int] | None:
    """Step 1: ``(top, bottom, left, right)`` by the three passes, or None if blank."""
    img = np.asarray(img, dtype=bool)
    cols = img.sum(axis=0)                                   # (a) all rows
    nz = np.flatnonzero(cols)
    if nz.size == 0:
        return None
    left, right = int(nz[0]), int(nz[-1]) + 1
    rows = img[:, left:right].sum(axis=1)                    # (b) rows within left..right
    nz = np.flatnonzero(rows)
    top, bottom = int(nz[0]), int(nz[-1]) + 1
    cols = img[top:bottom, left:right].sum(axis=0)           # (c) columns within top..bottom
    nz = np.flatnonzero(cols)
    left, right = left + int(nz[0]), left + int(nz[-1]) + 1
    return top, bottom, left, right


def square_crop(img: npt.ArrayLike, box: tuple[int, int, int, int]) -> np.ndarray:
    """Step 2: crop the ``m x m`` box, ``m = max(h, w, 10)``, padding past the edges."""
    top, bottom, left, right = box
    h, w = bottom - top, right - left
    m = max(h, w, MIN_BOX)
    if h < m:
        top = max(0, top - int((m - h) / 2))
        h = m
    if w < m:
        left = max(0, left - int((m - w) / 2))
        w = m
    crop = np.zeros((h, w), dtype=bool)
    part = np.asarray(img, dtype=bool)[top:top + h, left:left + w]
    crop[:part.shape[0], :part.shape[1]] = part
    return crop


def double_small(crop: np.ndarray) -> np.ndarray:
    """Step 3: repeat every row twice while < 20 rows, then every column while < 20 columns."""
    while crop.shape[0] < BOX:
        crop = np.repeat(crop, 2, axis=0)
    while crop.shape[1] < BOX:
        crop = np.repeat(crop, 2, axis=1)
    return crop


def _clip01(v: float) -> float:
    return min(1.0, max(0.0, v))


def resample_area(crop: npt.ArrayLike, fudge: float = 0.99) -> np.ndarray:
    """Step 4: area-overlap resampling of an ``H x W`` crop to 20x20 (float32).

    Accumulates in Python floats (IEEE doubles) pixel by pixel in row-major order, exactly as the specification reads.
    """
    crop = np.asarray(crop)
    H, W = crop.shape
    si, sj = BOX / H, BOX / W
    acc = [[0.0] * BOX for _ in range(BOX)]
    # the column quantities depend on j only: computed once per column
    cols = []
    for j in range(W):
        y = 10 + sj * (j - W / 2)
        yw = y + fudge * sj
        yi = math.floor(y + EPS)
        ye = math.ceil(yw - EPS) - 1
        cols.append((yi, ye, _clip01(yi + 1 - y), _clip01(yw - ye)))
    values = crop.tolist()
    for i in range(H):
        x = 10 + si * (i - H / 2)
        xw = x + fudge * si
        xi = math.floor(x + EPS)
        xe = math.ceil(xw - EPS) - 1
        dx = _clip01(xi + 1 - x)
        dxe = _clip01(xw - xe)
        row = values[i]
        for j in range(W):
            v = float(row[j])
            if v == 0:
                continue
            yi, ye, dy, dye = cols[j]
            if xi == xe and yi == ye:
                acc[xi][yi] += v * si * sj
            elif yi == ye:
                acc[xi][yi] += v * dx * sj
                acc[xe][yi] += v * dxe * sj
            elif xi == xe:
                acc[xi][yi] += v * dy * si
                acc[xi][ye] += v * dye * si
            else:
                acc[xi][yi] += v * dx * dy
                acc[xe][yi] += v * dxe * dy
                acc[xi][ye] += v * dx * dye
                acc[xe][ye] += v * dxe * dye
    return np.array(acc, dtype=np.float64).astype(np.float32)


def to_bytes(img20: npt.ArrayLike) -> np.ndarray:
    """Step 5: float32 20x20 -> uint8 with ``a = 255/min(1, max)``, round half up."""
    img20 = np.asarray(img20, dtype=np.float32)
    ink = min(np.float32(1.0), img20.max())
    a = np.float32(255.0) / np.float32(ink)
    out = np.zeros(img20.shape, dtype=np.uint8)
    for i in range(img20.shape[0]):
        for j in range(img20.shape[1]):
            prod = np.float32(img20[i, j] * a)                 # float32 product
            out[i, j] = min(255, max(0, math.floor(prod + np.float32(0.5))))
    return out


def centre_of_mass(img20: npt.ArrayLike) -> tuple[np.float32, np.float32]:
    """Step 6: float32 centre of mass (row, column) of a byte image, pixel centres at +0.5."""
    v = np.asarray(img20).astype(np.float32)
    n, m = v.shape
    ii = (np.arange(n, dtype=np.float32) + np.float32(0.5))[:, None]
    jj = (np.arange(m, dtype=np.float32) + np.float32(0.5))[None, :]
    # np.cumsum adds sequentially: the row-major float32 running sums of the spec
    s = np.cumsum(v.ravel(), dtype=np.float32)[-1]
    si_ = np.cumsum((v * ii).ravel(), dtype=np.float32)[-1]
    sj_ = np.cumsum((v * jj).ravel(), dtype=np.float32)[-1]
    return np.float32(si_ / s), np.float32(sj_ / s)


def placement_offset(c: float | np.floating[Any], centring: str = "mnist") -> int:
    """Step 7: the block's offset ``o`` (pasted at canvas row ``clamp(10 + o, 0, 28)``)."""
    c = np.float32(c)
    if centring == "mnist":
        return int(np.float32(15.0) - c)              # int() truncates toward zero, like a C cast
    return int(math.floor(np.float32(14.5) - c))      # nearest integer shift to centre 14


def place(img20: npt.ArrayLike, ci: float | np.floating[Any], cj: float | np.floating[Any],
          centring: str = "mnist") -> np.ndarray:
    """Step 7: paste the 20x20 block in a 48x48 canvas and keep rows/columns 10..37."""
    r = min(max(10 + placement_offset(ci, centring), 0), CANVAS - BOX)
    c = min(max(10 + placement_offset(cj, centring), 0), CANVAS - BOX)
    canvas = np.zeros((CANVAS, CANVAS), dtype=np.uint8)
    canvas[r:r + BOX, c:c + BOX] = img20
    return canvas[10:10 + OUT, 10:10 + OUT].copy()


def preprocess_one(img: npt.ArrayLike, config: MnistPreproConfig | None = None) -> np.ndarray:
    """Preprocess ONE 128x128 ink mask (True = ink) to a 28x28 uint8 image: the oracle (see the module doc).

    >>> img = np.zeros((128, 128), bool); img[30:100, 60:64] = True
    >>> out = preprocess_one(img)
    >>> out.shape, int(out.max())
    ((28, 28), 255)
    """
    config = config or MnistPreproConfig()
    if (box := bounding_box(img)) is None:
        return np.zeros((OUT, OUT), dtype=np.uint8)
    crop = double_small(square_crop(img, box))
    img20 = to_bytes(resample_area(crop, config.fudge))
    ci, cj = centre_of_mass(img20)
    return place(img20, ci, cj, config.centring)


# --- The batch implementation -----------------------------------------------------------------

@functools.lru_cache(maxsize=512)
def _axis_weights(n: int, fudge: float) -> tuple[np.ndarray, np.ndarray]:
    """Per input row (or column) of an ``n``-pixel axis: two cells and two weights.

    A footprint inside one cell gets the un-shrunk scale ``s`` in that cell (second weight 0); a split one gets ``dx``
    and ``dxe``.  The 2-D weight of pixel ``(i, j)`` is the product of the row and column weights, bit for bit what the
    four cases of the specification compute.
    """
    s = BOX / n
    i = np.arange(n, dtype=np.float64)
    x = 10 + s * (i - n / 2)
    xw = x + fudge * s
    xi = np.floor(x + EPS).astype(np.int64)
    xe = np.ceil(xw - EPS).astype(np.int64) - 1
    dx = np.clip(xi + 1 - x, 0.0, 1.0)
    dxe = np.clip(xw - xe, 0.0, 1.0)
    single = xi == xe
    cells = np.stack([xi, np.where(single, xi, xe)], axis=1)
    weights = np.stack([np.where(single, s, dx), np.where(single, 0.0, dxe)], axis=1)
    return cells, weights


@functools.lru_cache(maxsize=256)
def _weight_matrix(n: int, fudge: float) -> Any:  # a scipy.sparse.csr_matrix (scipy: untyped here)
    """Sparse ``(n*n, 400)`` map of an ``n x n`` crop's pixels (row-major) to the 20x20 cells.

    Row ``p = i*n + j`` holds the (at most four) nonzero weights of pixel ``(i, j)``: the products of its row and column
    weights, bit for bit the four cases of the specification.
    """
    cx, wx = _axis_weights(n, fudge)
    cells = (cx[:, None, :, None] * BOX + cx[None, :, None, :]).reshape(n * n, 4)
    weights = (wx[:, None, :, None] * wx[None, :, None, :]).reshape(n * n, 4)
    keep = weights != 0
    counts = keep.sum(axis=1)
    indptr = np.zeros(n * n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((weights[keep], cells[keep].astype(np.int32), indptr.astype(np.int32)),
                         shape=(n * n, BOX * BOX))


def _boxes(images: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised steps 1-2: top, left, side m, and the blank flag per image."""
    # arrays (images is 3-D); NumPy types any(axis=k) of an unknown shape as "scalar or array"
    rows = cast(np.ndarray, images.any(axis=2))
    cols = cast(np.ndarray, images.any(axis=1))
    blank = ~cast(np.ndarray, rows.any(axis=1))
    n = images.shape[1]
    top = rows.argmax(axis=1)
    bottom = n - rows[:, ::-1].argmax(axis=1)
    left = cols.argmax(axis=1)
    right = images.shape[2] - cols[:, ::-1].argmax(axis=1)
    h, w = bottom - top, right - left
    m = np.maximum(np.maximum(h, w), MIN_BOX)
    top = np.where(h < m, np.maximum(0, top - (m - h) // 2), top)
    left = np.where(w < m, np.maximum(0, left - (m - w) // 2), left)
    return top, left, m, blank


def _crops(images: np.ndarray, idx: np.ndarray, top: np.ndarray, left: np.ndarray, m: int) -> np.ndarray:
    """Gather the ``m x m`` crops of images ``idx`` (zero past the edges)."""
    inside = (top + m <= images.shape[1]) & (left + m <= images.shape[2])
    out = np.empty((idx.size, m, m), dtype=bool)
    if inside.any():
        # a strided view of every m x m window: one block copy per image
        win = np.lib.stride_tricks.sliding_window_view(images, (m, m), axis=(1, 2))
        out[inside] = win[idx[inside], top[inside], left[inside]]
    if not inside.all():
        o = ~inside
        r = top[o][:, None] + np.arange(m)
        c = left[o][:, None] + np.arange(m)
        rv, cv = r < images.shape[1], c < images.shape[2]
        r = np.minimum(r, images.shape[1] - 1)
        c = np.minimum(c, images.shape[2] - 1)
        crops = images[idx[o][:, None, None], r[:, :, None], c[:, None, :]]
        out[o] = crops & rv[:, :, None] & cv[:, None, :]
    return out


# bound on the crop pixels handled at once (memory of the crops and sparse matrices)
_MAX_PIXELS = 1 << 24


def resample_batch(images: npt.ArrayLike, fudge: float = 0.99) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-4 on a batch: returns ``(n, 20, 20)`` float32 and the blank flags.

    Images are grouped by crop side; for one side the resampling is a fixed linear map, applied as a sparse product
    ``V @ W`` with ``V`` the ink pixels (one row per image, columns in row-major pixel order, values 1.0). The sparse
    product (Gustavson's algorithm, as in SciPy) adds, for every output cell, the contributions in the order of ``V``'s
    columns, in float64: exactly the oracle's pixel-by-pixel accumulation, so the float32 results are bit-identical (the
    tests check it).
    """
    images = np.asarray(images, dtype=bool)
    nimg = images.shape[0]
    top, left, m, blank = _boxes(images)
    out = np.zeros((nimg, BOX * BOX), dtype=np.float32)
    work = np.flatnonzero(~blank)
    for side in np.unique(m[work]):
        sel = work[m[work] == side]
        side = int(side)
        size = side * 2 if side < BOX else side        # m >= 10, so one doubling suffices
        wmat = _weight_matrix(size, fudge)
        step = max(1, _MAX_PIXELS // (size * size))
        for s0 in range(0, sel.size, step):
            part = sel[s0:s0 + step]
            crops = _crops(images, part, top[part], left[part], side)
            if size != side:
                crops = crops.repeat(2, axis=1).repeat(2, axis=2)
            flat = crops.reshape(part.size, size * size)
            pix = (np.flatnonzero(flat) % (size * size)).astype(np.int32)   # row-major order
            indptr = np.zeros(part.size + 1, dtype=np.int32)
            np.cumsum(np.count_nonzero(flat, axis=1), out=indptr[1:])
            v = sp.csr_matrix((np.ones(pix.size), pix, indptr), shape=(part.size, size * size))
            out[part] = (v @ wmat).toarray().astype(np.float32)
    return out.reshape(nimg, BOX, BOX), blank


def bytes_batch(img20: np.ndarray) -> np.ndarray:
    """Step 5 on a batch (float32 throughout)."""
    mx = img20.max(axis=(1, 2))
    ink = np.minimum(np.float32(1.0), mx)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.float32(255.0) / ink
        prod = img20 * a[:, None, None]                        # float32 product
        b = np.floor(prod + np.float32(0.5))
    b = np.nan_to_num(b, nan=0.0, posinf=255.0)
    out: np.ndarray = np.clip(b, 0, 255).astype(np.uint8)
    return out


def centres_batch(b20: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 6 on a batch.  The float32 sums of the spec are exact here (integers and halves below 2**24), so exact
    integer sums followed by one float32 division are identical to them."""
    v = b20.astype(np.int64)
    s = v.sum(axis=(1, 2))
    twice = 2 * np.arange(BOX, dtype=np.int64) + 1
    si2 = (v.sum(axis=2) * twice).sum(axis=1)       # sum v*(2i+1)
    sj2 = (v.sum(axis=1) * twice).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ci = (si2.astype(np.float32) / np.float32(2)) / s.astype(np.float32)
        cj = (sj2.astype(np.float32) / np.float32(2)) / s.astype(np.float32)
    return ci, cj


def place_batch(b20: np.ndarray, ci: np.ndarray, cj: np.ndarray, centring: str = "mnist") -> np.ndarray:
    """Step 7 on a batch."""
    n = b20.shape[0]
    rounding, target = (np.trunc, np.float32(15.0)) if centring == "mnist" else (np.floor, np.float32(14.5))
    oi = np.nan_to_num(rounding(target - ci)).astype(np.int64)
    oj = np.nan_to_num(rounding(target - cj)).astype(np.int64)
    r = np.clip(10 + oi, 0, CANVAS - BOX)
    c = np.clip(10 + oj, 0, CANVAS - BOX)
    canvas = np.zeros((n, CANVAS, CANVAS), dtype=np.uint8)
    k = np.arange(n)[:, None, None]
    rr = r[:, None, None] + np.arange(BOX)[None, :, None]
    cc = c[:, None, None] + np.arange(BOX)[None, None, :]
    canvas[k, rr, cc] = b20
    return canvas[:, 10:10 + OUT, 10:10 + OUT].copy()


def preprocess(images: npt.ArrayLike, config: MnistPreproConfig | None = None) -> np.ndarray:
    """Preprocess a batch of 128x128 ink masks (True = ink) to ``(n, 28, 28)`` uint8.

    ``images`` (array_like of bool, shape (n, H, W)): Ink masks (any nonzero value is ink; use
        :func:`ink_mask` for raw rasters).
    ``config``: Fudge factor and centring rule (published defaults).

    >>> imgs = np.zeros((2, 128, 128), bool)
    >>> imgs[0, 20:80, 30:45] = True; imgs[1, 60:65, 60:65] = True
    >>> preprocess(imgs).shape
    (2, 28, 28)
    """
    config = config or MnistPreproConfig()
    images = np.asarray(images)
    if images.ndim != 3:
        raise ConfigError("images have the wrong shape", expected="(n, H, W)", found=str(images.shape))
    if images.dtype != bool:
        images = cast(np.ndarray, images != 0)   # NumPy types an array's != as Any
    if images.shape[0] == 0:
        return np.zeros((0, OUT, OUT), dtype=np.uint8)
    img20, blank = resample_batch(images, config.fudge)
    b20 = bytes_batch(img20)
    ci, cj = centres_batch(b20)
    out = place_batch(b20, ci, cj, config.centring)
    out[blank] = 0
    return out
