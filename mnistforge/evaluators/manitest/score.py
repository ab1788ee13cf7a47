"""Invariance scores: Manitest on one image, and the global score over a sample.

The march (:func:`.marching.fast_march`) stops at the first accepted node ``t*`` with
``f(I_t*) != f(I)``; the invariance score is ``d(e, t*) / ||I||_2``.  A march that ends without a
label change (``"cap"`` or ``"boundary"``) gives **no score**, only a lower bound.  Images are
float in [0, 1] (uint8 divided by 255), ``N x H x W``.  Definitions: ``docs/manitest.md``.
"""
from __future__ import annotations

import importlib
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from ...classifiers.torch_models import require_torch
from ...errors import ClassifierOutputError, ConfigError, EmptySelectionError, IndexRangeError
from ...io.workers import n_jobs, parallel_tasks
from ...progress import progress
from .groups import TransformGroup, get_group
from .marching import DEFAULT_CAP, MarchResult, Node, fast_march
from .paths import first_change, path_lengths, shortest_path
from .warp import SplineImage, as_float_images, jacobian_fd, metric_tensors, spline_image, warp_nodes

logger = logging.getLogger(__name__)

#: images (``N x H x W`` float in [0, 1]) -> labels (``N``)
Predictor = Callable[[np.ndarray], np.ndarray]

STATUSES = ("changed", "cap", "boundary")
#: label-changed Trial nodes whose march value is within this factor of the stop node's are
#: measured too: the march's values can be off by ~10 % either way, so its first changed
#: node need not be the nearest by path length
CANDIDATE_MARGIN = 1.25
#: ... at most this many of them (nearest by march value)
MAX_CANDIDATES = 6


def as_predictor(model: Any) -> Predictor:
    """A function ``images (N x H x W float in [0, 1]) -> labels (N,)`` from ``model``.

    Accepts an object with ``predict`` (the package's classifiers, scikit-learn models), a
    ``torch.nn.Module`` (argmax of its outputs on ``N x 1 x H x W`` float32 tensors; torch
    is imported only then), or any callable on image batches.

    >>> f = as_predictor(lambda x: (x.sum(axis=(1, 2)) > 1).astype(int))
    >>> f(np.ones((2, 3, 3))).tolist()
    [1, 1]
    """
    if getattr(model, "_manitest_checked", False):
        checked: Predictor = model
        return checked
    if hasattr(model, "predict") and callable(model.predict):
        raw = model.predict
    elif _is_torch_module(model):
        raw = torch_predictor(model)
    elif callable(model):
        raw = model
    else:
        raise ConfigError("not a classifier", expected="an object with predict(images), a torch "
                          "module or a callable on image batches", found=type(model).__name__)

    def predict(x: np.ndarray) -> np.ndarray:
        return labels_of(raw(x), len(x))
    predict._manitest_checked = True  # type: ignore[attr-defined]
    return predict


def labels_of(out: npt.ArrayLike, n: int) -> np.ndarray:
    """A classifier's output on ``n`` images as ``n`` labels, or :class:`ClassifierOutputError`.

    One label per image (``N`` or ``N x 1``); scores (``N x C``), a scalar or another count
    are refused: raveled, they would be compared as if they were labels.

    >>> labels_of([[3], [5]], 2).tolist()
    [3, 5]
    >>> labels_of(np.zeros((2, 10)), 2)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.ClassifierOutputError: the classifier's output has the wrong shape: ...
    """
    arr = np.asarray(out)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.shape != (n,):
        hint = ("return predicted labels (e.g. scores.argmax(1)), not scores" if arr.ndim == 2
                and arr.shape[0] == n else "return one label per image of the batch")
        raise ClassifierOutputError("the classifier's output has the wrong shape",
                                    expected=f"{n} labels (shape ({n},)) for {n} images",
                                    found=f"shape {arr.shape}", hint=hint)
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ClassifierOutputError("the classifier's output holds NaN or infinite labels",
                                    expected="labels", found=f"{arr.dtype} values",
                                    hint="return predicted labels, not scores")
    return arr


def _is_torch_module(model: Any) -> bool:
    return (type(model).__module__ or "").startswith("torch") or any(
        (c.__module__ or "").startswith("torch.nn") for c in type(model).__mro__)


