"""``mnistforge build TARGET --sd19 PATH --out DIR``: build datasets from SD19 (flags -> typed
build configurations -> builder functions; nothing below this module sees argparse)."""
from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..registry import emnist_splits
from . import argtypes

from .common import (add_inputs, add_cache, add_json, add_progress, refuse_existing_output, require_existing_path,
                     write_json)

if TYPE_CHECKING:
    from ..builders.emnist import EmnistBuildConfig
    from ..builders.femnist import FemnistBuildConfig
    from ..builders.qmnist import QmnistBuildConfig
    from ..io.manifest import Manifest
    from ..io.types import StrPath

NAME = "build"
HELP = "build MNIST/QMNIST/xnist, EMNIST and FEMNIST datasets from NIST SD19 (real or synthetic)"

#: what ``build all`` builds, in this order, one folder each (FEMNIST is built on its own:
#: LEAF's options and layout are its own; ``--help`` says so)
ALL_TARGETS = ("qmnist", "mnist", "xnist", "emnist")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "sd19", "qmnist_labels")
    p.add_argument("target", help="qmnist, mnist, xnist, emnist, emnist-<split> (one EMNIST dataset), "
                                  "femnist, or all (qmnist, mnist, xnist and emnist, one folder each; "
                                  "not femnist, which is built on its own)")
    p.add_argument("--sd19", required=True, help="SD19 folder or folder of zips (either edition)")
    p.add_argument("--out", required=True, type=argtypes.output_folder, help="output folder (built atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--seed", "--smplseed", type=argtypes.seed, default=None,
                   help="seed for random splits (EMNIST, default 0); FEMNIST: LEAF's sampling seed "
                        "(--smplseed, default the LEAF paper's 1549786595)")
    p.add_argument("--workers", type=argtypes.workers, default=None, help="processes (default: all cores)")
    p.add_argument("--qmnist-labels", default=None,
                   help="folder with the published qmnist-*-labels.tsv.gz fixing the order, "
                        "or 'download' to fetch and verify them through the registry")
    p.add_argument("--duplicates", choices=["final", "source"], default="final",
                   help="QMNIST column 6: identical final 28x28 images (published rule; "
                        "preprocesses every digit) or identical source images (faster)")
    p.add_argument("--fudge", type=argtypes.fraction, default=0.99, help="MNIST area-overlap fudge factor")
    p.add_argument("--centring", choices=["mnist", "true"], default="mnist",
                   help="MNIST truncating placement or true centring")
    p.add_argument("--orientation", choices=["official", "upright"], default="official",
                   help="EMNIST idx storage: transposed like the official files, or upright")
    p.add_argument("--split-by", choices=["random", "writer"], default="random",
                   help="EMNIST train/test split: stratified random (official) or writer-disjoint")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="build even when the SD19 source holds fewer characters than NIST "
                        "published (or its synthetic description says); the manifest lists "
                        "what was missing")
    p.add_argument("--allow-inconsistent", action="store_true",
                   help="build even when the SD19 source disagrees with itself or with what it "
                        "should hold (a repeated character index or zip member, duplicated "
                        "characters or writer folders, more characters than published); the "
                        "manifest lists every problem")
    p.add_argument("--letters-variant", choices=["official", "paper37"], default="official",
                   help="EMNIST letters: the official 26-class release or the paper's 37 classes")
    p.add_argument("--layout", choices=["idx", "torchvision", "leaf"], default="idx",
                   help="idx: the release files (.gz) with a manifest; torchvision: OUT/<Class>/raw/ "
                        "with the decompressed files torchvision.datasets.MNIST(root=OUT) and the "
                        "EMNIST/QMNIST classes read (EMNIST stored transposed, as released); "
                        "leaf (femnist only): LEAF's data/all_data, data/train, data/test JSON files")
    g = p.add_argument_group("FEMNIST (LEAF's preprocess.sh options; docs/femnist.md)")
    g.add_argument("-s", dest="leaf_sample", choices=["iid", "niid", "none"], default="niid",
                   help="LEAF sampling (default niid; none: all of all_data)")
    g.add_argument("--sf", dest="leaf_fraction", type=float, metavar="F", default=1.0,
                   help="fraction of the data to sample, in (0, 1] (default 1.0, LEAF's "
                        "full-sized dataset)")
    g.add_argument("--iu", dest="leaf_iid_users", type=float, metavar="U", default=0.01,
                   help="iid: users as a fraction of the writers, in (0, 1] (default 0.01)")
    g.add_argument("-k", dest="leaf_min_samples", type=int, metavar="K", default=None,
                   help="remove the users with fewer than K samples, K >= 0 (LEAF's "
                        "remove_users.py, '_keep_K' in the file names); without -k no user is "
                        "removed, as LEAF's preprocess.sh")
    g.add_argument("-t", dest="leaf_split", choices=["sample", "user"], default="sample",
                   help="train/test split by sample (default) or by user")
    g.add_argument("--tf", dest="leaf_train_fraction", type=float, metavar="F", default=0.9,
                   help="fraction in the training set, in (0, 1) (default 0.9); options that "
                        "would leave a split without users or samples are refused before work")
    g.add_argument("--split-seed", "--spltseed", type=argtypes.seed, default=None, metavar="S",
                   help="LEAF's split seed (--spltseed, default the LEAF paper's 1549786796)")
    g.add_argument("--resize", choices=["thumbnail", "resize"], default="thumbnail",
                   help="thumbnail: LEAF's Image.thumbnail call (this Pillow); resize: plain LANCZOS "
                        "resize, what thumbnail did before Pillow 7")
    g.add_argument("--no-repeat-first", action="store_true",
                   help="don't repeat the first image of each writer (LEAF's group_by_writer.py does)")
    add_json(p, "the manifest of each folder built")
    add_cache(p)
    add_progress(p)


