"""``mnistforge find-copies [DIR ...]``: what copies of the datasets this machine already holds (it only reads)."""
from __future__ import annotations

import argparse

from .common import add_inputs, EXIT_OK, add_json, terminal_width, wrap, write_json

NAME = "find-copies"
HELP = "find copies of the datasets on this machine, say what each is and whether fetch --from adopts it"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "dirs")
    p.add_argument("dirs", nargs="*", metavar="DIR",
                   help="folders (or files) to look in as well as the well-known places")
    p.add_argument("--only", action="store_true", help="look only in the folders given, not in the well-known places")
    add_json(p, "the places searched and one record per copy (path, verdict, dataset, split, "
                "adoptable files)")


def run(args: argparse.Namespace) -> int:
    from ..checks.adopt import regular_or_folder
    from ..checks.copies import find_copies, well_known_places

    for d in args.dirs:
        regular_or_folder(d)  # a missing folder is a usage error, said first
    places = list(args.dirs) + ([] if args.only else [str(p) for p in well_known_places()])
    searched, answers = find_copies(places) if places else ([], [])
    width = terminal_width()
    print("looked in: " + (", ".join(map(str, searched)) or "nothing (no well-known place exists)"))
    for a in answers:
        what = f"{a.dataset} {a.split}" if a.dataset else "-"
        key = f" [{a.key}]" if a.key and a.format != "idx" else ""
        adopt = ("fetch --from adopts: " + ", ".join(p.file for p in a.pieces)) if a.pieces else \
            f"not adoptable ({a.why_not or 'nothing the registry can verify'})"
        print(f"{a.verdict:<12}{what:<22}{a.format:<12}{a.path}{key}")
        for line in wrap(a.message, width, " " * 12) + wrap(adopt, width, " " * 12):
            print(line)
    n = sum(1 for a in answers if a.pieces)
    print(f"{len(answers)} copies found, {n} adoptable")
    write_json(args, {"places": [str(p) for p in searched], "copies": [a.to_dict() for a in answers]})
    return EXIT_OK
