"""Manitest: how invariant is a classifier to geometric transformations?

Fawzi & Frossard, "Manitest: Are classifiers really invariant?" (BMVC 2015); definitions in
``spec/evaluators.md`` section 3, method and checks in ``docs/manitest.md``.

* :mod:`.groups` — rotation, translation, dilation+rotation, similarity, affine;
* :mod:`.warp` — batched warps (cubic spline or bilinear, zero padding) and exact
  Jacobians, metric ``G = J^T J``;
* :mod:`.marching` — fast marching on the lazily grown parameter grid;
* :mod:`.score` — the invariance score of one image and the global score of a sample;
* :mod:`.plots` — pictures (optional ``[plot]`` extra).

>>> import numpy as np
>>> from mnistforge.evaluators.manitest import manitest
>>> yy, xx = np.mgrid[0:28, 0:28]
>>> img = np.exp(-((xx - 12.0) ** 2 + (yy - 13.5) ** 2 / 4.0) / 6.0)[None]
>>> wide = lambda x: (np.abs(x.sum(1)).argmax(1) > 12).astype(int)   # toy classifier
>>> manitest(img, wide, "rotation", samples=None).statuses
['changed']
"""
from .groups import GROUPS, TransformGroup, get_group
from .marching import DEFAULT_CAP, MarchResult, fast_march
from .score import (ImageScore, ManitestResult, as_predictor, load_callable, manitest, mean_ci,
                    score_image, summarise, torch_predictor)
from .warp import jacobian_fd, metric, spline_image, transform_images, warp_nodes

__all__ = [
    "GROUPS", "TransformGroup", "get_group", "DEFAULT_CAP", "MarchResult", "fast_march",
    "ImageScore", "ManitestResult", "as_predictor", "load_callable", "manitest", "mean_ci",
    "score_image", "summarise", "torch_predictor", "jacobian_fd", "metric", "spline_image",
    "transform_images", "warp_nodes",
]
