"""``mnistforge partition DATASET:SPLIT --by writer|dirichlet|iid --out DIR`` (``docs/federated.md``)."""
from __future__ import annotations

import argparse

from . import argtypes
from .common import EXIT_OK, add_cache, add_inputs, add_offline, add_progress, download_flag, refuse_existing_output

NAME = "partition"
HELP = "partition a split with Flower Datasets (by writer, Dirichlet, IID) into a manifest of official row ids"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "target", "root")
    p.add_argument("target", metavar="DATASET:SPLIT", help="NAME:SPLIT or FOLDER[:NAME][:SPLIT]")
    p.add_argument("--by", required=True, choices=["writer", "dirichlet", "iid"],
                   help="NaturalIdPartitioner on writer_id, DirichletPartitioner on the label, IidPartitioner")
    p.add_argument("--partitions", type=argtypes.int_in(1, None), default=10, metavar="N",
                   help="partitions of dirichlet and iid (default 10)")
    p.add_argument("--alpha", type=argtypes.float_in(0, None, low_open=True), default=0.5, metavar="A",
                   help="Dirichlet's concentration, > 0 (default 0.5; smaller: more skewed)")
    p.add_argument("--seed", type=argtypes.seed, default=0, help="seed of the shuffle and of Dirichlet (default 0)")
    p.add_argument("--root", default=None, metavar="DIR", help="the folder holding the dataset (build, export)")
    p.add_argument("--out", required=True, type=argtypes.output_folder, metavar="DIR", help="new folder")
    p.add_argument("--parquet", action="store_true", help="also one partition_<i>.parquet per partition")
    add_offline(p)
    add_cache(p)
    add_progress(p)


def run(args: argparse.Namespace) -> int:
    from ..errors import require
    from ..loaders import load, resolve_target
    from ..loaders.partitions import write_partitions

    refuse_existing_output(args.out, overwrite=False)
    require("flwr_datasets", "fl", "mnistforge partition")  # before any work
    name, split, root = resolve_target(args.target, default_split="train")
    ds = load(name, split, root=args.root or root, with_metadata="files", download=download_flag(args))
    path = write_partitions(ds, args.by, args.out, partitions=args.partitions, alpha=args.alpha, seed=args.seed,
                            parquet=args.parquet, inputs=[args.root or root])
    print(f"{name} {split}: written to {path}")
    return EXIT_OK
