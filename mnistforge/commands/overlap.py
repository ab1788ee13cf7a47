"""``mnistforge overlap A:SPLIT B:SPLIT``: the rows, SD19 characters and writers two splits share."""
from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from .common import EXIT_OK, add_cache, add_inputs, add_json, add_offline, write_json

NAME = "overlap"
HELP = "rows, SD19 characters and writers two splits of the family share (expected: official EMNIST ByClass/ByMerge)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "a", "b", "tables", "sd19")
    p.add_argument("a", metavar="A:SPLIT", help="a split: NAME:SPLIT or FOLDER[:NAME][:SPLIT]")
    p.add_argument("b", metavar="B:SPLIT", help="the other split")
    p.add_argument("--level", choices=["character", "writer"], default="character",
                   help="what makes a row shared: its SD19 character (default) or its writer")
    p.add_argument("--tables", default=None, metavar="DIR",
                   help="folder of the published QMNIST tables for official MNIST/QMNIST "
                        "(default: the cache, fetched when allowed)")
    p.add_argument("--sd19", default=None, metavar="PATH",
                   help="SD19 source tying QMNIST's NIST digit indices to SD19 characters "
                        "(default: the one a build's manifest names, when there)")
    add_json(p, "the counts and the shared row lists")
    add_offline(p)
    add_cache(p)


def run(args: argparse.Namespace) -> int:
    from ..checks.overlap import expected_for, overlap

    if args.level == "character" and (e := expected_for(args.a, args.b, args.tables)) is not None:
        print(f"{args.a} in {args.b}: {e.summary()}")
        write_json(args, {"a": args.a, "b": args.b, "expected_shared_characters": vars(e)})
        return EXIT_OK
    o = overlap(args.a, args.b, args.level, tables=args.tables, sd19=args.sd19)
    print(o.summary())
    write_json(args, o.to_dict())
    return EXIT_OK


def add_train(p: argparse.ArgumentParser) -> None:
    """``--train NAME:SPLIT`` for commands that judge predictions (card, significance)."""
    p.add_argument("--train", default=None, metavar="NAME:SPLIT",
                   help="the training set of the predictions (default: the one their files name): a "
                        "warning, before any number, when it shares SD19 characters or writers with the test set")


def training_overlap(train: str | None, test: str | None, headers: Sequence[Mapping[str, str]]) -> str:
    """Print and return the warning that ``train`` (default: the first ``train`` the prediction
    files' headers name, on its first ``train_size`` rows) shares characters or writers with ``test``."""
    from ..checks.overlap import leakage
    from ..loaders import resolve_target

    if train:
        resolve_target(train, "train")  # a typo is an error, not a silent "no overlap known"
    named = next((h for h in headers if h.get("train")), {})
    train = train or named.get("train")
    size = named.get("train_size") if train == named.get("train") else None
    said = leakage(train, test, (int(size) if size and str(size).isdigit() else None, None)) \
        if train and test else None
    if said:
        print(f"warning: {said}")
    return said or ""
