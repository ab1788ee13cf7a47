"""``mnistforge demo [--out DIR] [--scale S]``: the whole pipeline on a synthetic SD19."""
from __future__ import annotations

import argparse

from .. import settings
from . import argtypes

from .common import add_progress, refuse_existing_output

NAME = "demo"
HELP = ("synthesise a small SD19, build QMNIST/MNIST/EMNIST, verify, export to Hugging Face, "
        "evaluate (no network)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo-out", type=argtypes.output_folder, help="output folder (default: demo-out)")
    p.add_argument("--scale", type=argtypes.fraction, default=0.05,
                   help="fraction of SD19 to synthesise (default 0.05, about 40,700 characters; "
                        "45 s on an idle 2-core machine, 90 s at load 5-7 on a shared one)")
    p.add_argument("--seed", type=argtypes.seed, default=0)
    p.add_argument("--workers", type=argtypes.workers, default=None)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    add_progress(p)


def run(args: argparse.Namespace) -> int:
    from ..demo import DemoConfig, format_summary, run_demo

    refuse_existing_output(args.out, args.overwrite)
    print(f"mnistforge demo: synthetic SD19 at scale {args.scale} -> {args.out}")
    # no progress bars (not a terminal, or --no-progress): a line as each stage starts and ends,
    # so `mnistforge demo > log` shows where the run is
    on_step = None if settings.current().bars else (lambda line: print(line, flush=True))
    res = run_demo(args.out, DemoConfig(scale=args.scale, seed=args.seed, workers=args.workers),
                   overwrite=args.overwrite, on_step=on_step)
    print(format_summary(res))
    if bad := [d["dataset"] for d in res.datasets if d["verify"] == "fail"]:
        print("verify FAILED for: " + ", ".join(bad))
        return 1
    return 0
