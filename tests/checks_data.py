"""Synthetic handwriting-like images for the tests of mnistforge.checks (no real data needed)."""
from __future__ import annotations

import numpy as np


def synth_digits(n: int, seed: int = 0, *, height: int = 20, top: int = 4,
                 width=(6, 15)) -> np.ndarray:
    """``n`` uint8 images of random pen strokes, taller than wide, inside a ``height`` box.

    Strokes join 4 random points of a box ``height`` rows tall (starting at
    row ``top``) and ``width`` columns wide, centred; ink 255 with a 128 rim.
    The outer pixel ring stays empty, so a one-pixel shift loses nothing.
    """
    rng = np.random.default_rng(seed)
    out = np.zeros((n, 28, 28), np.uint8)
    for k in range(n):
        w = int(rng.integers(width[0], width[1] + 1))
        left = 14 - w // 2
        pts = np.stack([rng.uniform(top, top + height - 1, 4),
                        rng.uniform(left, left + w - 1, 4)], axis=1)
        pts[0, 0], pts[-1, 0] = top, top + height - 1  # span the full height
        t = np.linspace(0, 1, 40)[:, None]
        line = np.concatenate([a + t * (b - a) for a, b in zip(pts[:-1], pts[1:])])
        r = np.clip(np.rint(line[:, 0]).astype(int), 1, 26)
        c = np.clip(np.rint(line[:, 1]).astype(int), 1, 26)
        img = out[k]
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                rr, cc = np.clip(r + dr, 1, 26), np.clip(c + dc, 1, 26)
                img[rr, cc] = np.maximum(img[rr, cc], 128)
        img[r, c] = 255
        # Crop the rim back into the box so the ink extent is exactly the box.
        img[:top] = 0
        img[top + height:] = 0
    return out


def synth_labels(n: int, n_classes: int = 10, seed: int = 0, balanced: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if balanced:
        lab = np.tile(np.arange(n_classes), n // n_classes + 1)[:n]
        return rng.permutation(lab).astype(np.uint8)
    return rng.integers(0, n_classes, n).astype(np.uint8)
