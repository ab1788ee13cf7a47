"""Handwriting-like 128x128 binary characters for the synthetic SD19.

Hershey single-stroke glyphs distorted per writer (:class:`WriterStyle`) and per character, with the hard cases of the
real scans, drawn with a round pen by Pillow (faster than a NumPy raster: ``benchmarks/bench_synth.py``); the recipe and
its numbers are in ``docs/synthetic-sd19.md`` ("The characters").

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> style = draw_writer_style(rng)
>>> images = render_characters(b"0aZ", style, rng)
>>> images.shape, images.dtype
((3, 128, 128), dtype('bool'))
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import numpy.typing as npt
from HersheyFonts import HersheyFonts
from PIL import Image, ImageDraw

logger = logging.getLogger(__name__)

SIZE = 128
# Hershey "futural" metrics: cap line -12, base line 9, descender 16 (y grows downwards).
CAP_HEIGHT_UNITS = 21.0


@functools.lru_cache(maxsize=None)
def _font(name: str) -> dict[str, tuple[npt.NDArray[np.float64], ...]]:
    """Strokes of every printable glyph of a built-in Hershey font, as float arrays."""
    font = HersheyFonts()
    font.load_default_font(name)
    out: dict[str, tuple[npt.NDArray[np.float64], ...]] = {}
    for ch, glyph in font.all_glyphs.items():
        if strokes := tuple(np.asarray(s, dtype=np.float64) for s in glyph.strokes if len(s) >= 1):
            out[ch] = strokes
    return out


def _variant_strokes(ch: str, font: str, variant: int) -> tuple[npt.NDArray[np.float64], ...]:
    """Glyph strokes with the common hand-printed variants people actually use."""
    strokes = _font(font).get(ch) or _font("futural")[ch]
    if variant == 0:
        return strokes
    # Variant 1: simplified forms (a bare '1', an open '4', a crossed '7', a barred 'Z', ...).
    if ch == "1":
        return (np.array([[1.0, -12.0], [1.0, 9.0]]),)
    if ch == "7":
        return strokes + (np.array([[-1.5, -1.0], [5.0, -1.0]]),)
    if ch == "Z" or ch == "z":
        mid_y = -1.5 if ch == "Z" else 2.0
        return strokes + (np.array([[-3.0, mid_y], [3.0, mid_y]]),)
    if ch == "4":
        return (np.array([[-3.0, -12.0], [-7.0, 2.0], [8.0, 2.0]]), np.array([[4.0, -7.0], [4.0, 9.0]]))
    if ch == "I":
        return strokes + (np.array([[-4.0, -12.0], [4.0, -12.0]]), np.array([[-4.0, 9.0], [4.0, 9.0]]))
    return strokes + (np.array([[4.5, -9.0], [-4.5, 6.0]]),) if ch == "0" else strokes


@dataclass(frozen=True)
class WriterStyle:
    """How one writer writes: the same for all characters of a writer folder.

    ``height``: Cap height (digits and capitals) in pixels.
    ``pen``: Pen width in pixels.
    ``slant``: Horizontal shear (x += slant * -y); positive leans right.
    ``aspect``: Width / height factor.
    ``dx``, ``dy``: Usual offset of the character centre from the image centre, in pixels.
    ``shaky``: Standard deviation of control-point jitter, in font units.
    ``cursive``: Lower case in the ``cursive`` Hershey font instead of ``futural``.
    ``variants``: Bit mask: which characters use their simplified variant (bit 0 -> '1', ...).
    ``rough``: Probability of flipping a boundary pixel (ragged edges of a scanned stroke).
    """

    height: float
    pen: float
    slant: float
    aspect: float
    dx: float
    dy: float
    shaky: float
    cursive: bool
    variants: int
    rough: float


_VARIANT_CHARS = "17Zz4I0"


def draw_writer_style(rng: np.random.Generator) -> WriterStyle:
    """Draw a random writer style (most writers ordinary, a few extreme).

    >>> s = draw_writer_style(np.random.default_rng(1))
    >>> 1.0 <= s.pen <= 20.0
    True
    """
    height = float(np.clip(rng.lognormal(math.log(62.0), 0.25), 24.0, 112.0))
    if rng.random() < 0.02:           # a few writers write tiny characters
        height = float(rng.uniform(14.0, 26.0))
    pen = float(np.clip(rng.lognormal(math.log(7.0), 0.35), 3.0, 14.0))
    if rng.random() < 0.05:           # felt-tip pens: very thick strokes
        pen = float(rng.uniform(12.0, 18.0))
    pen = min(pen, max(2.0, 0.35 * height))
    return WriterStyle(
        height=height, pen=pen, slant=float(rng.normal(0.08, 0.15)),
        aspect=float(np.clip(rng.normal(1.0, 0.12), 0.7, 1.4)), dx=float(rng.normal(0.0, 5.0)),
        dy=float(rng.normal(0.0, 5.0)), shaky=float(rng.uniform(0.15, 0.7)), cursive=bool(rng.random() < 0.2),
        variants=int(rng.integers(0, 1 << len(_VARIANT_CHARS))), rough=float(rng.uniform(0.0, 0.25)),
    )


def _subdivide(points: np.ndarray, step: float) -> np.ndarray:
    """Insert points so that no segment is longer than ``step`` font units."""
    if len(points) < 2:
        return points
    seg = np.diff(points, axis=0)
    length = np.hypot(seg[:, 0], seg[:, 1])
    pieces = np.maximum(1, np.ceil(length / step).astype(int))
    if (pieces == 1).all():
        return points
    idx = np.repeat(np.arange(len(seg)), pieces)
    starts = np.cumsum(pieces) - pieces
    t = (np.arange(len(idx)) - starts[idx]) / pieces[idx]
    out = points[idx] + seg[idx] * t[:, None]
    return np.vstack([out, points[-1:]])


@functools.lru_cache(maxsize=None)
def _template(ch: str, font: str, variant: int) -> tuple[np.ndarray, tuple[int, ...], float]:
    """Subdivided strokes of a glyph, concatenated: ``(points (n, 2), stroke lengths, glyph height in font units)``."""
    strokes = [_subdivide(s, 3.0) for s in _variant_strokes(ch, font, variant)]
    pts = np.vstack(strokes)
    pts.setflags(write=False)
    return pts, tuple(len(st) for st in strokes), float(max(np.ptp(pts[:, 1]), 1.0))


_SHARP = math.cos(math.radians(25.0))


@dataclass
class _Batch:
    """Geometry of a batch of characters, all points concatenated (pixel coordinates)."""

    points: np.ndarray        # (N, 2) x, y
    char_start: np.ndarray    # (n + 1,) offsets of each character's points
    stroke_start: np.ndarray  # (S + 1,) offsets of each stroke's points
    char_strokes: np.ndarray  # (n + 1,) offsets of each character's strokes
    pens: np.ndarray          # (n,) pen width in pixels
    disks: np.ndarray         # (N,) bool: stroke ends and sharp turns get a round pen disk

    def strokes(self, i: int) -> list[np.ndarray]:
        """The strokes of character ``i`` as a list of (k, 2) arrays."""
        s = self.stroke_start[self.char_strokes[i]:self.char_strokes[i + 1] + 1]
        return [self.points[a:b] for a, b in zip(s[:-1], s[1:])]


def _geometry(codes: bytes | Sequence[int] | np.ndarray, style: WriterStyle, rng: np.random.Generator,
              small: np.ndarray, touch: np.ndarray) -> _Batch:
    """Distorted strokes of every character of a batch, computed for the whole batch at once."""
    n = len(codes)
    templates = []
    for code in codes:
        ch = chr(code)
        font = "cursive" if (style.cursive and ch.islower()) else "futural"
        vbit = _VARIANT_CHARS.find(ch)
        variant = 1 if vbit >= 0 and (style.variants >> vbit) & 1 else 0
        templates.append(_template(ch, font, variant))
    counts = np.fromiter((len(t[0]) for t in templates), np.int64, n)
    char_start = np.concatenate([[0], np.cumsum(counts)])
    stroke_lengths = np.fromiter((k for t in templates for k in t[1]), np.int64)
    stroke_start = np.concatenate([[0], np.cumsum(stroke_lengths)])
    char_strokes = np.concatenate([[0], np.cumsum([len(t[1]) for t in templates])])
    glyph_height = np.fromiter((t[2] for t in templates), np.float64, n)
    pts = np.concatenate([t[0] for t in templates])
    cid = np.repeat(np.arange(n), counts)
    total = len(pts)
    # Control-point jitter, smoothed along the strokes so the pen wobbles instead of zig-zagging.
    noise = rng.normal(0.0, style.shaky, (total + 2, 2))
    pts = pts + (noise[:-2] + 2.0 * noise[1:-1] + noise[2:]) / 2.0
    g = rng.normal(0.0, 1.0, (n, 9))
    u = rng.random((n, 7))
    # Low-frequency wobble of each glyph.
    freq = (0.1 + 0.2 * u[:, :2])[cid]
    phase = (2 * math.pi * u[:, 2:4])[cid]
    amp = 0.6 * g[cid, :2]
    x, y = pts[:, 0], pts[:, 1]
    x, y = (x + amp[:, 0] * np.sin(freq[:, 0] * y + phase[:, 0]), y + amp[:, 1] * np.sin(freq[:, 1] * x + phase[:, 1]))
    # Per-character affine: scale, aspect, slant, rotation.
    height = style.height * np.clip(1.0 + 0.08 * g[:, 2], 0.75, 1.3)
    height = np.where(small, (9.0 + 8.0 * u[:, 4]) * CAP_HEIGHT_UNITS / glyph_height, height)
    sc = height / CAP_HEIGHT_UNITS
    sx = sc * style.aspect * np.clip(1.0 + 0.06 * g[:, 3], 0.8, 1.25)
    shear = -(style.slant + 0.05 * g[:, 4]) * sc
    angle = math.radians(4.0) * g[:, 5]
    c, si = np.cos(angle), np.sin(angle)
    # rotation @ [[sx, shear], [0, sc]]
    m00, m01, m10, m11 = c * sx, c * shear - si * sc, si * sx, si * shear + c * sc
    x, y = m00[cid] * x + m01[cid] * y, m10[cid] * x + m11[cid] * y
    pts = np.stack([x, y], axis=1)
    # Centre each ink box on the writer's usual position plus per-character jitter.
    lo = np.minimum.reduceat(pts, char_start[:-1], axis=0)
    hi = np.maximum.reduceat(pts, char_start[:-1], axis=0)
    centre = np.stack([SIZE / 2 + style.dx + 3.0 * g[:, 6], SIZE / 2 + style.dy + 3.0 * g[:, 7]], 1)
    shift = centre - (lo + hi) / 2
    pens = style.pen * np.clip(1.0 + 0.1 * g[:, 8], 0.7, 1.3)
    pens = np.where(small, np.minimum(pens, np.maximum(1.5, height / 5.0)), pens)
    # Hard case: touching (or cut by) one side of the frame, up to 6 px over it but never more
    # than a quarter of the ink's extent (a bare '1' is only a pen wide: it must stay visible).
    lo, hi = lo + shift - pens[:, None] / 2, hi + shift + pens[:, None] / 2
    side = (u[:, 5] * 4).astype(int)
    extent = np.take_along_axis(hi - lo, (side % 2)[:, None], axis=1)[:, 0]
    over = np.maximum(1.0, u[:, 6] * np.minimum(6.0, 0.25 * extent))
    for i in np.flatnonzero(touch).tolist():
        axis = side[i] % 2
        shift[i, axis] += (-lo[i, axis] - over[i]) if side[i] < 2 else (SIZE - hi[i, axis] + over[i])
    pts = pts + shift[cid]
    # Round pen: disks at stroke ends and at sharp turns close the wedges Pillow leaves there.
    disks = np.zeros(total, bool)
    disks[stroke_start[:-1]] = True
    disks[stroke_start[1:] - 1] = True
    if total > 2:
        d = np.diff(pts, axis=0)
        dot = (d[:-1] * d[1:]).sum(1)
        norm = np.hypot(d[:-1, 0], d[:-1, 1]) * np.hypot(d[1:, 0], d[1:, 1]) + 1e-9
        disks[1:-1] |= dot < _SHARP * norm
    return _Batch(pts, char_start, stroke_start, char_strokes, pens, disks)


def _specks(draw: ImageDraw.ImageDraw, pts: np.ndarray, rng: np.random.Generator) -> None:
    """A few dots of scanner/paper noise, placed away from the character."""
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    for _ in range(int(rng.integers(1, 4))):
        for _try in range(8):
            x, y = rng.uniform(2.0, SIZE - 3.0, 2)
            if x < lo[0] - 8 or x > hi[0] + 8 or y < lo[1] - 8 or y > hi[1] + 8:
                r = float(rng.uniform(0.6, 2.5))
                draw.ellipse((x - r, y - r, x + r, y + r), fill=1)
                break


def _draw_batch(batch: _Batch, out: np.ndarray, specks: np.ndarray, rng: np.random.Generator) -> None:
    """Rasterise every character of a batch into ``out`` (Pillow, one image per character)."""
    flat = batch.points.ravel().tolist()
    radius = np.repeat(batch.pens / 2.0, np.diff(batch.char_start))
    boxes = np.concatenate([batch.points - radius[:, None], batch.points + radius[:, None]], 1)
    box_list = boxes.tolist()
    disk_at = batch.disks.tolist()
    ss = batch.stroke_start.tolist()
    widths = np.maximum(1, np.round(batch.pens)).astype(int).tolist()
    for i in range(len(batch.pens)):
        img = Image.new("1", (SIZE, SIZE), 0)
        draw = ImageDraw.Draw(img)
        width = widths[i]
        for k in range(batch.char_strokes[i], batch.char_strokes[i + 1]):
            a, b = ss[k], ss[k + 1]
            if b - a >= 2:
                draw.line(flat[2 * a:2 * b], fill=1, width=width)
            elif width < 3:
                draw.point(flat[2 * a:2 * a + 2], fill=1)
            if width >= 3:
                for j in range(a, b):
                    if disk_at[j]:
                        draw.ellipse(box_list[j], fill=1)
        if specks[i]:
            _specks(draw, batch.points[batch.char_start[i]:batch.char_start[i + 1]], rng)
        out[i] = np.asarray(img, dtype=bool)


@dataclass(frozen=True)
class HardCases:
    """Per-character probabilities of the hard cases of the real data."""

    speck: float = 0.03
    small: float = 0.015
    touch: float = 0.015


def render_characters(codes: bytes | Sequence[int] | np.ndarray, style: WriterStyle, rng: np.random.Generator,
                      hard: HardCases = HardCases()) -> np.ndarray:
    """Render characters of one writer as 128x128 binary images (True = ink).

    ``codes`` (bytes or array of int): ASCII codes of the characters (``0-9``, ``A-Z``, ``a-z``).
    ``style``: The writer's style (see :func:`draw_writer_style`).
    ``rng`` (numpy.random.Generator): Source of the per-character distortion; the output depends
        only on it, the style and the codes.
    ``hard``: Probabilities of specks, very small characters and characters touching the frame.

    >>> rng = np.random.default_rng(3)
    >>> im = render_characters([ord("8")], draw_writer_style(rng), rng)
    >>> bool(im.any())
    True
    """
    codes = np.frombuffer(codes, np.uint8) if isinstance(codes, (bytes, bytearray)) \
        else np.asarray(codes, dtype=np.int64)
    n = len(codes)
    out = np.zeros((n, SIZE, SIZE), dtype=bool)
    if n == 0:
        return out
    flags = rng.random((n, 3))
    batch = _geometry(codes.tolist(), style, rng, flags[:, 1] < hard.small, flags[:, 2] < hard.touch)
    _draw_batch(batch, out, flags[:, 0] < hard.speck, rng)
    if n and style.rough > 0:
        # Thin strokes would break if pixels were taken off their edges.
        out = roughen(out, style.rough, rng, take=0.5 if style.pen >= 4 else 0.0)
    return out


def roughen(images: np.ndarray, p: float, rng: np.random.Generator, take: float = 0.5) -> np.ndarray:
    """Flip boundary pixels at random (ragged scanned edges), on a whole batch at once.

    Outer boundary pixels are inked with probability ``p``, inner ones cleared
    with probability ``p * take`` (both quantised to 1/256).
    """
    # 4-neighbourhood dilation/erosion by slicing (much faster than ndimage here).  The random bytes are windows of one
    # 256x256 texture at random offsets (fresh random numbers for every pixel cost more than all the rest); one byte
    # serves both sides of the boundary, since a pixel is never on both.
    n, h, w = images.shape
    texture = np.frombuffer(rng.bytes(4 * h * w), np.uint8).reshape(2 * h, 2 * w)
    windows = np.lib.stride_tricks.sliding_window_view(texture, (h, w))
    noise = windows[rng.integers(0, h + 1, n), rng.integers(0, w + 1, n)]
    grown = images.copy()
    grown[:, 1:, :] |= images[:, :-1, :]
    grown[:, :-1, :] |= images[:, 1:, :]
    grown[:, :, 1:] |= images[:, :, :-1]
    grown[:, :, :-1] |= images[:, :, 1:]
    out = images | (grown & (noise < int(round(p * 256))))
    if take > 0:
        shrunk = images.copy()
        shrunk[:, 1:, :] &= images[:, :-1, :]
        shrunk[:, :-1, :] &= images[:, 1:, :]
        shrunk[:, :, 1:] &= images[:, :, :-1]
        shrunk[:, :, :-1] &= images[:, :, 1:]
        out &= ~(images & ~shrunk & (noise < int(round(p * take * 256))))
    roughened: np.ndarray = out
    return roughened