# --------------------------------------------------------------------------- flags -> configs

def qmnist_config(args: argparse.Namespace) -> QmnistBuildConfig:
    """The :class:`~mnistforge.builders.qmnist.QmnistBuildConfig` the flags ask for.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> qmnist_config(p.parse_args(["qmnist", "--sd19", "s", "--out", "o", "--fudge", "1"])).prepro.fudge
    1.0
    """
    from ..builders.mnist_prepro import MnistPreproConfig
    from ..builders.qmnist import QmnistBuildConfig

    return QmnistBuildConfig(
        prepro=MnistPreproConfig(fudge=args.fudge, centring=args.centring),
        qmnist_labels=args.qmnist_labels, duplicates=args.duplicates, **_shared(args))


def emnist_config(args: argparse.Namespace, splits: Iterable[str] | None = None) -> EmnistBuildConfig:
    """The :class:`~mnistforge.builders.emnist.EmnistBuildConfig` the flags ask for.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> c = emnist_config(p.parse_args(["emnist", "--sd19", "s", "--out", "o", "--seed", "4"]),
    ...                   splits=("letters",))
    >>> c.splits, c.seed, c.orientation
    (('letters',), 4, 'official')
    """
    from ..builders.emnist import EmnistBuildConfig

    return EmnistBuildConfig(
        splits=tuple(splits) if splits is not None else emnist_splits(), seed=0 if args.seed is None else args.seed,
        split_by=args.split_by, letters_variant=args.letters_variant,
        orientation=args.orientation, **_shared(args))


def femnist_config(args: argparse.Namespace) -> FemnistBuildConfig:
    """The :class:`~mnistforge.builders.femnist.FemnistBuildConfig` the flags ask for.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> c = femnist_config(p.parse_args(["femnist", "--sd19", "s", "--out", "o", "--sf", "0.05"]))
    >>> c.sample, c.fraction, c.seed, c.split_seed
    ('niid', 0.05, 1549786595, 1549786796)
    """
    from ..builders.femnist import FemnistBuildConfig
    from ..builders.femnist_leaf import PAPER_SAMPLING_SEED, PAPER_SPLIT_SEED

    layout = getattr(args, "layout", "idx")
    return FemnistBuildConfig(
        sample=None if args.leaf_sample == "none" else args.leaf_sample,
        fraction=args.leaf_fraction, iid_users=args.leaf_iid_users,
        min_samples=args.leaf_min_samples, split=args.leaf_split, train_fraction=args.leaf_train_fraction,
        seed=PAPER_SAMPLING_SEED if args.seed is None else args.seed,
        split_seed=PAPER_SPLIT_SEED if args.split_seed is None else args.split_seed,
        repeat_first=not args.no_repeat_first, resize=args.resize,
        layout="leaf" if layout == "leaf" else "idx", **_shared(args))