def torch_predictor(model: Any, device: Any = None, batch: int = 1024) -> Predictor:
    """Wrap a PyTorch classifier (logits ``N x C``) as an image-batch predictor."""
    torch = require_torch()
    dev = torch.device(device) if device else next(
        (p.device for p in model.parameters()), torch.device("cpu"))

    def predict(x: np.ndarray) -> np.ndarray:
        model.eval()
        out: list[np.ndarray] = []
        with torch.no_grad():
            for s in range(0, len(x), batch):
                xt = torch.from_numpy(np.ascontiguousarray(x[s:s + batch], np.float32))
                out.append(model(xt.unsqueeze(1).to(dev)).argmax(1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, np.int64)
    return predict


def load_callable(spec: str) -> Any:
    """Import ``"module:attribute"`` (a callable or an object with ``predict``).

    >>> load_callable("math:floor")(2.5)
    2
    """
    mod, sep, attr = spec.partition(":")
    if not sep or not mod or not attr:
        raise ConfigError("malformed model reference", expected="module:callable", found=spec)
    try:
        obj = importlib.import_module(mod)
    except ImportError as e:
        raise ConfigError("cannot import the model's module", expected=f"an importable module "
                          f"{mod!r}", found=str(e), hint="check PYTHONPATH") from e
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError("model not found in its module", expected=f"{mod}:{attr}",
                              found=f"no attribute {part!r}")
        obj = getattr(obj, part)
    return obj


@dataclass
class ImageScore:
    """Manitest result for one image (``params``/``path`` in group parameter units)."""

    index: int | None
    status: str                    # "changed", "cap" or "boundary"
    score: float | None            # d(e, t*) / ||I||, None unless status == "changed"
    distance: float | None         # d(e, t*): length of the shortest path found (see .paths)
    norm: float                    # ||I||_2 (pixels in [0, 1])
    lower_bound: float             # largest distance reached / ||I|| (a bound when no change)
    label: object                  # the classifier's label of the original image
    new_label: object | None       # its label of I_t*
    params: list[float] | None     # t*
    path: list[list[float]]        # geodesic path from the identity to t* (grid nodes)
    visited: int                   # Known nodes
    created: int                   # nodes whose metric and label were computed
    group: str = ""
    chord: float | None = None     # ||I_t* - I||, a lower bound of ``distance``
    march_distance: float | None = None   # the fast-marching value at t* (approximate)
    path_kind: str | None = None   # "straight", "grid", "two-segment" or "bent"
    refined_path: list[list[float]] | None = None      # vertices of that path, identity to t*
    grid_params: list[float] | None = None       # the grid node found by the march (= params unless flip)
    transformed: np.ndarray | None = field(default=None, repr=False)   # I_t* (H x W)
    distance_map: dict[str, np.ndarray] | None = field(default=None, repr=False)        # see keep_map

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("transformed")
        d.pop("distance_map")
        for key in ("label", "new_label"):
            if isinstance(d[key], np.generic):
                d[key] = d[key].item()
        return d


_JACOBIAN_OK: dict[tuple[TransformGroup, int], bool] = {}


def _check_jacobian(spl: SplineImage, group: TransformGroup, tol: float = 1e-3) -> bool:
    """Analytic Jacobian vs finite differences at two nodes; True when they agree.

    The nodes sit off the pixel lines: bilinear warps have kinks there (on the grid nodes
    of the translation group, e.g.), where one-sided and central differences differ.
    """
    st = np.asarray(group.steps)
    T = np.array([0.137 * st + 0.0113, -0.291 * st + 0.0071])
    Ja = warp_nodes(spl, group, T)[1]
    Jf = jacobian_fd(spl, group, T, h=1e-5)
    scale = max(float(np.abs(Jf).max()), 1e-12)
    return float(np.abs(Ja - Jf).max()) <= tol * scale


def score_image(image: npt.ArrayLike, predict: Any, group: TransformGroup | str = "dilation-rotation", *,
                order: int = 3, cap: int = DEFAULT_CAP, jacobian: str = "analytic", keep_map: bool = False,
                index: int | None = None, factored: bool = True, init_radius: int = 1,
                label: Any = None, refine: bool = True, flip: bool = False) -> ImageScore:
    """Manitest on one image (``H x W``, uint8 scaled to [0, 1], or float): the nearest
    label-changing transformation of ``group`` and its distance, for the classifier ``predict``
    (:func:`as_predictor`; ``label``: its label of ``image``, computed when not given).

    ``order``: interpolation, 1 bilinear or 3 cubic B-spline; ``cap``: the node cap (50,000 as in
    the paper); ``jacobian``: ``"analytic"`` (spline derivatives times generator fields; checked
    against finite differences on the first image of each group and order, a mismatch switches
    to ``"fd"``, logged) or ``"fd"``; ``keep_map``: keep every Known node's parameters, distance
    and label in ``distance_map`` (pictures, checks), plus the created nodes whose label differs.
    ``refine``: the distance is the shortest of several actual paths (:func:`.paths.shortest_path`),
    also to the label-changed nodes the march ranked close behind ``t*``; False: the straight path
    to the march's ``t*`` only (still at least the chord).  ``flip``: move ``t*`` off the grid, to
    the first point of the measured path where the label changes (one of 32 points between the
    last two samples), and measure the path up to it (``grid_params`` keeps the grid node).

    >>> yy, xx = np.mgrid[0:28, 0:28]
    >>> blob = np.exp(-((xx - 13.5) ** 2 + (yy - 13.5) ** 2) / 8.0)
    >>> right = lambda x: (np.tensordot(x, np.arange(28.0), ([2], [0])).sum(1)
    ...                    / x.sum(axis=(1, 2)) > 15.0).astype(int)   # centre of mass x > 15
    >>> r = score_image(blob, right, "translation", cap=2000)
    >>> r.status, r.params[0] > 1.5
    ('changed', True)
    """
    group = get_group(group)
    predict = as_predictor(predict)
    img = as_float_images(image)
    if img.ndim != 2:
        raise ConfigError("score_image takes one image", expected="H x W", found=str(img.shape))
    spl = spline_image(img, order)
    if jacobian == "analytic":
        key = (group, order)
        if key not in _JACOBIAN_OK:   # checked once per group and order in each process
            _JACOBIAN_OK[key] = _check_jacobian(spl, group)
            if not _JACOBIAN_OK[key]:
                logger.warning("analytic Jacobian of %s (order %d) disagrees with finite "
                               "differences; using finite differences", group.name, order)
        if not _JACOBIAN_OK[key]:
            jacobian = "fd"
    elif jacobian not in ("analytic", "fd"):
        raise ConfigError("unknown jacobian method", expected="analytic or fd", found=jacobian)
    if label is None:
        label = np.asarray(predict(img[None]))[0]
    steps = np.asarray(group.steps)

    def evaluate(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        T = K * steps
        imgs, J = warp_nodes(spl, group, T)
        if jacobian == "fd":
            J = jacobian_fd(spl, group, T)
        return metric_tensors(J), np.asarray(predict(imgs))

    lo, hi = group.grid_limits()
    assert group.steps is not None  # set by TransformGroup.__post_init__
    res = fast_march(group.steps, lo, hi, evaluate, cap=cap, stop=lambda lab: lab != label,
                     factored=factored, init_radius=init_radius)
    norm = float(np.sqrt((img * img).sum()))
    safe = norm if norm > 0 else math.nan
    out = ImageScore(index=index, status=res.status, score=None, distance=None, norm=norm,
                     lower_bound=res.max_distance() / safe, label=label, new_label=None,
                     params=None, path=[], visited=res.visited, created=res.created,
                     group=group.name)
    if res.status == "changed":
        node, length, verts, kind = _nearest_change(res, label, img, spl, group, refine)
        t = np.array(node, np.float64) * steps
        out.distance = length
        out.score = out.distance / safe
        out.new_label = res.labels[node]
        out.params = t.tolist()
        out.path = [(np.array(n) * steps).tolist() for n in res.path(node)]
        out.march_distance = float(res.values.get(node, res.trial.get(node, math.nan)))
        out.path_kind = kind
        out.refined_path = np.asarray(verts).tolist()
        out.grid_params = out.params
        if flip:
            hit = first_change(img, spl, group, verts, predict, label)
            if hit is not None and len(hit[1]) > 1:
                t, verts, out.new_label = hit
                out.params = t.tolist()
                out.refined_path = verts.tolist()
                out.distance = float(path_lengths(img, spl, group, [verts])[0])
                out.score = out.distance / safe
        out.transformed = warp_nodes(spl, group, t[None], jacobian=False)[0]
        out.chord = float(np.linalg.norm(out.transformed - img))
    if keep_map:
        nodes = np.array(res.order, np.int64).reshape(-1, group.dim)
        changed = [n for n, lab in res.labels.items() if lab != label]
        out.distance_map = {
            "params": nodes * steps,
            "distance": np.array([res.values[n] for n in res.order]),
            "labels": np.array([res.labels.get(n) for n in res.order]),
            "changed_params": np.array(changed, np.int64).reshape(-1, group.dim) * steps,
            "steps": steps,
        }
    return out


def _nearest_change(res: MarchResult, label: Any, img: np.ndarray, spl: SplineImage, group: TransformGroup,
                    refine: bool) -> tuple[Node, float, np.ndarray, str]:
    """``(node, length, vertices, kind)`` of the label-changed node nearest by path length.

    Candidates: the march's stop node and the label-changed Trial nodes whose tentative
    value is within :data:`CANDIDATE_MARGIN` of it.  All are measured along the straight
    path in one batch; the shortest then gets the full refinement (a bent path shortens a
    straight one by a fraction of a per cent on MNIST, far less than candidates differ).
    """
    steps = np.asarray(group.steps)
    stop = res.stop_node
    assert stop is not None  # called for a march that changed the label
    nodes = [stop]
    if refine:
        limit = CANDIDATE_MARGIN * res.values[stop]
        near = sorted((v, n) for n, v in res.trial.items()
                      if v <= limit and n in res.labels and res.labels[n] != label)
        nodes += [n for _, n in near[:MAX_CANDIDATES - 1]]
    T = [np.array(n, np.float64) * steps for n in nodes]
    zero = np.zeros(group.dim)
    straight = path_lengths(img, spl, group, [np.stack([zero, t]) for t in T])
    if not refine:
        return stop, float(straight[0]), np.stack([zero, T[0]]), "straight"
    i = int(np.argmin(straight))          # first minimum: the stop node wins ties
    grid = [np.array(p, np.float64) * steps for p in res.path(nodes[i])]
    length, verts, kind = shortest_path(img, spl, group, T[i], grid)
    return nodes[i], length, verts, kind


@dataclass
class ManitestResult:
    """Global invariance score of a classifier over a sample of images."""

    group: str
    classifier: str
    samples: int
    mean_score: float | None       # mean over images whose label changed
    ci95: list[float] | None       # 95 % t-interval of that mean
    std: float | None
    scores: list[float | None]     # per image: score, or None when no change was found
    statuses: list[str]
    reached_cap: int               # images without a label change (cap or boundary)
    reached_boundary: int          # ... of which every node inside the bounds was visited
    indices: list[int]
    mean_lower_bound: float | None  # mean over all images of score or lower bound
    cap: int = DEFAULT_CAP
    order: int = 3
    seed: int | None = None
    images: list[ImageScore] = field(default_factory=list, repr=False)   # ImageScore per image

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "images"}
        d["details"] = [r.to_json() for r in self.images]
        return d

    def summary(self) -> str:
        if self.mean_score is None:
            return (f"{self.group}: no label change within the search for any of "
                    f"{self.samples} images")
        lo, hi = self.ci95 if self.ci95 else (math.nan, math.nan)
        return (f"{self.group}: mean score {self.mean_score:.4f} (95% CI {lo:.4f}-{hi:.4f}) "
                f"over {self.samples - self.reached_cap} of {self.samples} images; "
                f"{self.reached_cap} without a label change (cap/boundary)")


def mean_ci(values: npt.ArrayLike, level: float = 0.95
            ) -> tuple[float | None, tuple[float, float] | None, float | None]:
    """Mean, ``level`` t-interval and standard deviation of ``values``.

    >>> m, (lo, hi), s = mean_ci([1.0, 2.0, 3.0])
    >>> m, round(lo, 3), round(hi, 3)
    (2.0, -0.484, 4.484)
    """
    v = np.asarray(values, np.float64)
    if v.size == 0:
        return None, None, None
    m = float(v.mean())
    if v.size == 1:
        return m, None, None
    s = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1)) * s / math.sqrt(v.size)
    return m, (m - half, m + half), s


