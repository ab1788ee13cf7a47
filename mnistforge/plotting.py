"""Every picture the package draws: charts with matplotlib, image grids with Pillow.

* :func:`pyplot`: matplotlib (the optional ``[plot]`` extra) on the Agg backend, for the charts
  the evaluators draw (TARP, significance, Manitest, the card's interval chart);
* :func:`render_grid` / :func:`save_grid`: a labelled grid of sample images (``mnistforge show``,
  the demo, the card's gallery), with :func:`caption_for` and :func:`grid_title`;
* :func:`pair_strip` (two images and their difference, row by row: ``verify --report``) and
  :func:`matrix_picture` (a heat map with its values written: the card's confusion and POI
  tables); :func:`pil_font` is the font of them all.

>>> import numpy as np, tempfile, os
>>> imgs = np.zeros((6, 28, 28), np.uint8); imgs[:, 10:18, 12:16] = 255
>>> p = save_grid(imgs, [0, 1, 2, 0, 1, 2], ["a", "b", "c"],
...               os.path.join(tempfile.mkdtemp(), "g.png"), cols=3)
>>> from PIL import Image; Image.open(p).size
(276, 218)
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, SupportsInt

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw, ImageFont

from .errors import require
from .io.atomic import atomic_file

__all__ = ["pyplot", "pil_font", "caption_for", "grid_title", "render_grid", "save_grid",
           "pair_strip", "matrix_picture"]


def pyplot(purpose: str) -> Any:  # matplotlib.pyplot (the optional [plot] extra)
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or MissingDependencyError.

    >>> plt = pyplot("a picture")   # doctest: +SKIP
    """
    matplotlib = require("matplotlib", "plot", purpose)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def pil_font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's built-in font at ``size`` (a bitmap font of fixed size before Pillow 10.1)."""
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: bitmap font, fixed size
        return ImageFont.load_default()


def caption_for(label: SupportsInt | None, classes: Sequence[object] | np.ndarray | None = None) -> str:
    """The text shown over a cell: the class name, or the label number when the
    name cannot be drawn with Pillow's built-in font (e.g. Kuzushiji)."""
    if label is None:
        return ""
    label = int(label)
    if classes is not None and 0 <= label < len(classes):
        name = str(classes[label])
        try:
            name.encode("latin-1")
            return name
        except UnicodeEncodeError:
            return f"#{label}"
    return str(label)


class _Split(Protocol):
    """A loaded split (:mod:`mnistforge.loaders`), as far as a title needs it."""

    @property
    def name(self) -> str: ...

    @property
    def split(self) -> str: ...


def grid_title(ds: _Split, what: str = "") -> str:
    """The title of a sample grid of loaded split ``ds``: dataset, split, "synthetic" when the
    files were built from a synthetic SD19, then ``what`` (which images).

    >>> from types import SimpleNamespace
    >>> grid_title(SimpleNamespace(name="qmnist", split="test50k", synthetic=True), "64 of 1,000")
    'qmnist test50k (synthetic SD19): 64 of 1,000'
    """
    synthetic = " (synthetic SD19)" if getattr(ds, "synthetic", False) else ""
    return f"{ds.name} {ds.split}{synthetic}" + (f": {what}" if what else "")


