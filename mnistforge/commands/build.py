"""``mnistforge build TARGET --sd19 PATH --out DIR``: build datasets from SD19."""
from __future__ import annotations

import importlib

from ..errors import BuildError, ConfigError

NAME = "build"
HELP = "build MNIST/QMNIST/xnist and EMNIST datasets from NIST SD19 (real or synthetic)"

EMNIST_SPLITS = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
# target -> module in mnistforge.builders that implements build_from_cli(target, args)
TARGETS = {
    "qmnist": "qmnist", "mnist": "qmnist", "xnist": "qmnist",
    "emnist": "emnist", **{f"emnist-{s}": "emnist" for s in EMNIST_SPLITS},
}


def add_arguments(p):
    p.add_argument("target", help="qmnist, mnist, xnist, emnist, emnist-<split> or all")
    p.add_argument("--sd19", required=True, help="SD19 folder or folder of zips (either edition)")
    p.add_argument("--out", required=True, help="output folder (built atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--seed", type=int, default=0, help="seed for random splits (EMNIST)")
    p.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    p.add_argument("--qmnist-labels", default=None,
                   help="folder with the published qmnist-*-labels.tsv.gz fixing the order, "
                        "or 'download' to fetch and verify them through the registry")
    p.add_argument("--duplicates", choices=["final", "source"], default="final",
                   help="QMNIST column 6: identical final 28x28 images (published rule; "
                        "preprocesses every digit) or identical source images (faster)")
    p.add_argument("--fudge", type=float, default=0.99, help="MNIST area-overlap fudge factor")
    p.add_argument("--centring", choices=["mnist", "true"], default="mnist",
                   help="MNIST truncating placement or true centring")
    p.add_argument("--orientation", choices=["official", "upright"], default="official",
                   help="EMNIST idx storage: transposed like the official files, or upright")
    p.add_argument("--split-by", choices=["random", "writer"], default="random",
                   help="EMNIST train/test split: stratified random (official) or writer-disjoint")
    p.add_argument("--letters-variant", choices=["official", "paper37"], default="official",
                   help="EMNIST letters: the official 26-class release or the paper's 37 classes")


def run(args) -> int:
    if args.target != "all":
        return dispatch(args)
    from pathlib import Path

    from ..io.atomic import atomic_dir
    out = Path(args.out)
    targets = ("qmnist", "mnist", "xnist", "emnist")
    # One folder per target inside <out>.incomplete; renamed to <out> only when all succeeded.
    from ..builders.qmnist import sharing_preprocessed_digits
    with atomic_dir(out, overwrite=args.overwrite) as tmp:
        with sharing_preprocessed_digits():  # qmnist, mnist, xnist: SD19 preprocessed once
            for target in targets[:3]:
                build_one(args, target, tmp)
        build_one(args, targets[3], tmp)
    for target in targets:
        print(describe_build(target, out / target))
    print(f"built all datasets into {out}")
    return 0


def build_one(args, target: str, folder) -> None:
    rc = dispatch(argparse_copy(args, target=target, out=str(folder / target), overwrite=False),
                  report=False)
    if rc:
        raise BuildError(f"build all: {target} failed", path=folder / target,
                         expected="exit code 0", found=rc,
                         hint="nothing was written; see the message above")


def argparse_copy(args, **changes):
    import argparse
    d = dict(vars(args))
    d.update(changes)
    return argparse.Namespace(**d)


def dispatch(args, report: bool = True) -> int:
    mod = TARGETS.get(args.target)
    if mod is None:
        raise ConfigError(f"unknown build target {args.target!r}",
                          expected="one of " + ", ".join(sorted(TARGETS) + ["all"]),
                          found=args.target)
    builder = importlib.import_module(f"mnistforge.builders.{mod}")
    rc = builder.build_from_cli(args.target, args)
    if rc == 0 and report:
        print(describe_build(args.target, args.out))
    return rc


def describe_build(target: str, out) -> str:
    """One line per output file of a finished build, from its manifest."""
    from pathlib import Path

    from ..io.manifest import read_manifest

    m = read_manifest(out) or {}
    outputs = m.get("outputs") or {}
    total = sum(int(o.get("bytes", 0)) for o in outputs.values())
    lines = [f"built {target} into {Path(out)}: {len(outputs)} files, {total / 1e6:.1f} MB"]
    lines += [f"  {name}  {o.get('sha256', '')[:16]}" for name, o in sorted(outputs.items())]
    for note in m.get("notes") or []:
        lines.append(f"  note: {note}")
    return "\n".join(lines)
