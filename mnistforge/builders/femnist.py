"""Build LEAF's FEMNIST from SD19 (``mnistforge build femnist``).

The recipe is LEAF's (:mod:`.femnist_leaf`, rules and sources in ``docs/femnist.md``): by_write characters grouped by
writer folder, classes from by_class by image content, a 28 x 28 Pillow thumbnail (LANCZOS, LEAF's ``ANTIALIAS``),
LEAF's sampling, user filter and train/test split with LEAF's seeds.  The SD19 index already holds each character's
writer, class and content hash: only the characters kept are read, once.

The files of ``--layout idx`` (the default: idx images ink high, labels, metadata, sources, users, mapping) and of
``--layout leaf`` (LEAF's own folders and JSON, ``meta/`` with the seeds) are listed in ``docs/femnist.md``.

>>> from mnistforge.builders.femnist import FemnistBuildConfig
>>> FemnistBuildConfig(fraction=0.05).leaf.fraction
0.05
>>> FemnistBuildConfig(fraction=3)
Traceback (most recent call last):
...
mnistforge.errors.ConfigError: invalid --sf (LEAF's sample fraction): expected a fraction in (0, 1], found 3
"""
from __future__ import annotations

import dataclasses
import functools
import gzip
import logging
import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import BuildError, ConfigError
from ..io.atomic import atomic_dir, atomic_file
from ..io.idx import write_idx
from ..io.leaf import write_leaf_json
from ..io.manifest import DatasetEntry, Manifest, build_folder_problems
from ..io.outputs import check_output_folder
from ..registry import get_dataset
from ..sd19.nist_table import FIELDS
from ..sd19.products import Product
from ..sd19.reader import SD19Source
from .emnist import _open_source, _write_images
from .qmnist import check_complete, check_consistent, synthetic_description_path
from .sources import sd19_inputs
from . import femnist_leaf as leaf

if TYPE_CHECKING:  # Pillow is imported inside the functions that draw
    from PIL import Image

logger = logging.getLogger(__name__)

SIZE = (28, 28)
LAYOUTS = ("idx", "leaf")
METADATA_COLUMNS = ("writer_id", "writer", "hsf", "template", "ascii", "sd19_row")
PARTS = ("train", "test")


def _thumbnail(im: Image.Image) -> Image.Image:
    from PIL import Image

    im.thumbnail(SIZE, Image.Resampling.LANCZOS)   # data_to_json.py (ANTIALIAS is LANCZOS's old name)
    return im


def _resize(im: Image.Image) -> Image.Image:
    from PIL import Image

    return im.resize(SIZE, Image.Resampling.LANCZOS)   # what thumbnail() did before Pillow 7 (no reducing_gap)


#: how the 128 x 128 image becomes 28 x 28 (``--resize``)
RESIZERS: dict[str, Callable[[Image.Image], Image.Image]] = {"thumbnail": _thumbnail, "resize": _resize}


def file_names(part: str) -> dict[str, str]:
    """Output names of one split, by kind.

    >>> file_names("train")["images"]
    'femnist-train-images-idx3-ubyte.gz'
    """
    return {"images": f"femnist-{part}-images-idx3-ubyte.gz", "labels": f"femnist-{part}-labels-idx1-ubyte.gz",
            "metadata": f"femnist-{part}-metadata-idx2-int.gz", "sources": f"femnist-{part}-sources.tsv.gz"}


def _fraction(name: str, v: float, high_open: bool = False) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        and 0 < v and (v < 1 if high_open else v <= 1)
    if not ok:
        raise ConfigError(f"invalid {name}", expected="a fraction in " + ("(0, 1)" if high_open else "(0, 1]"), found=v,
                          hint="(0, 1): a train fraction of 1 leaves no test data" if high_open else None)
    return float(v)