def render_grid(images: npt.ArrayLike, labels: Sequence[SupportsInt] | np.ndarray | None = None,
                classes: Sequence[object] | np.ndarray | None = None, *, cols: int | None = None, scale: int = 3,
                captions: Sequence[str] | None = None, title: str | None = None, pad: int = 6,
                invert: bool = False) -> Image.Image:
    """A :class:`PIL.Image.Image` of ``images`` (``N x H x W`` uint8, ink high) in a grid of ``cols``
    columns (default: about square), magnified ``scale`` times, each captioned ``captions[i]`` or
    ``classes[labels[i]]``, with an optional ``title`` line; ``invert`` draws ink dark on white."""
    imgs = np.asarray(images)
    if imgs.ndim != 3:
        raise ValueError(f"images must be N x H x W, got shape {imgs.shape}")
    n, h, w = imgs.shape
    cols = cols or max(1, math.ceil(math.sqrt(n)))
    rows = max(1, math.ceil(n / cols))
    if captions is None:
        captions = [caption_for(labels[i] if labels is not None else None, classes) for i in range(n)]
    fsize = max(10, 4 * scale)
    font = pil_font(fsize)
    cap_h = fsize + 4 if any(captions) else 0
    cw, ch = w * scale, h * scale
    cell_w = max(cw, max((int(font.getlength(c)) for c in captions), default=0)) + pad
    cell_h = ch + cap_h + pad
    title_h = fsize + 8 if title else 0
    # the title is never cut: the canvas widens for it
    width = max(cols * cell_w + pad, int(font.getlength(title)) + 2 * pad if title else 0)
    canvas = Image.new("L", (width, rows * cell_h + pad + title_h), 235)
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((pad, 4), title, fill=0, font=font)
    for i in range(n):
        r, c = divmod(i, cols)
        x0 = pad + c * cell_w
        y0 = pad + title_h + r * cell_h
        tile = imgs[i].astype(np.uint8)
        if invert:
            tile = 255 - tile
        im = Image.fromarray(np.ascontiguousarray(tile), "L").resize((cw, ch), Image.Resampling.NEAREST)
        canvas.paste(im, (x0 + (cell_w - pad - cw) // 2, y0 + cap_h))
        if captions[i]:
            tw = font.getlength(captions[i])
            draw.text((x0 + (cell_w - pad - tw) / 2, y0), captions[i], fill=0, font=font)
    return canvas


def save_grid(images: npt.ArrayLike, labels: Sequence[SupportsInt] | np.ndarray | None = None,
              classes: Sequence[object] | np.ndarray | None = None, path: str | os.PathLike[str] = "grid.png",
              **kw: Any) -> Path:
    """Draw :func:`render_grid` and write it atomically as a PNG; return the path."""
    img = render_grid(images, labels, classes, **kw)
    path = Path(path)
    with atomic_file(path) as f:
        img.save(f, format="PNG", optimize=True)
    return path


def pair_strip(rows: Sequence[tuple[npt.ArrayLike, npt.ArrayLike, object]], scale: int = 3) -> Image.Image:
    """A Pillow image: one row per ``(image_a, image_b, caption)``, with |a - b| on the right."""
    h, w = np.asarray(rows[0][0]).shape
    cell_w, cell_h = w * scale, h * scale
    text_w = 330
    pad = 4
    canvas = Image.new("L", (3 * (cell_w + pad) + text_w, len(rows) * (cell_h + pad) + pad), 255)
    draw = ImageDraw.Draw(canvas)
    for k, (a, b, caption) in enumerate(rows):
        a = np.asarray(a, np.uint8)
        b = np.asarray(b, np.uint8)
        diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
        # Stretch small differences so a 1-level rounding error is visible.
        diff = (diff * (255.0 / max(1, diff.max()))).astype(np.uint8)
        y = pad + k * (cell_h + pad)
        for j, img in enumerate((a, b, diff)):
            tile = Image.fromarray(255 - img).resize((cell_w, cell_h), Image.Resampling.NEAREST)
            canvas.paste(tile, (j * (cell_w + pad), y))
        draw.text((3 * (cell_w + pad) + 4, y + cell_h // 2 - 6), str(caption)[:60], fill=0)
    return canvas


def matrix_picture(values: npt.ArrayLike, row_names: Sequence[object], col_names: Sequence[object],
                   fmt: Callable[[int, int], str], vmax: float | None = None, *, cell: int = 44) -> Image.Image:
    """A heat map drawn with Pillow: white (0) to blue (``vmax``), each cell's value written."""
    v = np.asarray(values, float)
    font = pil_font(12)
    lab = max(int(font.getlength(str(s))) for s in list(row_names) + list(col_names)) + 10
    h, w = v.shape
    img = Image.new("RGB", (lab + w * cell + 4, lab + h * cell + 4), "white")
    d = ImageDraw.Draw(img)
    top = float(vmax if vmax is not None else max(v.max(initial=0), 1e-12))
    for i in range(h):
        d.text((4, lab + i * cell + cell // 2 - 6), str(row_names[i]), fill="black", font=font)
        for j in range(w):
            x, y = lab + j * cell, lab + i * cell
            t = 0.0 if not np.isfinite(v[i, j]) else min(1.0, max(0.0, v[i, j] / top))
            fill = (int(255 - 200 * t), int(255 - 160 * t), 255)
            d.rectangle([x, y, x + cell - 1, y + cell - 1], fill=fill, outline=(200, 200, 200))
            text = fmt(i, j)
            d.text((x + (cell - font.getlength(text)) / 2, y + cell // 2 - 6), text,
                   fill="white" if t > 0.6 else "black", font=font)
    for j in range(w):
        d.text((lab + j * cell + 4, 4), str(col_names[j])[:6], fill="black", font=font)
    return img
