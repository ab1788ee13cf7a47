"""Handwriting-like 128x128 binary characters for the synthetic SD19.

Characters are drawn as pen strokes, not filled outlines: the single-stroke
Hershey vector glyphs of the ``hershey-fonts`` package (``futural`` for hand
printing, ``cursive`` for some writers' lower case) are distorted and drawn as
thick polylines with a round pen.

Every writer gets a :class:`WriterStyle` (size, slant, pen width, position,
aspect, how shaky the hand is, glyph variants); every character then gets its
own random distortion on top (jittered control points smoothed along the
stroke, a low-frequency wobble, small rotation/scale/shear, position jitter).
The hard cases of the real scans are included on purpose: specks of noise away
from the character, very small characters (< 20 px tall), characters touching
or cut by the frame, very thick strokes, ragged stroke edges.

Rasterisation uses Pillow's ``ImageDraw.line`` with a width plus disks at the
joints (round pen); measured on the development machine it is about 100x
faster than a vectorised NumPy distance-to-segment raster (~0.2 ms against
~20 ms per character), see ``docs/synthetic-sd19.md``.  Edge roughening runs
on whole batches with NumPy slicing.

Examples
--------
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

import numpy as np
from PIL import Image, ImageDraw

logger = logging.getLogger(__name__)

SIZE = 128
# Hershey "futural" metrics: cap line -12, base line 9, descender 16 (y grows downwards).
CAP_HEIGHT_UNITS = 21.0
FONTS = ("futural", "cursive")


@functools.lru_cache(maxsize=None)
def _font(name: str) -> dict:
    """Strokes of every printable glyph of a built-in Hershey font, as float arrays."""
    from HersheyFonts import HersheyFonts

    font = HersheyFonts()
    font.load_default_font(name)
    out = {}
    for ch, glyph in font.all_glyphs.items():
        strokes = tuple(np.asarray(s, dtype=np.float64) for s in glyph.strokes if len(s) >= 1)
        if strokes:
            out[ch] = strokes
    return out


def _variant_strokes(ch: str, font: str, variant: int) -> tuple:
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
    if ch == "0":
        return strokes + (np.array([[4.5, -9.0], [-4.5, 6.0]]),)
    return strokes


@dataclass(frozen=True)
class WriterStyle:
    """How one writer writes: the same for all characters of a writer folder.

    Attributes
    ----------
    height : float
        Cap height (digits and capitals) in pixels.
    pen : float
        Pen width in pixels.
    slant : float
        Horizontal shear (x += slant * -y); positive leans right.
    aspect : float
        Width / height factor.
    dx, dy : float
        Usual offset of the character centre from the image centre, in pixels.
    shaky : float
        Standard deviation of control-point jitter, in font units.
    cursive : bool
        Lower case in the ``cursive`` Hershey font instead of ``futural``.
    variants : int
        Bit mask: which characters use their simplified variant (bit 0 -> '1', ...).
    rough : float
        Probability of flipping a boundary pixel (ragged edges of a scanned stroke).
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

    Examples
    --------
    >>> s = draw_writer_style(np.random.default_rng(1))
    >>> 1.0 <= s.pen <= 20.0
    True
    """
    height = float(np.clip(rng.lognormal(math.log(62.0), 0.25), 24.0, 112.0))
    if rng.random() < 0.04:           # a few writers write tiny characters
        height = float(rng.uniform(14.0, 26.0))
    pen = float(np.clip(rng.lognormal(math.log(7.0), 0.35), 3.0, 14.0))
    if rng.random() < 0.05:           # felt-tip pens: very thick strokes
        pen = float(rng.uniform(12.0, 18.0))
    pen = min(pen, max(2.0, 0.35 * height))
    return WriterStyle(
        height=height,
        pen=pen,
        slant=float(rng.normal(0.08, 0.15)),
        aspect=float(np.clip(rng.normal(1.0, 0.12), 0.7, 1.4)),
        dx=float(rng.normal(0.0, 5.0)),
        dy=float(rng.normal(0.0, 5.0)),
        shaky=float(rng.uniform(0.15, 0.7)),
        cursive=bool(rng.random() < 0.2),
        variants=int(rng.integers(0, 1 << len(_VARIANT_CHARS))),
        rough=float(rng.uniform(0.0, 0.25)),
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
def _template(ch: str, font: str, variant: int):
    """Subdivided strokes of a glyph, concatenated: (points (n, 2), split positions, height)."""
    strokes = [_subdivide(s, 3.0) for s in _variant_strokes(ch, font, variant)]
    pts = np.vstack(strokes)
    pts.setflags(write=False)
    splits = tuple(np.cumsum([len(st) for st in strokes])[:-1].tolist())
    return pts, splits, float(max(np.ptp(pts[:, 1]), 1.0))


def _glyph_geometry(ch: str, style: WriterStyle, rng: np.random.Generator, small: bool):
    """Transformed strokes (pixel coordinates, unclipped) and pen width of one character."""
    font = "cursive" if (style.cursive and ch.islower()) else "futural"
    vbit = _VARIANT_CHARS.find(ch)
    variant = 1 if vbit >= 0 and (style.variants >> vbit) & 1 else 0
    base, splits, glyph_height = _template(ch, font, variant)
    n = len(base)
    # Control-point jitter, smoothed along the strokes so the pen wobbles instead of zig-zagging.
    noise = rng.normal(0.0, style.shaky, (n + 2, 2))
    pts = base + (noise[:-2] + 2.0 * noise[1:-1] + noise[2:]) / 2.0
    # One draw for all per-character parameters keeps the generator calls few.
    g = rng.normal(0.0, 1.0, 9)
    u = rng.random(5)
    # Low-frequency wobble of the whole glyph.
    freq = 0.1 + 0.2 * u[:2]
    phase = 2 * math.pi * u[2:4]
    wob_x = 0.6 * g[0] * np.sin(freq[0] * pts[:, 1] + phase[0])
    wob_y = 0.6 * g[1] * np.sin(freq[1] * pts[:, 0] + phase[1])
    pts = pts + np.stack([wob_x, wob_y], axis=1)
    # Per-character affine: scale, aspect, slant, rotation.
    height = style.height * min(max(1.0 + 0.08 * g[2], 0.75), 1.3)
    if small:
        height = (9.0 + 8.0 * u[4]) * CAP_HEIGHT_UNITS / glyph_height
    sc = height / CAP_HEIGHT_UNITS
    aspect = style.aspect * min(max(1.0 + 0.06 * g[3], 0.8), 1.25)
    shear = style.slant + 0.05 * g[4]
    angle = math.radians(4.0) * g[5]
    c, si = math.cos(angle), math.sin(angle)
    m = np.array([[c, -si], [si, c]]) @ np.array([[sc * aspect, -shear * sc], [0.0, sc]])
    pts = pts @ m.T
    # Centre the ink box on the writer's usual position plus per-character jitter.
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre = np.array([SIZE / 2 + style.dx + 3.0 * g[6], SIZE / 2 + style.dy + 3.0 * g[7]])
    pts = pts - (lo + hi) / 2 + centre
    pen = style.pen * min(max(1.0 + 0.1 * g[8], 0.7), 1.3)
    if small:
        pen = min(pen, max(1.5, height / 5.0))
    return np.split(pts, splits), pen


def _touch_frame(strokes, pen: float, rng: np.random.Generator):
    """Shift a character so that it touches (or is cut by) one side of the frame."""
    pts = np.vstack(strokes)
    lo, hi = pts.min(axis=0) - pen / 2, pts.max(axis=0) + pen / 2
    side = int(rng.integers(0, 4))
    over = float(rng.uniform(0.0, 6.0))  # up to 6 px cut off by the frame
    shift = np.zeros(2)
    axis = side % 2
    if side < 2:
        shift[axis] = -lo[axis] - over
    else:
        shift[axis] = (SIZE - 1) - hi[axis] + over
    return [s + shift for s in strokes]


_SHARP = math.cos(math.radians(25.0))


def _draw(strokes, pen: float, draw: ImageDraw.ImageDraw) -> None:
    width = max(1, int(round(pen)))
    r = pen / 2.0
    for s in strokes:
        if len(s) >= 2:
            draw.line(s.ravel().tolist(), fill=1, width=width)
        elif width < 3:
            draw.point(tuple(s[0].tolist()), fill=1)
        if width >= 3:
            # Round pen: disks at the stroke ends and at sharp turns close the wedges
            # that Pillow leaves there (gentle turns leave no visible gap).
            keep = np.ones(len(s), dtype=bool)
            if len(s) > 2:
                d = np.diff(s, axis=0)
                dot = (d[:-1] * d[1:]).sum(1)
                norm = np.hypot(d[:-1, 0], d[:-1, 1]) * np.hypot(d[1:, 0], d[1:, 1]) + 1e-9
                keep[1:-1] = dot < _SHARP * norm
            for x, y in s[keep].tolist():
                draw.ellipse((x - r, y - r, x + r, y + r), fill=1)


def _specks(draw: ImageDraw.ImageDraw, strokes, rng: np.random.Generator) -> None:
    """A few dots of scanner/paper noise, placed away from the character."""
    pts = np.vstack(strokes)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    for _ in range(int(rng.integers(1, 4))):
        for _try in range(8):
            x, y = rng.uniform(2.0, SIZE - 3.0, 2)
            if x < lo[0] - 8 or x > hi[0] + 8 or y < lo[1] - 8 or y > hi[1] + 8:
                r = float(rng.uniform(0.6, 2.5))
                draw.ellipse((x - r, y - r, x + r, y + r), fill=1)
                break


@dataclass(frozen=True)
class HardCases:
    """Per-character probabilities of the hard cases of the real data."""

    speck: float = 0.03
    small: float = 0.015
    touch: float = 0.015


def render_characters(codes, style: WriterStyle, rng: np.random.Generator,
                      hard: HardCases = HardCases()) -> np.ndarray:
    """Render characters of one writer as 128x128 binary images (True = ink).

    Parameters
    ----------
    codes : bytes or array of int
        ASCII codes of the characters (``0-9``, ``A-Z``, ``a-z``).
    style : WriterStyle
        The writer's style (see :func:`draw_writer_style`).
    rng : numpy.random.Generator
        Source of the per-character distortion; the output depends only on it,
        the style and the codes.
    hard : HardCases
        Probabilities of specks, very small characters and characters touching the frame.

    Returns
    -------
    numpy.ndarray
        ``bool`` array of shape ``(n, 128, 128)``.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> im = render_characters([ord("8")], draw_writer_style(rng), rng)
    >>> bool(im.any())
    True
    """
    codes = np.frombuffer(codes, np.uint8) if isinstance(codes, (bytes, bytearray)) \
        else np.asarray(codes, dtype=np.int64)
    n = len(codes)
    out = np.zeros((n, SIZE, SIZE), dtype=bool)
    flags = rng.random((n, 3))
    for i, code in enumerate(codes.tolist()):
        small = flags[i, 1] < hard.small
        strokes, pen = _glyph_geometry(chr(code), style, rng, small)
        if flags[i, 2] < hard.touch:
            strokes = _touch_frame(strokes, pen, rng)
        img = Image.new("1", (SIZE, SIZE), 0)
        draw = ImageDraw.Draw(img)
        _draw(strokes, pen, draw)
        if flags[i, 0] < hard.speck:
            _specks(draw, strokes, rng)
        out[i] = np.asarray(img, dtype=bool)
    if n and style.rough > 0:
        # Thin strokes would break if pixels were taken off their edges.
        out = roughen(out, style.rough, rng, take=0.5 if style.pen >= 4 else 0.0)
    return out


def roughen(images: np.ndarray, p: float, rng: np.random.Generator, take: float = 0.5) -> np.ndarray:
    """Flip boundary pixels at random (ragged scanned edges), on a whole batch at once.

    Outer boundary pixels are inked with probability ``p``, inner ones cleared
    with probability ``p * take``.
    """
    # 4-neighbourhood dilation/erosion by slicing (much faster than ndimage here).
    grown = images.copy()
    grown[:, 1:, :] |= images[:, :-1, :]
    grown[:, :-1, :] |= images[:, 1:, :]
    grown[:, :, 1:] |= images[:, :, :-1]
    grown[:, :, :-1] |= images[:, :, 1:]
    shrunk = images.copy()
    shrunk[:, 1:, :] &= images[:, :-1, :]
    shrunk[:, :-1, :] &= images[:, 1:, :]
    shrunk[:, :, 1:] &= images[:, :, :-1]
    shrunk[:, :, :-1] &= images[:, :, 1:]
    out = images.copy().reshape(-1)
    # Random numbers only for boundary pixels: a full-size noise field costs more than the rest.
    outer = np.flatnonzero((grown & ~images).reshape(-1))
    out[outer[rng.random(len(outer)) < p]] = True
    if take > 0:
        inner = np.flatnonzero((images & ~shrunk).reshape(-1))
        out[inner[rng.random(len(inner)) < p * take]] = False
    return out.reshape(images.shape)