def _score_chunk(images: np.ndarray, indices: Sequence[int], predict: Predictor,
                 kw: dict[str, Any]) -> list[ImageScore]:
    """One joblib task: a pure function of its arguments (a Dask or Ray worker gets them pickled)."""
    return [score_image(img, predict, index=i, **kw) for img, i in zip(images, indices)]


def manitest(images: np.ndarray, predict: Any, group: TransformGroup | str = "dilation-rotation", *,
             samples: int | None = 200, seed: int = 0, indices: npt.ArrayLike | None = None,
             classifier_name: str = "", workers: int | None = None,
             progress_desc: str | None = None, **kw: Any) -> ManitestResult:
    """Global Manitest score over a seeded random sample of ``images`` (``N x H x W``).

    ``samples`` images are drawn without replacement with ``default_rng(seed)`` (None: all), or
    exactly the ``indices`` given are scored, in chunks of images run as joblib tasks on
    ``workers`` processes (None: as ``joblib.parallel_config`` says, serial outside one; the
    classifier is pickled to them); results do not depend on it.  ``**kw``
    go to :func:`score_image` (``order``, ``cap``, ``jacobian``, ``keep_map``...).

    >>> yy, xx = np.mgrid[0:28, 0:28]
    >>> imgs = np.stack([np.exp(-((xx - 13.5 - s) ** 2 + (yy - 13.5) ** 2) / 6.0)
    ...                  for s in (-1.0, 0.0, 1.0)])
    >>> right = lambda x: (np.tensordot(x, np.arange(28.0), ([2], [0])).sum(1)
    ...                    / x.sum(axis=(1, 2)) > 13.5).astype(int)
    >>> res = manitest(imgs, right, "translation", samples=None, cap=3000)
    >>> res.samples, res.reached_cap, res.statuses
    (3, 0, ['changed', 'changed', 'changed'])
    """
    group = get_group(group)
    n = len(images)
    if n == 0 or np.ndim(images) != 3:
        raise EmptySelectionError("no images to score", expected="images N x H x W with N >= 1",
                                  found=f"shape {np.shape(images)}",
                                  hint="check the slice or the sample size")
    for name, value in (("samples", samples), ("seed", seed)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise ConfigError(f"invalid {name}", expected="a whole number", found=repr(value))
    if samples is not None and samples < 1:
        raise EmptySelectionError("no images to score", expected="samples >= 1 (None: all)", found=samples)
    if seed < 0:
        raise ConfigError("invalid seed", expected="an integer >= 0", found=seed)
    if indices is None:
        if samples is None or samples >= n:
            indices = np.arange(n)
        else:
            indices = np.sort(np.random.default_rng(seed).choice(n, size=samples, replace=False))
    idx = np.asarray(indices)
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise EmptySelectionError("no images to score", expected="a non-empty list of integer "
                                  "indices", found=f"{idx.dtype} {idx.shape}")
    if int(idx.min()) < 0 or int(idx.max()) >= n:
        raise IndexRangeError("Manitest index out of range", expected=f"indices in 0..{n - 1} "
                              f"({n} images)", found=f"{int(idx.min())}..{int(idx.max())}")
    indices = idx.astype(np.int64)
    predict = as_predictor(predict)
    # one image through the classifier first: a wrong output shape is named before the work
    predict(as_float_images(np.asarray(images[int(indices[0])]))[None])
    kw = dict(kw, group=group)
    size = max(1, len(indices) // (8 * n_jobs(workers)))
    chunks = [(np.asarray(images)[indices[s:s + size]], indices[s:s + size].tolist(), predict, kw)
              for s in range(0, len(indices), size)]
    results: list[ImageScore] = []
    with progress(total=len(indices), desc=progress_desc or f"manitest {group.name}", unit="img") as bar:
        for scored in parallel_tasks(_score_chunk, chunks, "scoring Manitest", workers):
            results += scored
            bar.update(len(scored))
    return summarise(results, group.name, classifier_name, indices, cap=kw.get("cap", DEFAULT_CAP),
                     order=kw.get("order", 3), seed=seed)


def summarise(results: Sequence[ImageScore], group_name: str, classifier_name: str, indices: Iterable[int],
              cap: int = DEFAULT_CAP, order: int = 3, seed: int | None = None) -> ManitestResult:
    """Build a :class:`ManitestResult` from per-image :class:`ImageScore` objects."""
    scores = [r.score for r in results]
    got = [s for s in scores if s is not None]
    m, ci, sd = mean_ci(got)
    bounds = [r.score if r.score is not None else r.lower_bound for r in results]
    bounds = [b for b in bounds if b is not None and not math.isnan(b)]
    statuses = [r.status for r in results]
    return ManitestResult(
        group=group_name, classifier=classifier_name, samples=len(results), mean_score=m,
        ci95=list(ci) if ci else None, std=sd, scores=scores, statuses=statuses,
        reached_cap=sum(s != "changed" for s in statuses),
        reached_boundary=sum(s == "boundary" for s in statuses),
        indices=[int(i) for i in indices],
        mean_lower_bound=float(np.mean(bounds)) if bounds else None, cap=cap, order=order,
        seed=seed, images=list(results))
