"""``mnistforge show NAME [SPLIT] --out grid.png``: a labelled sample grid as a PNG."""
from __future__ import annotations

import argparse

from .common import add_inputs, add_cache, add_offline, add_progress, download_flag
from . import argtypes

NAME = "show"
HELP = "draw a labelled grid of sample images of a dataset split (or folder) as a PNG"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "target", "root")
    p.add_argument("target", metavar="NAME[:SPLIT]",
                   help="dataset name, NAME:SPLIT (e.g. mnist:test, emnist-letters:train[:1000]), "
                        "or folder of idx files (FOLDER[:NAME][:SPLIT])")
    p.add_argument("split", nargs="?", default=None, help="split, the same as NAME:SPLIT (default test)")
    p.add_argument("--out", required=True, type=argtypes.output_file, help="PNG file to write")
    p.add_argument("-n", "--count", type=argtypes.int_in(1, 10_000), default=64, help="number of images (default 64)")
    p.add_argument("--start", type=argtypes.int_in(0, 10**9), default=0, help="first index (default 0)")
    p.add_argument("--seed", type=argtypes.seed, default=None,
                   help="draw a random sample with this seed instead of consecutive images")
    p.add_argument("--cols", type=argtypes.int_in(1, 256), default=None, help="columns (default: about square)")
    p.add_argument("--scale", type=argtypes.int_in(1, 32), default=3, help="pixel magnification (default 3)")
    p.add_argument("--root", default=None, help="folder of built files to load NAME from")
    add_offline(p)
    add_cache(p)
    add_progress(p)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..errors import ConfigError
    from ..loaders import load, resolve_target
    from ..plotting import grid_title, save_grid

    name, split, root = resolve_target(args.target)
    if split is not None and args.split is not None and split != args.split:
        raise ConfigError("two splits given", expected="NAME:SPLIT or NAME SPLIT", found=f"{split} and {args.split}")
    split = split or args.split or "test"
    if args.split is not None and split == args.split:  # a usage error before any download
        from ..loaders.names import parse_split, split_name
        from ..registry import get_dataset
        split_name(get_dataset(name), parse_split(split)[0])
    ds = load(name, split, root=root or args.root, download=download_flag(args), cache=args.cache)
    n = len(ds)
    k = min(args.count, n)
    if args.seed is not None:
        idx = np.sort(np.random.default_rng(args.seed).choice(n, size=k, replace=False))
        what = f"{k} random images (seed {args.seed})"
    else:
        if args.start >= n:
            raise ConfigError("--start beyond the split", expected=f"< {n}", found=args.start)
        idx = np.arange(args.start, min(args.start + k, n))
        what = f"images {idx[0]}..{idx[-1]}"
    title = grid_title(ds, f"{what} of {n:,}")
    path = save_grid(ds.images[idx], ds.labels[idx], ds.classes, args.out, cols=args.cols,
                     scale=args.scale, title=title)
    print(f"wrote {path} ({title})")
    return 0
