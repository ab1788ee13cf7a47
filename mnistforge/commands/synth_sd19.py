"""``mnistforge synth-sd19 OUT``: write a synthetic NIST SD19 that the readers accept unchanged."""
from __future__ import annotations

import argparse

from . import argtypes
from .common import refuse_existing_output

import time

NAME = "synth-sd19"
HELP = "write a synthetic NIST SD19 (either edition, zips or folders) for tests and demos"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", type=argtypes.output_folder, help="output folder (created atomically; must not exist)")
    p.add_argument("--scale", type=argtypes.fraction, default=0.01,
                   help="fraction of NIST's published counts, 0 < S <= 1 (1 = 814,255 characters; "
                        "default 0.01)")
    p.add_argument("--edition", type=int, choices=(1, 2), default=2,
                   help="2: one 1-bit PNG per character (2016); 1: IHEAD/G4 .mis + .cls + .mit (1995)")
    pack = p.add_mutually_exclusive_group()
    pack.add_argument("--zip", dest="packaging", action="store_const", const="zip",
                      help="by_write.zip, by_class.zip, ... as NIST serves them (default)")
    pack.add_argument("--dir", dest="packaging", action="store_const", const="dir",
                      help="unpacked trees by_write/, by_class/, ...")
    p.set_defaults(packaging="zip")
    p.add_argument("--seed", type=argtypes.seed, default=0, help="random seed (same seed, same bytes)")
    p.add_argument("--layout", default=None, metavar="FILE",
                   help="QMNIST/xnist extended-label table (xnist-labels.tsv.xz) whose digit layout "
                        "to reproduce exactly")
    p.add_argument("--fields", default="dulc",
                   help="which fields to write: subset of dulc (digits, uppers, lowers, const)")
    p.add_argument("--hierarchies", default=None,
                   help="comma-separated subset of by_write,by_class,by_merge,by_field (default all)")
    p.add_argument("--by-write-cls", action="store_true",
                   help="2nd edition: also write .cls class files in by_write (default: none, "
                        "so readers must join with by_class)")
    p.add_argument("--workers", type=argtypes.workers, default=None, help="processes (default: all cores)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--quiet", "--no-progress", dest="quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from ..sd19.synth import HIERARCHIES, SynthConfig, synthesize_sd19

    refuse_existing_output(args.out, args.overwrite)

    hierarchies = HIERARCHIES if not args.hierarchies else tuple(
        h.strip() for h in args.hierarchies.split(",") if h.strip())
    config = SynthConfig(scale=args.scale, edition=args.edition, packaging=args.packaging,
                         seed=args.seed, layout=args.layout, fields=args.fields,
                         hierarchies=hierarchies, by_write_cls=args.by_write_cls,
                         workers=args.workers, overwrite=args.overwrite)
    t0 = time.perf_counter()
    out = synthesize_sd19(args.out, config, progress=False if args.quiet else None)
    import json
    desc = json.loads((out / "synthetic-sd19.json").read_text())
    dt = time.perf_counter() - t0
    print(f"wrote a synthetic SD19 (edition {args.edition}, {args.packaging}) to {out}: "
          f"{desc['characters']:,} characters ({desc['digits']:,} digits) in {dt:.1f} s")
    return 0
