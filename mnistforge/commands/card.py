"""``mnistforge card PREDICTIONS... --test NAME:SPLIT``: one page of what a test error says
(the first file is the system carded, the others are compared with it)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .common import (add_inputs, add_cache, add_json, add_offline, download_flag, input_paths,
                     lazy_import, require_existing_path, write_json)
from . import argtypes
from .overlap import add_train, training_overlap

if TYPE_CHECKING:
    from ..io.types import StrPath

np = lazy_import("numpy")
cd = lazy_import("mnistforge.evaluators.card")
el = lazy_import("mnistforge.evaluators.errorlists")
ch = lazy_import("mnistforge.evaluators.card_html")

NAME = "card"
#: the card folder's own record (what ``--overwrite`` may replace), written with the page
CARD_RECORD = "card-manifest.json"
HELP = "a results card (HTML, Markdown, JSON) for a predictions file on a test set"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "files", "test")
    p.add_argument("files", nargs="+", metavar="PREDICTIONS",
                   help="the system carded, then any to compare with it: prediction files, "
                        "error lists, .npy or .csv predicted labels (official row order)")
    p.add_argument("--test", required=True, metavar="NAME:SPLIT",
                   help="the test set the predictions were made on (name or folder)")
    p.add_argument("--out", default="card", type=argtypes.output_folder, metavar="DIR",
                   help="folder receiving card.html (default ./card)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    p.add_argument("--markdown", action="store_true", help="also write DIR/card.md")
    add_json(p, "the card's numbers")
    p.add_argument("--gallery", type=argtypes.int_in(0, 10**6), default=200, metavar="N",
                   help="show the first N misclassified images (default 200)")
    p.add_argument("--bootstrap", type=argtypes.int_in(1, 10**7), default=10_000, metavar="B",
                   help="bootstrap resamples for the probability of improvement (default 10000)")
    p.add_argument("--seed", type=argtypes.seed, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--workers", type=argtypes.workers, default=None,
                   help="processes bootstrapping the pairs (default: this one; results do not change)")
    p.add_argument("--confidence", type=argtypes.confidence, default=0.95,
                   help="confidence level (default 0.95)")
    p.add_argument("--runs", nargs="+", type=argtypes.int_in(1, 10**4), default=None, metavar="K",
                   help="the PREDICTIONS are runs (training seeds): the first K1 of the carded system, the next K2 "
                        "of the next...; adds the between-run spread (the other sections show each first run)")
    add_train(p)
    add_offline(p)
    add_cache(p)


def run(args: argparse.Namespace) -> int:
    from ..io.atomic import atomic_dir, atomic_file
    from ..io.outputs import check_output_folder
    from ..io.manifest import Manifest
    from ..loaders import load, resolve_target
    from ..evaluators.significance import check_test_set

    check_output_folder(args.out, inputs=input_paths(args), overwrite=args.overwrite,
                        owned=card_problems)
    for f in args.files:   # before loading the test set: a typo is a usage error, found at once
        require_existing_path(f, "predictions file", "a prediction file, error list, .npy or .csv")
    name, split, root = resolve_target(args.test, default_split="test")
    ds = load(name, split, root=root, download=download_flag(args))
    labels = np.asarray(ds.labels)
    systems = el.read_inputs(args.files, labels, len(ds.classes))
    for s in systems:   # the trust gate has loaded it; prediction files must be about this one
        if s.labels is not None and s.metadata.get("labels_from") != "test set":
            check_test_set(args.test, s.n, s.labels)
    shared = training_overlap(args.train, args.test, [s.metadata for s in systems[:1]])
    if args.runs and sum(args.runs) != len(systems):
        raise ConfigError("--runs does not add up to the prediction files", found=f"{args.runs}",
                          expected=f"counts adding up to {len(systems)}")
    parts = [[s] for s in systems] if not args.runs else [
        systems[sum(args.runs[:i]):sum(args.runs[:i + 1])] for i in range(len(args.runs))]
    card = cd.build_card(parts[0][0], ds, [p[0] for p in parts[1:]], test=args.test, resamples=args.bootstrap,
                         seed=args.seed, confidence=args.confidence, gallery_limit=args.gallery,
                         workers=args.workers, training_overlap=shared, runs=None if not args.runs else [
                             (p[0].name, [s.name for s in p], [s.wrong for s in p]) for p in parts])
    pics, missing = ch.pictures(card, ds.images)
    # page and record under <out>.incomplete, renamed together: a run killed at any point (a
    # closed pipe, Ctrl-C) leaves the old folder or the new one, never a page without its record
    with atomic_dir(args.out, overwrite=args.overwrite, inputs=input_paths(args),
                    owned=card_problems) as tmp:
        with atomic_file(f"{tmp}/card.html", "w") as f:
            f.write(ch.render_html(card, pics, missing))
        if args.markdown:
            with atomic_file(f"{tmp}/card.md", "w") as f:
                f.write(ch.render_markdown(card, pics, missing))
        Manifest(kind="card", inputs={"predictions": [str(f) for f in args.files],
                                      "test": args.test, "provenance": card.provenance},
                 parameters={"bootstrap": args.bootstrap, "seed": args.seed, "train": args.train, "runs": args.runs,
                             "confidence": args.confidence, "gallery": args.gallery},
                 notes=["a results card: card --overwrite replaces this folder only while it "
                        "holds exactly these files"]).write(tmp, CARD_RECORD)
    r = card.rate
    print(f"{card.system} on {card.test}: {r}")
    total = len(pics) + len(missing)
    print(f"pictures: {len(pics)} of {total}" + "".join(f"; missing: {why}" for why in missing.values()))
    print(f"wrote {args.out}/card.html" + (f" and {args.out}/card.md" if args.markdown else ""))
    if write_json(args, card.to_dict()):
        print(f"wrote {args.json}")
    return 0


def card_problems(folder: StrPath) -> list[str]:
    """What ``card --overwrite`` would destroy beyond a card's own files (:data:`CARD_RECORD`)."""
    from ..io.manifest import recorded_folder_problems

    return recorded_folder_problems(folder, CARD_RECORD)
