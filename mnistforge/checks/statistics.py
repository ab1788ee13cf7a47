"""Image statistics in the style of the QMNIST analysis, and orientation sanity.

Centre of mass, frame style (MNIST's 20x20 box against EMNIST's frame-filling characters), the pixel
histogram, and the orientation cue: the median *elongation* ``log((var_rows + 1) / (var_cols + 1))`` of the
ink, which transposing an image negates exactly (taken on the vertical-stroke classes when the class names are
known).  Definitions and the values measured on MNIST: ``docs/verify.md`` (image statistics, orientation).

>>> img = np.zeros((1, 28, 28), np.uint8); img[0, 4:24, 13:15] = 255   # a '1'
>>> orientation_score(img) > 0, orientation_score(img.transpose(0, 2, 1)) < 0
(True, True)
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DatasetNotFoundError
from ..registry import DatasetInfo, get_dataset
from .result import FAIL, PASS, WARN, CheckResult

VERTICAL_STROKE_CHARS = frozenset("1Iil")
"""Characters drawn as one vertical bar: the strongest orientation cue."""

BATCH = 8192


Moments = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def ink_moments(images: np.ndarray) -> Moments:
    """Per-image ink mass, centre of mass and second moments (float64), and ink bounding box (top, bottom, left,
    right; bottom/right exclusive), from one pass: the statistics and the orientation check share it."""
    n, h, w = images.shape
    mom, out = np.empty((5, n)), np.zeros((n, 4), np.int64)
    ii, jj = np.arange(h) + 0.5, np.arange(w) + 0.5
    for s in range(0, n, BATCH):
        x = np.asarray(images[s:s + BATCH])
        if x.dtype.kind in "ub" or (x.dtype.kind == "i" and x.dtype.itemsize <= 2):
            # Integer sums are exact, so converting them gives the float64 sums without a float64 copy of every
            # pixel (a quarter of the time); uint16 holds a uint8 row's sum; einsum sums 1.5x as fast as sum.
            acc = np.uint16 if x.dtype == np.uint8 and max(h, w) <= 257 else np.int64
            rows, cols = (np.einsum(f"bij->{k}", x, dtype=acc).astype(np.float64) for k in ("bi", "bj"))
        else:
            x = x.astype(np.float64)
            rows, cols = x.sum(axis=2), x.sum(axis=1)
        m = rows.sum(axis=1)
        safe = np.where(m > 0, m, 1.0)
        a, b = rows @ ii / safe, cols @ jj / safe
        mom[:, s:s + len(x)] = m, a, b, rows @ (ii ** 2) / safe - a ** 2, cols @ (jj ** 2) / safe - b ** 2
        # unsigned pixels: a row has ink when its sum is positive (no pass over the pixels)
        r, c = (rows > 0, cols > 0) if x.dtype.kind in "ub" else (np.any(x > 0, axis=2), np.any(x > 0, axis=1))
        box = [r.argmax(axis=1), h - r[:, ::-1].argmax(axis=1), c.argmax(axis=1), w - c[:, ::-1].argmax(axis=1)]
        out[s:s + len(x)] = np.where(r.any(axis=1)[:, None], np.stack(box, axis=1), 0)
    return mom[0], mom[1], mom[2], mom[3], mom[4], out


def _levels(images: np.ndarray, levels: Iterable[int]) -> dict[int | str, int]:
    """Pixels at each grey level of ``levels``, and ``total`` pixels with a level in 0..255."""
    n = len(images)
    counts: dict[int | str, int] = dict.fromkeys(levels, 0)
    counts["total"] = 0
    for s in range(0, n, BATCH):
        x = np.asarray(images[s:s + BATCH])
        if x.dtype == np.uint8:  # three compares instead of a histogram of every pixel
            for v in levels:  # zeros: the pixels count_nonzero leaves
                counts[v] += int(x.size - np.count_nonzero(x) if v == 0 else np.count_nonzero(x == v))
            counts["total"] += int(x.size)
        else:
            hist = np.bincount(x.reshape(-1), minlength=256)[:256]
            for v in levels:
                counts[v] += int(hist[v])
            counts["total"] += int(hist.sum())
    return counts


def image_statistics(images: np.ndarray, moments: Moments | None = None) -> dict[str, Any]:
    """QMNIST-style statistics of one split (see module docstring).

    Returns a dict of plain numbers: ``com_mean`` (row, col), ``com_std``, ``com_offset`` (mean minus
    geometric centre), ``share_in_20x20``, ``share_border4_empty``, ``share_fills_frame`` (long side >= 24),
    ``median_extent``, pixel shares ``share_0``, ``share_128``, ``share_255`` (of all pixels) and
    ``ink_share_128``, ``ink_share_255`` (of nonzero pixels), ``blank`` (images without ink) and ``style``.

    >>> x = np.zeros((2, 28, 28), np.uint8); x[:, 4:24, 10:18] = 255
    >>> s = image_statistics(x)
    >>> s["com_mean"], s["share_in_20x20"], s["style"]
    ([14.0, 14.0], 1.0, 'mnist')
    """
    images = np.asarray(images) if not hasattr(images, "shape") else images
    n, h, w = images.shape
    mass, ci, cj, vi, vj, ext = ink_moments(images) if moments is None else moments
    ink = mass > 0
    hgt = ext[:, 1] - ext[:, 0]
    wid = ext[:, 3] - ext[:, 2]
    border = 4
    inner = (ext[:, 0] >= border) & (ext[:, 1] <= h - border) & (ext[:, 2] >= border) & (ext[:, 3] <= w - border)
    in20 = (hgt <= 20) & (wid <= 20)
    longside = np.maximum(hgt, wid)
    frame = longside >= min(h, w) - 4
    hist = _levels(images, (0, 128, 255))
    total = max(1, int(hist["total"]))
    nonzero = max(1, int(hist["total"] - hist[0]))
    nk = max(1, int(ink.sum()))
    stats = {
        "images": int(n),
        "blank": int((~ink).sum()),
        "com_mean": [round(float(ci[ink].mean()), 4) if ink.any() else None,
                     round(float(cj[ink].mean()), 4) if ink.any() else None],
        "com_std": [round(float(ci[ink].std()), 4) if ink.any() else None,
                    round(float(cj[ink].std()), 4) if ink.any() else None],
        "com_offset": [round(float(ci[ink].mean() - h / 2), 4) if ink.any() else None,
                       round(float(cj[ink].mean() - w / 2), 4) if ink.any() else None],
        "share_in_20x20": round(float(in20[ink].sum() / nk), 6),
        "share_border4_empty": round(float(inner[ink].sum() / nk), 6),
        "share_fills_frame": round(float(frame[ink].sum() / nk), 6),
        "median_extent": [float(np.median(hgt[ink])) if ink.any() else None,
                          float(np.median(wid[ink])) if ink.any() else None],
        "share_0": round(float(hist[0] / total), 6),
        "share_128": round(float(hist[128] / total), 6),
        "share_255": round(float(hist[255] / total), 6),
        "ink_share_128": round(float(hist[128] / nonzero), 6),
        "ink_share_255": round(float(hist[255] / nonzero), 6),
    }
    stats["style"] = frame_style(stats)
    return stats


def frame_style(stats: dict[str, Any]) -> str:
    """``mnist`` (20x20 box), ``frame-filling`` (EMNIST-like) or ``other``."""
    if stats["share_in_20x20"] >= 0.99:
        return "mnist"
    if stats["share_fills_frame"] >= 0.5:
        return "frame-filling"
    return "other"


def elongation(images: np.ndarray, moments: Moments | None = None) -> np.ndarray:
    """Per-image ``log((var_rows + 1) / (var_cols + 1))`` of the ink (> 0 = taller than wide)."""
    images = np.asarray(images) if not hasattr(images, "shape") else images
    mass, _, _, vi, vj, _ = ink_moments(images) if moments is None else moments
    e = np.log((vi + 1.0) / (vj + 1.0))
    return e[mass > 0]


def orientation_score(images: np.ndarray, labels: npt.ArrayLike | None = None, classes: Sequence[object] | None = None,
                      moments: Moments | None = None) -> float:
    """Median elongation, on the vertical-stroke classes when they can be found (``moments``: of all images)."""
    sel = _vertical_stroke_mask(labels, classes)
    if sel is not None and sel.sum() >= 20:
        images, moments = np.asarray(images)[sel], None
    e = elongation(images, moments)
    return float(np.median(e)) if e.size else 0.0


def _vertical_stroke_mask(labels: npt.ArrayLike | None, classes: Sequence[object] | None) -> np.ndarray | None:
    if labels is None or not classes:
        return None
    stroke = [k for k, c in enumerate(classes) if c and all(ch in VERTICAL_STROKE_CHARS for ch in str(c))]
    if not stroke:
        return None
    labels = np.asarray(labels)
    # Class names index labels from 0; EMNIST letters labels start at 1 with a
    # placeholder at 0 or not: accept either by matching the name list length.
    return np.isin(labels, stroke)


def _entry(dataset: str | None) -> DatasetInfo | None:
    """The registry entry of ``dataset``, or None (no name, or a name the registry lacks)."""
    if not dataset:
        return None
    try:
        return get_dataset(dataset)
    except DatasetNotFoundError:
        return None


def expected_style(dataset: str | None) -> str | None:
    """The frame style a dataset must show: the registry's ``image_style`` (None: no
    expectation, e.g. fashion-mnist)."""
    info = _entry(dataset)
    return info.image_style if info is not None else None


def check_statistics(images: np.ndarray, split: str = "", dataset: str | None = None, *,
                     stats: dict[str, Any] | None = None, name: str | None = None) -> CheckResult:
    """Report the image statistics; fail when the frame style contradicts the dataset. MNIST/QMNIST must be ``mnist``
    style, EMNIST ``frame-filling``; other datasets are reported without judgement."""
    name = name or f"statistics[{split}]"
    stats = image_statistics(images) if stats is None else stats
    want = expected_style(dataset)
    values = dict(stats, expected_style=want)
    msg = (f"centre of mass {stats['com_mean'][0]:.2f},{stats['com_mean'][1]:.2f} "
           f"(sd {stats['com_std'][0]:.2f},{stats['com_std'][1]:.2f}); "
           f"in 20x20 {100 * stats['share_in_20x20']:.1f}%, "
           f"border empty {100 * stats['share_border4_empty']:.1f}%, "
           f"fills frame {100 * stats['share_fills_frame']:.1f}%; "
           f"255s {100 * stats['ink_share_255']:.1f}% / 128s {100 * stats['ink_share_128']:.2f}% "
           f"of ink; style {stats['style']}") if stats["com_mean"][0] is not None else "all blank"
    status = PASS
    if stats["com_mean"][0] is None:
        status = FAIL
    elif want is not None and stats["style"] != want:
        status = FAIL
        msg = f"style {stats['style']}, {dataset} is {want}: " + msg
    return CheckResult(name, status, values, msg)


def check_orientation(images: np.ndarray, labels: npt.ArrayLike | None = None, classes: Sequence[object] | None = None,
                      split: str = "", dataset: str | None = None, *, margin: float = 0.1,
                      name: str | None = None, moments: Moments | None = None) -> CheckResult:
    """Flag characters that appear transposed (e.g. EMNIST read without transposing). ``score`` > ``margin``: upright
    (pass); < ``-margin``: transposed (fail); in between: undecided (warning).  Datasets the registry does not mark as
    ``handwriting`` (fashion-mnist, KMNIST's cursive) are reported without judgement."""
    name = name or f"orientation[{split}]"
    sel = _vertical_stroke_mask(labels, classes)
    cue = "vertical-stroke classes" if sel is not None and sel.sum() >= 20 else "all images"
    score = orientation_score(images, labels, classes, moments)
    t_score = -score  # transposing negates every elongation exactly
    values = {"score": round(score, 4), "cue": cue, "margin": margin,
              "images_used": int(sel.sum()) if sel is not None and cue != "all images" else len(images)}
    info = _entry(dataset)
    judged = dataset is None or (info is not None and info.handwriting)
    values["judged"] = judged
    desc = f"elongation score {score:+.3f} on {cue} (transposed would be {t_score:+.3f})"
    if not judged:
        return CheckResult(name, PASS, values, desc + "; not judged for " + str(dataset))
    if score > margin:
        return CheckResult(name, PASS, values, "upright: " + desc)
    if score < -margin:
        return CheckResult(name, FAIL, values,
                           "characters look transposed (taller than wide once transposed): "
                           + desc + "; was an EMNIST-style file read without transposing?")
    return CheckResult(name, WARN, values, "orientation undecided: " + desc)
