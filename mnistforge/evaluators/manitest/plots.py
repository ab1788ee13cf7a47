"""Pictures for Manitest (optional ``[plot]`` extra: matplotlib is imported lazily)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...plotting import pyplot
from ...errors import ConfigError
from ...io.atomic import atomic_file
from ...io.types import StrPath
from .groups import TransformGroup, get_group
from .score import ImageScore, ManitestResult
from .warp import as_float_images


def require_matplotlib() -> Any:
    """matplotlib.pyplot (Agg backend), or MissingDependencyError naming the [plot] extra."""
    return pyplot("Manitest pictures")


def _save(fig: Any, path: StrPath) -> None:
    path = Path(path)
    with atomic_file(path) as f:
        fig.savefig(f, format=path.suffix.lstrip(".") or "png", dpi=120, bbox_inches="tight")


def plot_distance_map(result: ImageScore, path: StrPath, group: TransformGroup | str | None = None,
                      title: str | None = None) -> Path:
    """Geodesic distance over a 2-D group, the label-change region and the geodesic path.

    ``result`` is an :class:`~.score.ImageScore` computed with ``keep_map=True``.
    """
    plt = require_matplotlib()
    m = result.distance_map
    if m is None or m["params"].shape[1] != 2:
        raise ConfigError("no 2-D distance map in this result", expected="a 2-parameter group "
                          "scored with keep_map=True", found=result.group)
    g = get_group(group or result.group)
    P, D = m["params"], m["distance"]
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    sc = ax.scatter(P[:, 0], P[:, 1], c=D, cmap="viridis", s=60, marker="s", linewidths=0)
    fig.colorbar(sc, ax=ax, label="geodesic distance d(e, t)")
    C = m["changed_params"]
    if len(C):
        ax.scatter(C[:, 0], C[:, 1], marker="x", c="red", s=30, label="label changes (evaluated nodes)")
    if result.path:
        path_arr = np.array(result.path)
        ax.plot(path_arr[:, 0], path_arr[:, 1], "-", c="white", lw=2.5)
        ax.plot(path_arr[:, 0], path_arr[:, 1], "-", c="black", lw=1.2, label="geodesic path")
        ax.plot(*path_arr[-1], "*", c="red", ms=14, mec="black", label="t*")
    ax.plot(0, 0, "o", c="white", mec="black", label="identity")
    ax.set_xlabel(g.params[0])
    ax.set_ylabel(g.params[1])
    ax.legend(loc="best", fontsize=7)
    score = "no change" if result.score is None else f"score {result.score:.3f}"
    ax.set_title(title or f"{g.name}, image {result.index}: {score}")
    _save(fig, path)
    plt.close(fig)
    return Path(path)


def plot_strip(manitest_result: ManitestResult, images: np.ndarray, path: StrPath, n: int = 12) -> Path:
    """Originals (top) over their minimally label-changing transforms (bottom), by score."""
    plt = require_matplotlib()
    rows = [r for r in manitest_result.images if r.score is not None and r.transformed is not None]
    rows.sort(key=lambda r: r.score if r.score is not None else float("inf"))  # all scored (above)
    if len(rows) > n:  # spread over the score range
        pick = np.unique(np.linspace(0, len(rows) - 1, n).round().astype(int))
        rows = [rows[i] for i in pick]
    if not rows:
        raise ConfigError("nothing to draw", expected="at least one image whose label changed", found="none")
    fig, axes = plt.subplots(2, len(rows), figsize=(1.2 * len(rows) + 0.6, 2.9), squeeze=False)
    for j, r in enumerate(rows):
        axes[0, j].imshow(as_float_images(images[r.index]), cmap="gray_r", vmin=0, vmax=1)
        axes[0, j].set_title(f"{r.label}", fontsize=8)
        axes[1, j].imshow(r.transformed, cmap="gray_r", vmin=0, vmax=1)
        axes[1, j].set_title(f"{r.new_label}  {r.score:.2f}", fontsize=8)
        for ax in axes[:, j]:
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0, 0].set_ylabel("original", fontsize=8)
    axes[1, 0].set_ylabel("t*", fontsize=8)
    fig.suptitle(f"{manitest_result.group} ({manitest_result.classifier}): label, "
                 "then new label and score", fontsize=9)
    _save(fig, path)
    plt.close(fig)
    return Path(path)
