"""``mnistforge export hf NAME... --out REPO_DIR [--push ORG/NAME]``: Hub dataset repositories;
``mnistforge export torchvision NAME... --out ROOT``: torchvision's ``<ROOT>/<Class>/raw/`` layout.

Examples
--------
    mnistforge export hf mnist qmnist emnist-letters --out hf-mnist
    mnistforge export hf rebuilt=build/mnist official=mnist:test --out hf-compare
    mnistforge export hf --out hf-qmnist --push my-org/qmnist-rebuilt   # push an existing folder
    mnistforge export torchvision mnist fashion-mnist build/emnist --out data   # MNIST(root="data")
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import settings
from ..errors import ConfigError, require

from .common import (add_inputs, add_cache, add_json, add_offline, add_progress, download_flag, write_json)
from . import argtypes

if TYPE_CHECKING:
    from ..layouts.torchvision import TorchvisionLayout

NAME = "export"
HELP = "export datasets as a Hugging Face Hub dataset repository (parquet + dataset card) or in torchvision's layout"

#: options that only the Hugging Face export takes (refused with ``torchvision``)
HF_ONLY = ("push", "private", "max_shard_mb", "num_shards", "writers", "workers", "no_croissant", "pixels", "no_check",
           "png")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "names")
    p.add_argument("format", choices=["hf", "torchvision"],
                   help="output format (hf: Hugging Face Hub repository; torchvision: "
                        "ROOT/<Class>/raw/ as torchvision.datasets.MNIST(root) reads it)")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="[CONFIG=]NAME[:SPLIT]: dataset name, idx folder (official or built) "
                        "or exported repository; none with --push: push REPO_DIR as it is")
    p.add_argument("--out", required=True, metavar="REPO_DIR", type=argtypes.output_folder,
                   help="repository folder (hf) or torchvision root (torchvision) to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing REPO_DIR")
    p.add_argument("--push", metavar="ORG/NAME", default=None,
                   help="upload REPO_DIR to this Hub dataset repository after its checks pass "
                        "(token from HF_TOKEN or `hf auth login`)")
    p.add_argument("--private", action="store_true", help="create the Hub repository as private")
    shards = p.add_mutually_exclusive_group()
    shards.add_argument("--num-shards", type=argtypes.int_in(1, None, "a shard count"), default=None, metavar="N",
                        help="cut every split into exactly N shards of consecutive rows, not with --max-shard-mb "
                             "(default: 120 for 60,000 rows or more; fewer for smaller splits, at least 500 rows "
                             "each, divisible by as many of 2, 3, 4, 5, 6, 8, 10, 12 as fit; see docs/huggingface.md)")
    shards.add_argument("--max-shard-mb", type=argtypes.float_in(0, 2**20, low_open=True), default=None,
                        help="largest parquet shard in MiB of PNG data (default 128): a split whose default shards "
                             "would be bigger gets the next multiple of the default count; not with --num-shards")
    p.add_argument("--writers", action="store_true", help="a writer_id column in every config, or refuse: "
                   "official MNIST's from QMNIST's published tables (fetched like the other files); datasets whose "
                   "metadata records writers (QMNIST, EMNIST builds, FEMNIST) have it anyway")
    p.add_argument("--workers", type=argtypes.workers, default=None, help="PNG encoding threads (default: all cores)")
    p.add_argument("--no-croissant", action="store_true", help="do not write croissant.json")
    p.add_argument("--pixels", choices=["bytes", "array"], default=None,
                   help="also store the images undecoded in a 'pixels' column, for more disk space: "
                        "plain `datasets` users get NumPy arrays without decoding PNGs (bytes: H*W "
                        "bytes per row, fastest to load; array: Array2D uint8; see docs/huggingface.md)")
    p.add_argument("--png", choices=["fast", "pillow"], default=None,
                   help="PNG encoder: fast (default: no scanline filter, ISA-L deflate) or pillow "
                        "(Pillow's bytes, what every export wrote before the fast encoder; "
                        "same pixels either way, see docs/huggingface.md)")
    add_offline(p, "official files")
    add_json(p, "the configs, splits and row counts written (and the pushed URL)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the reload check after writing (never skipped before --push)")
    add_cache(p)
    add_progress(p)


def run(args: argparse.Namespace) -> int:
    return {"hf": run_hf, "torchvision": run_torchvision}[args.format](args)


def run_torchvision(args: argparse.Namespace) -> int:
    """``export torchvision NAME... --out ROOT``: the layout, then one line per file written."""
    given = [f"--{k.replace('_', '-')}" for k in HF_ONLY if getattr(args, k, None)]
    if given:
        raise ConfigError(f"{', '.join(given)}: only for `export hf`", found=" ".join(given),
                          expected="export torchvision NAME... --out ROOT [--overwrite]")
    if not args.names:
        raise ConfigError("nothing to export", expected="at least one NAME", found="no NAME")
    from ..io.outputs import check_output_path
    from ..layouts import sources_from_targets, write_torchvision

    check_output_path(args.out, _input_folders(args.names))
    sources = sources_from_targets(args.names)
    layout = write_torchvision(args.out, sources, overwrite=args.overwrite,
                               inputs=_input_folders(args.names), download=download_flag(args))
    print(describe_torchvision(layout))
    write_json(args, layout.to_dict())
    return 0


def describe_torchvision(layout: TorchvisionLayout) -> str:
    """What a torchvision root holds and how to read it, one line per file."""
    lines = [f"wrote {layout.root} in torchvision's layout"]
    for name, d in layout.datasets.items():
        arg = f", split={d['split_argument']!r}" if d["split_argument"] else ""
        counts = ", ".join(f"{s} {n:,}" for s, n in d["splits"].items())
        lines.append(f"  {name}: torchvision.datasets.{d['class']}(root{arg}) ({counts})")
        for path, f in d["files"].items():
            mark = {True: "  official content", False: "", None: ""}[f["official"]]
            lines.append(f"    {path}  {f['sha256'][:16]}{mark}")
    lines += [f"  note: {n}" for n in layout.notes]
    return "\n".join(lines)


def run_hf(args: argparse.Namespace) -> int:
    require("datasets", "hf", "export hf")  # before any work: writing, loading or the push checks
    if args.push:  # before any work (and before importing the exporter): fail fast without a token
        push_preflight(args.push)
    from .. import hub as hf

    out = Path(args.out)
    if not args.names and not args.push:
        raise ConfigError("nothing to export", expected="at least one NAME (or --push to upload "
                          "an existing REPO_DIR)", found="no NAME")
    if args.names:  # else --push alone: check and upload REPO_DIR as it is
        from ..hub.export import export_problems
        from ..io.outputs import check_output_folder

        # before any download or loading: the --out path, and what --overwrite would replace
        check_output_folder(out, inputs=_input_folders(args.names), overwrite=args.overwrite,
                            owned=export_problems)
        configs = hf.configs_from_targets(args.names, download=download_flag(args), writers=args.writers)
        kw: dict[str, Any] = {"num_shards": args.num_shards}
        if args.max_shard_mb:
            kw["max_shard_bytes"] = int(args.max_shard_mb * 2**20)
        hf.export_hf(out, configs, overwrite=args.overwrite, workers=args.workers, pixels=args.pixels,
                     png=args.png, croissant=not args.no_croissant, repo_id=args.push,
                     inputs=_input_folders(args.names), **kw)
        if args.no_check and not args.push:
            print(f"wrote {out} ({len(configs)} config(s); not checked)")
            write_json(args, {"out": str(out), "configs": {c.name: list(c.splits) for c in configs},
                              "checked": False, "pushed": None})
            return 0
    counts = hf.verify_repo(out)
    _print_counts(out, counts)
    url: str | None = None
    if args.push:
        url = hf.push_to_hub(out, args.push, private=args.private, check=False)
        print(f"pushed {out} to {args.push}: {url}")
    write_json(args, {"out": str(out), "configs": counts, "checked": True, "pushed": url})
    return 0


def push_preflight(repo_id: str) -> None:
    """Fail at once, before any export work, when a push cannot happen: a malformed repository
    id (usage error), Hub offline mode or no token (UploadError, exit 3).  Imports only
    huggingface_hub's token lookup, so it answers in a fraction of a second."""
    import re

    from ..errors import UploadError

    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id or ""):
        raise ConfigError("invalid Hub repository id", expected="ORG/NAME", found=repr(repo_id))
    if settings.current().hf_offline:
        raise UploadError("Hugging Face Hub offline mode is on (HF_HUB_OFFLINE): nothing exported "
                          "or uploaded", hint="unset HF_HUB_OFFLINE to push, or drop --push")
    token = settings.current().hf_token
    if not token:
        try:
            from huggingface_hub import get_token
        except ImportError:
            raise UploadError("huggingface_hub is not installed: nothing exported or uploaded",
                              hint="pip install 'mnistforge[hub]'") from None
        token = get_token()
    if not token:
        raise UploadError("no Hugging Face token: nothing exported or uploaded",
                          expected="a token in HF_TOKEN or from `hf auth login`", found="none",
                          hint="set HF_TOKEN=hf_... (write access to the target organisation), "
                               "or drop --push")


def _input_folders(names: Iterable[str]) -> list[Path]:
    """The folders among ``[CONFIG=]NAME[:SPLIT]`` targets (the output must not overlap them)."""
    from ..loaders.targets import parse_target_text

    found: list[Path] = []
    for n in names:
        path = parse_target_text(n, config=True).path_prefix(os.path.exists)
        if path is not None:
            found.append(Path(path[0]))
    return found


def _print_counts(out: Path, counts: dict[str, dict[str, int]]) -> None:
    print(f"{out}: checked (card, shards, features, reload with datasets.load_dataset)")
    for config, splits in counts.items():
        parts = ", ".join(f"{s} {n:,}" for s, n in splits.items())
        print(f"  {config}: {parts}")
