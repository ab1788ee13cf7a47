"""``mnistforge tarp NAME[:SPLIT] --task 0v1 --n 1,10,100 --k 0..6 --runs 100``."""
from __future__ import annotations

import argparse

from ..errors import ConfigError, require

from .common import add_inputs, add_cache, add_json, add_offline, write_json
from . import argtypes

NAME = "tarp"
HELP = "TARP benchmark bounds B_k^n of a binary problem (random-projection difficulty)"


def parse_int_list(text: str) -> list[int]:
    """``"1,10,100"`` -> [1, 10, 100]; ``"0..6"`` -> [0, ..., 6]."""
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if ".." in part:
                a, b = part.split("..", 1)
                lo, hi = int(a), int(b)
                if hi < lo or hi - lo > 10_000:
                    raise ValueError(part)
                out.extend(range(lo, hi + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise ConfigError("bad list of integers", expected="e.g. 1,10,100 or 0..6 (a <= b)", found=repr(text)) from None
    if any(v < 0 or v > 10**9 for v in out):
        raise ConfigError("value out of range", expected="integers in 0..1000000000", found=repr(text))
    if not out:
        raise ConfigError("empty list", expected="e.g. 1,10,100 or 0..6", found=repr(text))
    return out


def parse_point(text: str) -> tuple[str, float, float]:
    """``NAME=ERROR@COST`` -> (name, error, cost)."""
    from ..evaluators.tarp import check_point

    try:
        name, rest = text.split("=", 1)
        err, cost = rest.split("@", 1)
        point = name, float(err.rstrip("%")) / (100 if err.endswith("%") else 1), float(cost)
    except ValueError as e:
        raise ConfigError("bad --classifier-point", expected="NAME=ERROR@COST (e.g. lin=0.02@5e6)", found=text) from e
    check_point(*point)  # NaN, a negative cost, an error above 1: refused before any work
    return point


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "target")
    p.add_argument("target", metavar="NAME[:SPLIT]", help="dataset name or folder of idx files")
    p.add_argument("--task", required=True, help="0v1, A,B, 0,2v1,3, Avrest or even-odd")
    p.add_argument("--n", default="1,10,100", help="directions per node (list)")
    p.add_argument("--k", default="0..6", help="tree depths (list or range a..b)")
    p.add_argument("--runs", type=argtypes.int_in(1, 10**6), default=100, help="independent runs R")
    p.add_argument("--seed", type=argtypes.seed, default=0)
    p.add_argument("--limit", type=argtypes.int_in(1, 10**9), default=None, help="use only the first N samples")
    p.add_argument("--workers", type=argtypes.workers, default=None)
    p.add_argument("--classifier-point", action="append", default=[], metavar="NAME=ERROR@COST",
                   help="place a classifier on the benchmark plane (cost in projections)")
    add_json(p)
    p.add_argument("--plot", default=None, metavar="OUT.png", type=argtypes.output_file, help="needs the [plot] extra")
    add_offline(p)
    add_cache(p)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..evaluators.tarp import MAX_DEPTH, binary_task, plot_benchmark, region_of, tarp_bounds
    from ..loaders import load, resolve_target

    ns, ks = parse_int_list(args.n), parse_int_list(args.k)   # usage errors before any load
    if max(ks) > MAX_DEPTH:
        raise ConfigError("TARP tree too deep", expected=f"--k at most {MAX_DEPTH} (node numbers "
                          "are 2^k in int64)", found=args.k)
    points = [parse_point(t) for t in args.classifier_point]
    if args.plot:
        require("matplotlib", "plot", "--plot")  # a missing extra before the work, not after
    name, split, root = resolve_target(args.target, default_split="test")
    ds = load(name, split, root=root)
    images, labels = ds.images, np.asarray(ds.labels)
    if args.limit:
        images, labels = images[: args.limit], labels[: args.limit]
    X, y = binary_task(images, labels, args.task, ds.classes)
    res = tarp_bounds(X, y, ns=ns, ks=ks, runs=args.runs, seed=args.seed, workers=args.workers,
                      task=f"{args.target} {args.task}")
    print(f"TARP on {args.target}, task {args.task}: {res.n_samples} samples, "
          f"B0 = {res.b0:.4f}, {args.runs} runs")
    print(f"{'n':>5} {'k':>3} {'B_k^n':>8} {'stderr':>8} {'projections':>12} {'seconds':>8}")
    for r in res.results:
        print(f"{r['n']:>5} {r['k']:>3} {r['mean']:>8.4f} {r['stderr']:>8.4f} "
              f"{r['cost_projections']:>12.0f} {r['seconds']:>8.3f}")
    for pname, err, cost in points:
        print(f"{pname}: error {err:.4f} at cost {cost:g} -> {region_of(err, cost, res)}")
    if args.json:
        doc = res.to_json()
        doc["points"] = [{"name": n, "error": e, "cost": c, "region": region_of(e, c, res)} for n, e, c in points]
        write_json(args, doc)
    if args.plot:
        plot_benchmark(res, args.plot, points)
        print(f"plot written to {args.plot}")
    return 0