def _shared(args: argparse.Namespace) -> dict[str, Any]:
    """The fields every build configuration takes from the flags."""
    return {"workers": args.workers, "overwrite": bool(args.overwrite), "allow_incomplete": bool(args.allow_incomplete),
            "allow_inconsistent": bool(args.allow_inconsistent)}


#: builder -> (``module.function`` of :mod:`mnistforge.builders` building it, the function making
#: its config from the flags); every target is one of these or ``emnist-<split>`` for a split of
#: the registry (:func:`targets`)
BUILDERS: dict[str, tuple[str, Callable[[argparse.Namespace],
                                        QmnistBuildConfig | EmnistBuildConfig | FemnistBuildConfig]]] = {
    "qmnist": ("qmnist.build_qmnist", qmnist_config), "mnist": ("qmnist.build_mnist", qmnist_config),
    "xnist": ("qmnist.build_xnist", qmnist_config), "emnist": ("emnist.build_emnist", emnist_config),
    "femnist": ("femnist.build_femnist", femnist_config),
}


def targets() -> dict[str, str]:
    """Every build target -> its builder: the builders' names, and ``emnist-<split>``.

    >>> targets()["emnist-letters"], targets()["mnist"]
    ('emnist', 'mnist')
    """
    return {**{b: b for b in BUILDERS}, **{f"emnist-{s}": "emnist" for s in emnist_splits()}}


def config_for(target: str, args: argparse.Namespace) -> QmnistBuildConfig | EmnistBuildConfig | FemnistBuildConfig:
    """The build configuration of ``target`` (``emnist-<name>`` builds that one dataset)."""
    if getattr(args, "layout", "idx") == "leaf" and target != "femnist":
        raise ConfigError("--layout leaf is for femnist only", expected="build femnist --layout leaf",
                          found=f"build {target} --layout leaf")
    if (builder := targets().get(target)) is None:
        raise ConfigError(f"unknown build target {target!r}",
                          expected="one of " + ", ".join(sorted(targets()) + ["all"]), found=target)
    if builder == "emnist" and target != "emnist":
        return emnist_config(args, splits=(target[len("emnist-"):],))
    return BUILDERS[builder][1](args)


def builders() -> dict[str, Callable[..., Manifest]]:
    """Target -> builder function ``f(sd19, out, config)``, imported when a build runs."""
    import importlib

    out = {}
    for t, b in targets().items():
        module, function = BUILDERS[b][0].split(".")
        out[t] = getattr(importlib.import_module(f"mnistforge.builders.{module}"), function)
    return out


# --------------------------------------------------------------------------- running

def run(args: argparse.Namespace) -> int:
    from ..io.outputs import check_output_folder
    from ..io.manifest import build_folder_problems
    from ..layouts.torchvision import layout_problems

    # before any work: bad flag values, then an --out that is a file, a link, overlaps the
    # inputs, or holds anything of the user's that --overwrite would destroy
    for target in (ALL_TARGETS if args.target == "all" else (args.target,)):
        config_for(target, args)
    torchvision = getattr(args, "layout", "idx") == "torchvision"   # a root of <Class>/raw/ folders
    check_output_folder(args.out, inputs=_inputs(args), overwrite=bool(args.overwrite),
                        owned=layout_problems if torchvision else build_folder_problems)
    require_existing_path(args.sd19, "SD19 source", "a folder of SD19 zips or unpacked trees")
    if torchvision:
        if args.target == "femnist":
            raise ConfigError("--layout torchvision has no FEMNIST class", expected="--layout idx or leaf",
                              found="--layout torchvision")
        return build_torchvision(args)
    if args.target == "all":
        return build_all(args)
    manifest = builders()[args.target](args.sd19, args.out, config_for(args.target, args))
    print(describe_build(args.target, args.out, manifest))
    _write_manifests(args, {args.target: (Path(args.out), manifest)})
    return 0


