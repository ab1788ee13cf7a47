"""``mnistforge manitest NAME:SPLIT --classifier SPEC --train NAME:SPLIT --group G``."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, EmptySelectionError

from .common import add_inputs, add_cache, add_json, add_offline, write_json
from . import argtypes

if TYPE_CHECKING:
    import numpy as np

    from ..evaluators.manitest import ManitestResult, TransformGroup
    from ..evaluators.manitest.score import Predictor
    from ..io.types import StrPath
    from ..loaders import DatasetSplit

NAME = "manitest"
HELP = "Manitest invariance scores of a classifier to geometric transformations"

logger = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "target", "train")
    p.add_argument("target", metavar="NAME[:SPLIT]",
                   help="images to score: dataset name or folder of idx files (default split test)")
    p.add_argument("--classifier", required=True, metavar="SPEC",
                   help="reference classifier (linear, knn:k=3, elm:hidden=2000, ...) trained "
                        "on --train, or module:callable (images N x 28 x 28 float in [0, 1] -> "
                        "labels)")
    p.add_argument("--train", default=None, metavar="NAME[:SPLIT]",
                   help="training data for a reference classifier (default: the train split "
                        "of the target's dataset or folder)")
    p.add_argument("--group", default="dilation-rotation",
                   help="rotation, translation, dilation-rotation, similarity, affine; a comma "
                        "list or 'all'")
    p.add_argument("--samples", type=argtypes.int_in(0, 10**6), default=200, help="images drawn at random (0: all)")
    p.add_argument("--seed", type=argtypes.seed, default=0)
    p.add_argument("--slice", default=None, metavar="A:B",
                   help="draw the sample from images A..B-1 of the target only")
    p.add_argument("--train-slice", default=None, metavar="A:B",
                   help="train on images A..B-1 of --train only")
    p.add_argument("--augment", action="store_true",
                   help="train on the data plus random similarity copies (shift <= 3 px, scale "
                        "0.7-1.3, rotation <= 0.2 rad)")
    p.add_argument("--augment-copies", type=argtypes.int_in(0, 100), default=4, help="copies per training image")
    p.add_argument("--cap", type=argtypes.int_in(1, 10**7), default=50_000, help="node cap per image")
    p.add_argument("--order", type=int, choices=(1, 3), default=3,
                   help="interpolation: 1 bilinear, 3 cubic B-spline")
    p.add_argument("--jacobian", choices=("analytic", "fd"), default="analytic")
    p.add_argument("--flip", action="store_true",
                   help="move t* off the grid, to where the label changes along the measured path")
    p.add_argument("--workers", type=argtypes.workers, default=None, help="processes (default 2)")
    add_json(p)
    p.add_argument("--plot", default=None, metavar="DIR", type=argtypes.output_folder,
                   help="pictures (needs the [plot] extra)")
    add_offline(p)
    add_cache(p)


def parse_slice(text: str | None) -> slice:
    """``"A:B"`` -> ``slice(A, B)`` (either side may be empty)."""
    if text is None:
        return slice(None)
    try:
        a, b = text.split(":")
        sl = slice(int(a) if a else None, int(b) if b else None)
    except ValueError as e:
        raise ConfigError("bad slice", expected="A:B, e.g. 5000:10000", found=text) from e
    # an empty or backwards slice would score nothing and still exit 0
    if (sl.start is not None and sl.start < 0) or (sl.stop is not None and sl.stop < 0) or \
            (sl.start is not None and sl.stop is not None and sl.stop <= sl.start):
        raise ConfigError("empty or backwards slice", expected="A:B with 0 <= A < B",
                          found=text)
    return sl


def check_slice(sl: slice, n: int, flag: str, target: str) -> None:
    """``--slice``/``--train-slice`` within the ``n`` images of ``target`` (Python would clip it,
    and score fewer images than asked, or none)."""
    from ..errors import IndexRangeError

    start = 0 if sl.start is None else sl.start
    stop = n if sl.stop is None else sl.stop
    if start >= n or stop > n:
        raise IndexRangeError(f"{flag} {start}:{'' if sl.stop is None else stop} reaches beyond "
                              f"{target}", expected=f"A:B with 0 <= A < B <= {n} ({n} images)",
                              found=f"{start}:{stop}", hint=f"e.g. {flag} 0:{n}")


def _load(target: str, default_split: str) -> tuple[DatasetSplit, str, Path | None]:
    from ..loaders import load, resolve_target

    name, split, root = resolve_target(target, default_split=default_split)
    ds = load(name, split, root=root)
    return ds, f"{name}:{split}", root


def require_classifier_extras(spec: str) -> None:
    """A reference classifier that needs an extra (lenet, cnn: ``[torch]``) says so at once."""
    from ..classifiers.base import REGISTRY, make_classifier
    from ..classifiers.neural import NeuralClassifier

    if spec.split(":", 1)[0].strip().lower() in REGISTRY:
        clf = make_classifier(spec)
        if isinstance(clf, NeuralClassifier):
            clf.resolve_device()


def build_classifier(args: argparse.Namespace, target_name: str,
                     root: Path | None = None) -> tuple[Predictor, str]:
    """Return ``(predict, description)`` for ``--classifier``."""
    import numpy as np

    from ..classifiers.base import REGISTRY, make_classifier, parse_spec
    from ..evaluators.manitest import as_predictor, load_callable

    head = args.classifier.split(":", 1)[0].strip().lower()
    if head not in REGISTRY and ":" in args.classifier:
        if args.augment:
            raise ConfigError("--augment retrains the classifier", expected="a reference "
                              "classifier spec (linear, knn:k=3, elm:hidden=2000)",
                              found=args.classifier, hint="augment your own model's training "
                              "with mnistforge.evaluators.augment.augment_similarity")
        return as_predictor(load_callable(args.classifier)), args.classifier
    parse_spec(args.classifier)
    name = target_name.split(":")[0]
    train_target = args.train or (f"{root}:{name}:train" if root else f"{name}:train")
    ds, train_name, _ = _load(train_target, "train")
    sl = parse_slice(args.train_slice)
    check_slice(sl, len(ds), "--train-slice", train_name)  # before the training
    X, y = np.asarray(ds.images[sl]), np.asarray(ds.labels[sl])
    desc = f"{args.classifier} trained on {train_name}"
    if args.train_slice:
        desc += f"[{args.train_slice}]"
    if args.augment:
        from ..evaluators.augment import augment_similarity

        X, y = augment_similarity(X, y, copies=args.augment_copies, seed=args.seed,
                                  include_original=True)
        desc += f" + {args.augment_copies} augmented copies"
    clf = make_classifier(args.classifier).fit(X, y)
    return as_predictor(clf), desc


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..evaluators.manitest import GROUPS, get_group, manitest

    groups = list(GROUPS) if args.group.strip() == "all" else \
        [get_group(g).name for g in args.group.split(",") if g.strip()]
    if not groups:  # nothing would be scored, and the run would still exit 0
        raise EmptySelectionError("no transformation group given", found=repr(args.group),
                                  expected="one or more of " + ", ".join(GROUPS) + ", or 'all'")
    if args.plot:
        from ..evaluators.manitest.plots import require_matplotlib
        require_matplotlib()
    require_classifier_extras(args.classifier)   # lenet/cnn without torch: before any load
    sl = parse_slice(args.slice)           # a usage error before any load
    parse_slice(args.train_slice)
    ds, target, root = _load(args.target, "test")
    check_slice(sl, len(ds), "--slice", target)   # before the classifier is trained
    offset = range(len(ds))[sl].start if len(ds) else 0
    images = np.asarray(ds.images[sl])
    predict, desc = build_classifier(args, target, root)
    docs = []
    print(f"Manitest on {target}{'[' + args.slice + ']' if args.slice else ''}, classifier "
          f"{desc}, {args.samples or len(images)} images, seed {args.seed}")
    for g in groups:
        res = manitest(images, predict, g, samples=args.samples or None, seed=args.seed,
                       classifier_name=desc, workers=args.workers or 2, order=args.order,
                       cap=args.cap, jacobian=args.jacobian, keep_map=bool(args.plot),
                       flip=args.flip)
        print(res.summary())
        doc = res.to_json()
        # indices in the JSON refer to the whole split, not to the --slice
        doc["indices"] = [i + offset for i in doc["indices"]]
        for det in doc["details"]:
            det["index"] += offset
        doc.update(target=target, slice=args.slice, augment=bool(args.augment))
        docs.append(doc)
        if args.plot:
            _plots(res, images, args.plot, get_group(g), offset)
    if args.json:
        out = docs[0] if len(docs) == 1 else {"groups": docs}
        if write_json(args, out, default=_jsonable):
            print(f"JSON written to {args.json}")
    return 0


def _jsonable(obj: object) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(type(obj).__name__)


def _plots(res: ManitestResult, images: np.ndarray, folder: StrPath, group: TransformGroup, offset: int = 0,
           maps: int = 3) -> None:
    from ..evaluators.manitest.plots import plot_distance_map, plot_strip

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if any(r.score is not None for r in res.images):
        p = plot_strip(res, images, folder / f"{group.name}-strip.png")
        print(f"picture written to {p}")
    if group.dim == 2:
        done = 0
        for r in sorted(res.images, key=lambda r: -(r.visited)):
            if r.distance_map is None or done >= maps:
                continue
            score = "no change" if r.score is None else f"score {r.score:.3f}"
            assert r.index is not None  # manitest() numbers every image it scores
            p = plot_distance_map(r, folder / f"{group.name}-map-{r.index + offset}.png", group,
                                  title=f"{group.name}, image {r.index + offset}: {score}")
            print(f"picture written to {p}")
            done += 1