@dataclass(frozen=True)
class FemnistBuildConfig:
    """How to build FEMNIST (``mnistforge build femnist``); LEAF's flag names in brackets.

    sample [-s] ``"niid"``, ``"iid"`` or None (no sampling); fraction [--sf]; iid_users [--iu]; min_samples [-k]; split
    [-t] ``"sample"`` or ``"user"``; train_fraction [--tf]; seed [--smplseed] and split_seed [--spltseed] (defaults: the
    LEAF paper's); repeat_first: keep group_by_writer.py's doubled first image of every writer but the first; resize:
    ``"thumbnail"`` (LEAF's call, today's Pillow) or ``"resize"`` (Pillow < 7's thumbnail); layout ``"idx"`` or
    ``"leaf"``.
    """

    sample: str | None = "niid"
    fraction: float = 1.0
    iid_users: float = 0.01
    min_samples: int | None = None
    split: str = "sample"
    train_fraction: float = 0.9
    seed: int = leaf.PAPER_SAMPLING_SEED
    split_seed: int = leaf.PAPER_SPLIT_SEED
    repeat_first: bool = True
    resize: str = "thumbnail"
    layout: str = "idx"
    workers: int | None = None
    overwrite: bool = False
    progress: bool | None = None
    allow_incomplete: bool = False
    allow_inconsistent: bool = False

    def __post_init__(self) -> None:
        if self.sample not in ("iid", "niid", None):
            raise ConfigError("invalid -s (LEAF's sampling)", expected="'iid', 'niid' or none", found=repr(self.sample))
        _fraction("--sf (LEAF's sample fraction)", self.fraction)
        _fraction("--iu (LEAF's iid user fraction)", self.iid_users)
        _fraction("--tf (LEAF's train fraction)", self.train_fraction, high_open=True)
        if self.min_samples is not None and (not isinstance(self.min_samples, int) or isinstance(
                self.min_samples, bool) or self.min_samples < 0):
            raise ConfigError("invalid -k (LEAF's minimum samples per user)",
                              expected="an integer >= 0", found=self.min_samples)
        if self.split not in ("sample", "user"):
            raise ConfigError("invalid -t (LEAF's train/test split)", expected="'sample' or 'user'",
                              found=repr(self.split))
        for name in ("seed", "split_seed"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ConfigError(f"invalid FEMNIST {name}", expected="an integer >= 0", found=v)
        if self.resize not in RESIZERS:
            raise ConfigError("unknown FEMNIST resize", expected=" or ".join(RESIZERS), found=repr(self.resize))
        if self.layout not in LAYOUTS:
            raise ConfigError("unknown FEMNIST layout", expected=" or ".join(LAYOUTS), found=repr(self.layout))

    @property
    def leaf(self) -> leaf.LeafOptions:
        return leaf.LeafOptions(sample=self.sample, fraction=self.fraction, iid_users=self.iid_users,
                                min_samples=self.min_samples, split=self.split, train_fraction=self.train_fraction,
                                sampling_seed=self.seed, split_seed=self.split_seed, repeat_first=self.repeat_first)

    def leaf_parameters(self) -> dict[str, Any]:
        """The options under LEAF's preprocess.sh names (for the manifest and verify)."""
        return {"-s": self.sample, "--sf": self.fraction, "--iu": self.iid_users, "-k": self.min_samples,
                "-t": self.split, "--tf": self.train_fraction, "--smplseed": self.seed, "--spltseed": self.split_seed,
                "repeat_first": self.repeat_first, "resize": self.resize}


# ----------------------------------------------------------------------------- images
def _leaf(imgs: np.ndarray, resize: str) -> np.ndarray:
    """LEAF's 28 x 28 values of decoded characters (a worker runs it)."""
    from PIL import Image

    grey = np.where(imgs, np.uint8(0), np.uint8(255))    # convert('L') of the 1-bit PNG: ink 0, paper 255
    return np.stack([np.asarray(RESIZERS[resize](Image.fromarray(g, "L"))) for g in grey]) if len(grey) \
        else np.zeros((0,) + SIZE, np.uint8)


def leaf_pixels(src: SD19Source, rows: npt.ArrayLike, resize: str = "thumbnail", *, workers: int | None = None,
                show_progress: bool | None = None) -> np.ndarray:
    """LEAF's 28 x 28 values (0..255, ink low: no inversion) of SD19 rows, each decoded once in worker processes."""
    product = Product.of("leaf", functools.partial(_leaf, resize=resize), {"resize": resize})
    return src.make([product], rows, desc="FEMNIST thumbnails", progress=show_progress, workers=workers)[0]


# ----------------------------------------------------------------------------- build
def refuse_empty(stages: dict[str, list[leaf.LeafFile]], cfg: FemnistBuildConfig) -> None:
    """Refuse, before any image is read, options that leave no users or no samples at a step
    of LEAF's recipe (the :class:`~mnistforge.errors.ConfigError` names the option)."""
    steps = [("sampled_data", f"--sf {cfg.fraction}" + (f" --iu {cfg.iid_users}" if cfg.sample == "iid" else ""),
              "int(F x the samples of each all_data file) is 0: no sample is drawn"),
             ("rem_user_data", f"-k {cfg.min_samples}", "no user has that many samples")]
    steps += [(part, f"-t {cfg.split} --tf {cfg.train_fraction}",
               f"no user keeps samples on the {part} side") for part in ("train", "test")]
    for stage, option, why in steps:
        if stage not in stages:
            continue
        users = sum(len(f.users) for f in stages[stage])
        samples = sum(sum(f.num_samples) for f in stages[stage])
        if users == 0 or samples == 0:
            before = sum(sum(f.num_samples) for f in stages["all_data"])
            raise ConfigError(f"these LEAF options leave {stage} empty", expected="users and samples at every step",
                              found=f"{users} users, {samples} samples with {option} ({why}; {before} samples in "
                                    "all_data)",
                              hint="choose a larger --sf, a smaller -k, or a --tf further from 0 and 1 (nothing was "
                                   "written)")


def _flatten(files: list[leaf.LeafFile]) -> tuple[list[str], np.ndarray]:
    users: list[str] = []
    rows: list[int] = []
    for f in files:
        for u in f.users:
            users.extend([u] * len(f.rows[u]))
            rows.extend(f.rows[u])
    return users, np.asarray(rows, np.int64)


def build_femnist(sd19: str | os.PathLike[str], out: str | os.PathLike[str],
                  config: FemnistBuildConfig | None = None, **changes: Any) -> Manifest:
    """Build FEMNIST from SD19 into ``out`` (atomically); returns the manifest written.

    ``changes`` replace fields of ``config`` (e.g. ``fraction=0.05``).
    """
    cfg = dataclasses.replace(config or FemnistBuildConfig(), **changes)
    out = Path(out)
    check_output_folder(out, inputs=[sd19], overwrite=cfg.overwrite, owned=build_folder_problems)

    src = _open_source(sd19, cfg.progress)
    missing = check_complete(src, FIELDS, cfg.allow_incomplete)
    inconsistent = check_consistent(src, FIELDS, cfg.allow_inconsistent)
    syn = synthetic_description_path(src)
    index = src.index
    if len(index) == 0:
        raise BuildError("SD19 index is empty", path=getattr(src, "path", None),
                         expected="characters", found="none", hint="check --sd19")
    ascii_ = leaf.leaf_classes(index)
    stages = leaf.run_recipe(index, cfg.leaf)
    refuse_empty(stages, cfg)
    labels_of = np.array([leaf.relabel(a) if chr(a).isascii() and chr(a).isalnum() else 255
                          for a in range(256)], np.uint8)

    parts = {p: _flatten(stages[p]) for p in PARTS}
    need = np.concatenate([parts[p][1] for p in PARTS])
    if cfg.layout == "leaf":
        need = np.concatenate([need, _flatten(stages["all_data"])[1]])
    need = np.unique(need)
    logger.info("FEMNIST: %d of %d SD19 characters to read", len(need), len(index))
    with atomic_dir(out, overwrite=cfg.overwrite, inputs=[getattr(src, "path", sd19)],
                    owned=build_folder_problems) as tmp:
        px = leaf_pixels(src, need, cfg.resize, workers=cfg.workers, show_progress=cfg.progress)
        slot = np.full(len(index), -1, np.int64)
        slot[need] = np.arange(len(need))
        if cfg.layout == "leaf":
            _write_leaf(tmp, stages, px, slot, ascii_, labels_of, cfg)
        else:
            _write_idx(tmp, src, parts, px, slot, ascii_, labels_of)
        counts = {p: len(parts[p][1]) for p in PARTS}
        writer_counts = {p: _counts(parts[p][0]) for p in PARTS}
        notes = _notes(cfg, missing, inconsistent, syn)
        manifest = Manifest(
            kind="femnist", inputs=sd19_inputs(src, sd19, index, missing=missing, inconsistent=inconsistent, syn=syn),
            parameters={"leaf": cfg.leaf_parameters(), "layout": cfg.layout,
                        "pillow": _pillow_version(), "leaf_source": LEAF_SOURCE,
                        "users": {p: len(writer_counts[p]) for p in PARTS},
                        "all_data": {"users": sum(len(f.users) for f in stages["all_data"]),
                                     "samples": sum(sum(f.num_samples) for f in stages["all_data"])},
                        "writer_counts": writer_counts}, notes=notes, orientation="upright",
            datasets={"femnist": DatasetEntry(
                counts=counts, kind="femnist", classes=62,
                files={f"{p}-{k}": v for p in PARTS for k, v in file_names(p).items()}
                if cfg.layout == "idx" else None)},
            metadata_columns=list(METADATA_COLUMNS) if cfg.layout == "idx" else None,
            split_by="writer" if cfg.split == "user" else "random", sides=counts, synthetic=syn is not None,
        ).write(tmp)
    logger.info("FEMNIST: wrote %s", out)
    return manifest


#: the LEAF code transcribed (docs/femnist.md)
LEAF_SOURCE = "https://github.com/TalwalkarLab/leaf (data/femnist, data/utils) at 09ec454"


def _pillow_version() -> str:
    import PIL

    return PIL.__version__


def _counts(users: list[str]) -> dict[str, int]:
    return dict(Counter(users))   # in the order of first appearance


def _notes(cfg: FemnistBuildConfig, missing: list[str], inconsistent: list[str], syn: Path | None) -> list[str]:
    notes = ["LEAF's FEMNIST recipe (docs/femnist.md); idx images are 255 - LEAF's pixel value "
             "(ink high, like every idx file here); LEAF's JSON x is value / 255 (ink low)",
             "writer_id (metadata column 0) is the line of femnist-users.txt holding the LEAF user"]
    if cfg.repeat_first:
        notes.append("as LEAF's group_by_writer.py: every writer folder but the first holds its first image twice")
    if cfg.sample == "iid":
        notes.append("iid sampling: LEAF's users are numbered groups of random samples, not writers")
    if missing:
        notes.append(f"built from an INCOMPLETE SD19 (allow_incomplete): {len(missing)} counts short")
    if inconsistent:
        notes.append(f"built from an INCONSISTENT SD19 (allow_inconsistent): {len(inconsistent)} problems")
    if syn is not None:
        notes.append("built from a SYNTHETIC SD19: the images are not NIST's handwriting")
    return notes


def _gzip_text(path: Path, text: str) -> None:
    with atomic_file(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(text.encode("utf-8"))


def _write_idx(tmp: Path, src: SD19Source, parts: dict[str, tuple[list[str], np.ndarray]], px: np.ndarray,
               slot: np.ndarray, ascii_: np.ndarray, labels_of: np.ndarray) -> None:
    np.subtract(np.uint8(255), px, out=px)   # idx: ink high (LEAF's values are ink low)

    seen = {u: i for i, u in enumerate(dict.fromkeys(u for p in PARTS for u in parts[p][0]))}
    with atomic_file(tmp / "femnist-users.txt", "w") as f:
        f.write("".join(u + "\n" for u in seen))
    classes = get_dataset("femnist").classes
    with atomic_file(tmp / "femnist-mapping.txt", "w") as f:
        f.write("".join(f"{i} {ord(c)}\n" for i, c in enumerate(classes)))
    idx = src.index
    for p in PARTS:
        users, rows = parts[p]
        names = file_names(p)
        _write_images(tmp / names["images"], px, slot[rows])   # in chunks: no n x 784 copy
        write_idx(tmp / names["labels"], labels_of[ascii_[rows]])
        meta = np.column_stack([np.array([seen[u] for u in users], np.int64), idx["writer"][rows], idx["hsf"][rows],
                                idx["template"][rows], ascii_[rows], rows]).astype(np.int32)
        write_idx(tmp / names["metadata"], meta)
        lines = ["user\twriter\tcharacter\tpath\n"]
        lines += [f"{u}\t{int(idx['writer'][r])}\t{chr(int(ascii_[r]))}\t{src.member_name(int(r))}\n"
                  for u, r in zip(users, rows.tolist())]
        _gzip_text(tmp / names["sources"], "".join(lines))


def _write_leaf(tmp: Path, stages: dict[str, list[leaf.LeafFile]], px: np.ndarray, slot: np.ndarray,
                ascii_: np.ndarray, labels_of: np.ndarray, cfg: FemnistBuildConfig) -> None:
    for folder in ("all_data", "train", "test"):
        d = tmp / "data" / folder
        d.mkdir(parents=True, exist_ok=True)
        for f in stages[folder]:
            data = {u: (px[slot[np.asarray(f.rows[u], np.int64)]],
                        labels_of[ascii_[np.asarray(f.rows[u], np.int64)]].tolist()) for u in f.users}
            with atomic_file(d / f.name, "wb") as raw:
                write_leaf_json(raw, f.users, data)
    meta = tmp / "meta"
    meta.mkdir()
    for name, what, flag, seed in (("sampling_seed.txt", "sampling", "--smplseed", cfg.seed),
                                   ("split_seed.txt", "split", "--spltseed", cfg.split_seed)):
        script = "sampling script"   # split_data.py's line says "sampling script" too
        tool = "utils/sample.py" if what == "sampling" else "utils/split_data.py"
        with atomic_file(meta / name, "w") as fh:
            # the two lines LEAF's sample.py / split_data.py write
            fh.write(f"# {what}_seed used by {script} - supply as {flag} to preprocess.sh "
                    f"or --seed to {tool}\n{seed}")
