"""``mnistforge verify TARGET``: prove a dataset is intact, correctly split and faithful."""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .common import (add_inputs, add_cache, add_json, add_offline, add_progress, download_flag,
                     terminal_width, write_json)
from . import argtypes

NAME = "verify"
HELP = "check a dataset (name, build folder or folder of idx files): integrity, hashes, " \
       "duplicates, writers, statistics, match against a reference"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "target", "reference", "metadata", "partitions")
    p.add_argument("target", help="NAME, NAME:SPLIT, FOLDER or FOLDER:SPLIT, or a third-party copy "
                                  "PATH[:SPLIT] (Keras .npz, .npy pair, CSV, torchvision root, "
                                  "parquet snapshot, EMNIST .mat): said what it is first")
    p.add_argument("--reference", default=None, metavar="NAME_OR_DIR",
                   help="match every split against this dataset (QMNIST-style statistics); "
                        "a third-party copy is also compared with it image by image")
    add_json(p, "all results (one file per dataset of a folder holding several; one document with "
                "a list for '-')")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    p.add_argument("--report", default=None, metavar="DIR", type=argtypes.output_folder,
                   help="write an HTML report with pictures into DIR")
    p.add_argument("--metadata", action="append", default=[], metavar="SPLIT=FILE",
                   help="metadata idx file for a split (e.g. QMNIST extended labels for MNIST); "
                        "repeatable")
    p.add_argument("--near-threshold", type=argtypes.float_in(0, 255 * 28), default=None, metavar="L2",
                   help="near-duplicate radius, L2 over pixels 0..255 (default 128)")
    p.add_argument("--no-near", action="store_true",
                   help="skip the near-duplicate search (the slowest check)")
    p.add_argument("--partitions", metavar="MANIFEST", help="instead: find the partitions of `mnistforge partition` "
                   "in TARGET, any copy of their split (--reference: the folder they were made on)")
    add_offline(p)
    add_cache(p)
    add_progress(p)


def _parse_metadata(items: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for split, eq, path in (item.partition("=") for item in items):
        if not eq or not Path(path).is_file():
            raise ConfigError("bad --metadata", path=path if eq else None, expected="SPLIT=FILE, an idx file",
                              found="no such file" if eq else split)
        out[split] = path
    return out


def run(args: argparse.Namespace) -> int:
    if args.partitions:
        return verify_partitions(args)
    targets = expand_targets(args.target)
    results = [verify_one(t, args, several=len(targets) > 1) for t in targets]
    codes = [code for code, _ in results]
    if len(targets) > 1:
        print(f"verified {len(targets)} datasets in {args.target}: " + ("all passed" if max(codes) == 0 else "FAILED"))
    if args.json == "-":
        docs = [doc for _, doc in results]
        write_json(args, docs[0] if len(docs) == 1 else {"target": args.target, "reports": docs})
    return max(codes)


def expand_targets(target: str) -> list[str]:
    """A folder holding several datasets (an EMNIST or ``build all`` folder) -> one target each."""
    from ..loaders import datasets_in_folder

    p = Path(target)
    if not p.is_dir():
        return [target]
    from ..io.hf.repo import is_hf_repo, repo_configs
    if is_hf_repo(p):  # a Hugging Face export: every config, checked like idx files
        return [f"{p}:{n}" for n in repo_configs(p)]
    names = datasets_in_folder(p)
    return [f"{p}:{n}" for n in names] if len(names) > 1 else [target]


def verify_one(target: str, args: argparse.Namespace, several: bool = False) -> tuple[int, dict[str, Any]]:
    from ..checks import verify
    from ..checks.duplicates import DEFAULT_NEAR_L2
    from ..io.atomic import atomic_file
    from ..loaders.targets import parse_target_text

    # FOLDER:NAME, one of several datasets in a folder: its report goes to <report>/NAME
    tag = parse_target_text(target).parts[-1] if several else None
    report_dir = Path(args.report) / tag if args.report and tag else args.report
    report = verify(target, reference=args.reference, strict=args.strict, metadata=_parse_metadata(args.metadata),
                    near_threshold=args.near_threshold or DEFAULT_NEAR_L2, near=not args.no_near,
                    download=download_flag(args), report_dir=report_dir)
    print(f"mnistforge verify {report.target}")
    for ident in report.info.get("identification") or []:  # the answer first
        print(f"{ident['split_key']}: {ident['message']}", *(f"  stored: {f}" for f in ident["storage"]), sep="\n")
    print(report.table(width=terminal_width()))
    if args.json and args.json != "-":
        path = Path(args.json)
        path = path.with_name(f"{path.stem}-{tag}{path.suffix or '.json'}") if tag else path
        with atomic_file(path, "w") as f:
            f.write(report.to_json() + "\n")
        print(f"results written to {path}")
    if report_dir:
        print(f"report written to {Path(report_dir) / 'index.html'}")
    sys.stdout.flush()
    return report.exit_code, json.loads(report.to_json())


def verify_partitions(args: argparse.Namespace) -> int:  # --partitions MANIFEST: its partitions in the copy TARGET
    from ..loaders import load, resolve_target
    from ..loaders.partitions import partition_rows, read_partitions
    from ..loaders.targets import parse_target_text

    doc = read_partitions(args.partitions)
    file = parse_target_text(args.target).path_prefix(os.path.isfile)  # a copy in one file: PATH[:SPLIT]
    name, split, root = (file[0], (file[1] or [doc["split"]])[0], None) if file else \
        resolve_target(args.target, default_split=doc["split"])
    rows = partition_rows(doc, load(name, split, root=root, download=download_flag(args)),
                          reference=args.reference or root)
    print(f"{args.target}: all {len(rows)} partitions of {args.partitions} ({doc['partitioner']['class']} on "
          f"{doc['dataset']} {doc['split']}) found, labels as recorded; sizes {[len(r) for r in rows]}")
    write_json(args, {"target": args.target, "manifest": args.partitions, "rows": [r.tolist() for r in rows]})
    return 0