def build_all(args: argparse.Namespace) -> int:
    out = Path(args.out)
    manifests = _build_all_into(args, out)
    for target in ALL_TARGETS:
        print(describe_build(target, out / target, manifests[target]))
    print(f"built all datasets into {out}")
    _write_manifests(args, {t: (out / t, manifests[t]) for t in ALL_TARGETS})
    return 0


def _build_all_into(args: argparse.Namespace, out: Path) -> dict[str, Manifest]:
    """Build :data:`ALL_TARGETS` into ``out/<target>``; the manifest each builder wrote."""
    from ..builders.emnist import emnist_product
    from ..builders.qmnist import mnist_product
    from ..io.atomic import atomic_dir
    from ..io.manifest import build_folder_problems
    from ..sd19 import open_sd19

    table = builders()
    manifests: dict[str, Manifest] = {}
    # One folder per target inside <out>.incomplete; renamed to <out> only when all succeeded.
    with atomic_dir(out, overwrite=args.overwrite, inputs=_inputs(args), owned=build_folder_problems) as tmp:
        # one pass over SD19: the index, every digit preprocessed (qmnist, mnist, xnist) and every
        # character converted (EMNIST) from one decode, kept next to the index for the builders
        open_sd19(args.sd19, workers=args.workers,
                  products=[mnist_product(qmnist_config(args).prepro), emnist_product(emnist_config(args))])
        for target in ALL_TARGETS:
            manifests[target] = _build_inside(table[target], args, target, tmp)
    return manifests


def build_torchvision(args: argparse.Namespace) -> int:
    """``--layout torchvision``: a usual build in a temporary folder next to ``--out``, then that."""
    import shutil
    import tempfile

    from ..io.outputs import check_output_path
    from ..layouts import sources_from_targets, write_torchvision
    from .export import describe_torchvision

    out = check_output_path(args.out, _inputs(args))
    out.parent.mkdir(parents=True, exist_ok=True)
    refuse_existing_output(out, args.overwrite)  # before the build, not after it
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.idx-", dir=out.parent))
    try:
        build = staging / "build"
        if args.target == "all":
            _build_all_into(args, build)
        else:
            config = dataclasses.replace(config_for(args.target, args), overwrite=False)
            builders()[args.target](args.sd19, build, config)
        layout = write_torchvision(out, [dataclasses.replace(src, shown="(built by this command)")
                                         for src in sources_from_targets([build])],
                                   overwrite=args.overwrite, inputs=_inputs(args))
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # made here, by this run
    print(describe_torchvision(layout))
    write_json(args, layout.to_dict())
    return 0


def _write_manifests(args: argparse.Namespace, built: dict[str, tuple[Path, Manifest]]) -> None:
    """``--json``: ``{target: {"folder": path, "manifest": what its builder wrote}}``."""
    doc = {target: {"folder": str(folder), "manifest": m.to_dict()} for target, (folder, m) in built.items()}
    write_json(args, doc)


def _inputs(args: argparse.Namespace) -> list[str]:
    labels = args.qmnist_labels
    return [args.sd19] + ([labels] if labels not in (None, "download") else [])


def _build_inside(build: Callable[..., Manifest], args: argparse.Namespace, target: str, folder: Path) -> Manifest:
    # the folder is new inside <out>.incomplete: --overwrite applies to <out> only
    config = dataclasses.replace(config_for(target, args), overwrite=False)
    return build(args.sd19, folder / target, config)


def describe_build(target: str, out: StrPath, manifest: Manifest) -> str:
    """One line per output file of a finished build, from the manifest its builder returned.

    >>> from mnistforge.io.manifest import Manifest
    >>> m = Manifest(kind="mnist", outputs={"a.gz": {"sha256": "ab" * 32, "bytes": 2_000_000}},
    ...              notes=["a note"])
    >>> print(describe_build("mnist", "out", m))
    built mnist into out: 1 files, 2.0 MB
      a.gz  abababababababab
      note: a note
    """
    outputs = manifest.outputs
    total = sum(int(o.get("bytes", 0)) for o in outputs.values())
    lines = [f"built {target} into {Path(out)}: {len(outputs)} files, {total / 1e6:.1f} MB"]
    lines += [f"  {name}  {o.get('sha256', '')[:16]}" for name, o in sorted(outputs.items())]
    lines += [f"  note: {note}" for note in manifest.notes]
    return "\n".join(lines)
