"""Build the six EMNIST datasets from SD19 (real or synthetic).

``mnistforge build emnist --sd19 PATH --out DIR`` writes all six datasets into one folder,
``mnistforge build emnist-<name>`` one of them.  Each character is read and converted once (:mod:`.emnist_prepro`) and
shared by every dataset that uses it; the splits come from :mod:`.emnist_splits`.

Files are named like the official distribution's, plus int32 metadata (``docs/provenance-emnist.md``).
Images are stored transposed like the official files (``orientation "official"``, the default) or upright
(``"upright"``); the manifest records which, and the loaders always present them upright.  The balanced datasets' train
files end with their validation portion (count in the manifest).

>>> from mnistforge.builders.emnist import EmnistBuildConfig, build_emnist
>>> build_emnist("sd19/", "emnist-out", EmnistBuildConfig(splits=("balanced",)))  # doctest: +SKIP
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import hashlib
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from .. import settings
from ..errors import BuildError, ConfigError
from ..io.atomic import atomic_dir, atomic_file
from ..io.compression import open_gzip_writer
from ..io.idx import idx_header_bytes
from ..io.manifest import DatasetEntry, Manifest, build_folder_problems
from ..io.outputs import check_output_folder
from ..progress import progress
from ..sd19.nist_table import FIELDS
from ..sd19.products import Product, product_rows
from ..sd19.reader import SD19Source, open_sd19
from .qmnist import check_complete, check_consistent, synthetic_description_path
from .sources import sd19_inputs
from .emnist_prepro import DEFAULT_CONFIG, EmnistPreproConfig, convert_batch
from .emnist_splits import (DATASETS, METADATA_COLUMNS, EmnistSplitConfig, make_metadata,
                            make_splits, mapping_lines, split_sides)

logger = logging.getLogger(__name__)

ORIENTATIONS = ("official", "upright")
GZIP_LEVEL = 6
WRITE_CHUNK = 32768  # images gathered at a time while writing a file


def file_names(name: str) -> dict[str | tuple[str, str], str]:
    """Output file names of one dataset, keyed ``(part, kind)`` plus ``"mapping"``.

    >>> file_names("balanced")[("train", "images")]
    'emnist-balanced-train-images-idx3-ubyte.gz'
    """
    p = f"emnist-{name}"
    out: dict[str | tuple[str, str], str] = {"mapping": f"{p}-mapping.txt"}
    for part in ("train", "test"):
        out[(part, "images")] = f"{p}-{part}-images-idx3-ubyte.gz"
        out[(part, "labels")] = f"{p}-{part}-labels-idx1-ubyte.gz"
        out[(part, "metadata")] = f"{p}-{part}-metadata-idx2-int.gz"
    return out


# ----------------------------------------------------------------------------- writing
def _write_idx_stream(path: Path, shape: tuple[int, ...], dtype: npt.DTypeLike,
                      chunks: Iterable[npt.ArrayLike]) -> None:
    """Write an idx file from an iterator of C-ordered arrays, gzip mtime 0, atomically."""
    be = np.dtype(dtype).newbyteorder(">")
    with atomic_file(path, "wb") as raw:
        with open_gzip_writer(raw, level=GZIP_LEVEL) as gz:
            gz.write(idx_header_bytes(shape, dtype))
            for c in chunks:
                gz.write(np.ascontiguousarray(c, dtype=be).tobytes())


def _write_images(path: Path, store: np.ndarray, slots: np.ndarray) -> None:
    chunks = (store[slots[s:s + WRITE_CHUNK]] for s in range(0, len(slots), WRITE_CHUNK))
    _write_idx_stream(path, (len(slots),) + store.shape[1:], np.uint8, chunks)


def _write_array(path: Path, arr: np.ndarray) -> None:
    _write_idx_stream(path, arr.shape, arr.dtype, [arr])


def _dedupe(tasks: list[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], list[tuple[Path, Path]]]:
    """Split write tasks into unique ones and ``(dst, src)`` copies of identical content."""
    seen: dict[tuple[Any, ...], Path] = {}
    unique: list[tuple[Any, ...]] = []
    copies: list[tuple[Path, Path]] = []
    for t in tasks:
        fn, path, data = t[1], t[2], t[-1]
        key: tuple[Any, ...] = (fn.__name__, hashlib.sha1(np.ascontiguousarray(data).tobytes()).hexdigest(),
               str(np.asarray(data).dtype), np.asarray(data).shape)
        if fn is _write_images:
            key = key + (id(t[3]),)
        if key in seen:
            copies.append((path, seen[key]))
        else:
            seen[key] = path
            unique.append(t)
    return unique, copies


# ----------------------------------------------------------------------------- source
def _open_source(sd19: str | os.PathLike[str] | SD19Source, show_progress: bool | None, workers: int | None = None,
                 products: Sequence[Product] = ()) -> SD19Source:
    if isinstance(sd19, SD19Source):
        return sd19
    return open_sd19(sd19, progress=show_progress, workers=workers, products=products)


def _convert(imgs: np.ndarray, config: EmnistPreproConfig, orientation: str) -> np.ndarray:
    out = convert_batch(imgs, config)
    return out.transpose(0, 2, 1) if orientation == "official" else out


def emnist_product(cfg: EmnistBuildConfig) -> Product:
    """The characters the datasets of ``cfg`` use (the digits when they use only digits), converted
    and stored in ``cfg``'s orientation: made in the one pass over SD19 and kept next to its index
    (:mod:`mnistforge.sd19.products`), each character converted once for all six datasets."""
    params = {**cfg.prepro.as_dict(), "orientation": cfg.orientation}
    return Product.of("emnist", functools.partial(_convert, config=cfg.prepro, orientation=cfg.orientation), params,
                      digits=set(cfg.splits) <= {"digits", "mnist"})


# ----------------------------------------------------------------------------- build
@dataclass(frozen=True)
class EmnistBuildConfig:
    """How to build EMNIST (``mnistforge build emnist|emnist-<name>``).

    ``splits``: Datasets to build, among :func:`mnistforge.registry.emnist_splits` (default: all six);
    ``seed``, ``split_by``, ``letters_variant``, ``scale``: as in :class:`~.emnist_splits.EmnistSplitConfig`;
    ``orientation`` ({"official", "upright"}): Storage of the idx images (official = transposed like NIST's files);
    ``prepro``: Conversion parameters (defaults documented in ``docs/provenance-emnist.md``);
    the others as in :class:`~.qmnist.QmnistBuildConfig`.

    >>> EmnistBuildConfig(splits=("letters",), seed=3).split_config.seed
    3
    >>> EmnistBuildConfig(orientation="sideways")
    Traceback (most recent call last):
    ...
    mnistforge.errors.ConfigError: unknown EMNIST orientation: expected 'official' or 'upright', found 'sideways'
    """

    splits: tuple[str, ...] = DATASETS
    seed: int = 0
    split_by: str = "random"
    letters_variant: str = "official"
    scale: float | None = None
    orientation: str = "official"
    prepro: EmnistPreproConfig = DEFAULT_CONFIG
    workers: int | None = None
    overwrite: bool = False
    progress: bool | None = None
    allow_incomplete: bool = False
    allow_inconsistent: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.splits, str):
            # one name given as a string would otherwise be read letter by letter
            object.__setattr__(self, "splits", (self.splits,))
        chosen = set(self.splits)
        unknown = sorted(chosen - set(DATASETS))
        if unknown or not chosen:
            raise ConfigError("unknown EMNIST dataset", expected=", ".join(DATASETS),
                              found=", ".join(unknown) or "nothing")
        # in registry order whatever the order given: the manifest and outputs do not depend on it
        object.__setattr__(self, "splits", tuple(s for s in DATASETS if s in chosen))
        if self.orientation not in ORIENTATIONS:
            raise ConfigError("unknown EMNIST orientation", expected="'official' or 'upright'",
                              found=repr(self.orientation))
        if self.workers is not None and (not isinstance(self.workers, int) or self.workers < 1):
            raise ConfigError("invalid number of EMNIST workers", expected="a positive integer", found=self.workers)
        _ = self.split_config  # raises ConfigError for a bad seed, split_by, letters_variant or scale

    @property
    def split_config(self) -> EmnistSplitConfig:
        """The split part (:class:`~.emnist_splits.EmnistSplitConfig`)."""
        return EmnistSplitConfig(seed=self.seed, split_by=self.split_by,
                                 letters_variant=self.letters_variant, scale=self.scale)


def build_emnist(sd19: str | os.PathLike[str], out: str | os.PathLike[str],
                 config: EmnistBuildConfig | EmnistPreproConfig | None = None,
                 splits: str | Iterable[str] | None = None, *, split_config: EmnistSplitConfig | None = None,
                 seed: int | None = None, split_by: str | None = None, letters_variant: str | None = None,
                 orientation: str | None = None, overwrite: bool | None = None, workers: int | None = None,
                 show_progress: bool | None = None) -> Manifest:
    """Build EMNIST datasets from SD19 into ``out`` (atomically).

    ``sd19``: Folder of SD19 (zips or trees, either edition), or an opened :func:`mnistforge.sd19.open_sd19`.
    ``config``: Everything about the build (an :class:`EmnistPreproConfig` is taken as its ``prepro``); each keyword
    shortcut given replaces that field (``split_config`` its seed, split_by, letters_variant and scale).  Returns the
    manifest written to ``out/manifest.json`` (outputs hashed).
    """
    config = _with_overrides(config, splits=splits, split_config=split_config, seed=seed, split_by=split_by,
                             letters_variant=letters_variant, orientation=orientation, overwrite=overwrite,
                             workers=workers, progress=show_progress)
    return _build(sd19, out, config)


def _with_overrides(config: EmnistBuildConfig | EmnistPreproConfig | None, *, splits: str | Iterable[str] | None,
                    split_config: EmnistSplitConfig | None, **fields: Any) -> EmnistBuildConfig:
    if config is None:
        config = EmnistBuildConfig()
    elif isinstance(config, EmnistPreproConfig):
        config = EmnistBuildConfig(prepro=config)
    elif not isinstance(config, EmnistBuildConfig):
        raise ConfigError("invalid EMNIST build configuration",
                          expected="an EmnistBuildConfig", found=type(config).__name__)
    changes: dict[str, Any] = {}
    if split_config is not None:
        changes.update(seed=split_config.seed, split_by=split_config.split_by,
                       letters_variant=split_config.letters_variant, scale=split_config.scale)
    changes.update({k: v for k, v in fields.items() if v is not None})
    if splits is not None:
        changes["splits"] = tuple([splits] if isinstance(splits, str) else splits)
    return dataclasses.replace(config, **changes) if changes else config


def _build(sd19: str | os.PathLike[str], out: str | os.PathLike[str], cfg: EmnistBuildConfig) -> Manifest:
    config, split_config, orientation = cfg.prepro, cfg.split_config, cfg.orientation
    names, overwrite, show_progress = list(cfg.splits), cfg.overwrite, cfg.progress
    workers = settings.current(workers=cfg.workers).workers
    out = Path(out)
    # before any work: the --out path, and what --overwrite would replace
    check_output_folder(out, inputs=[sd19], overwrite=overwrite, owned=build_folder_problems)

    product = emnist_product(cfg)
    src = _open_source(sd19, show_progress, cfg.workers, [product])
    fields = ("d",) if product.digits else FIELDS
    missing = check_complete(src, fields, cfg.allow_incomplete)
    inconsistent = check_consistent(src, fields, cfg.allow_inconsistent)
    syn = synthetic_description_path(src)
    index = src.index
    if len(index) == 0:
        raise BuildError("SD19 index is empty", path=getattr(src, "path", None),
                         expected="characters", found="none", hint="check --sd19")
    is_test = split_sides(index, split_config)
    dsets = make_splits(index, names, split_config, is_test=is_test)

    with atomic_dir(out, overwrite=overwrite, inputs=[getattr(src, "path", sd19)], owned=build_folder_problems) as tmp:
        store = src.product(product, progress=show_progress)     # every character converted once
        t1 = time.perf_counter()
        slot_of = np.full(len(index), -1, np.int64)
        prows = product_rows(index, product)
        slot_of[prows] = np.arange(len(prows))
        tasks: list[tuple[Any, ...]] = []
        for name, d in dsets.items():
            fn = file_names(name)
            with atomic_file(tmp / fn["mapping"], "w") as f:
                f.write("\n".join(mapping_lines(d.kind)) + "\n")
            for part, r, lab in (("train", d.train_rows, d.train_labels), ("test", d.test_rows, d.test_labels)):
                tasks.append((len(r) * 28 * 28, _write_images, tmp / fn[(part, "images")], store, slot_of[r]))
                tasks.append((len(r), _write_array, tmp / fn[(part, "labels")], lab.astype(np.uint8)))
                tasks.append((len(r) * 24, _write_array, tmp / fn[(part, "metadata")], make_metadata(index, r)))
        tasks, copies = _dedupe(tasks)
        tasks.sort(key=lambda t: -t[0])  # biggest first keeps the threads busy
        bar = progress(total=len(tasks) + len(copies), desc="EMNIST write", unit="file",
                       disable=None if show_progress is None else not show_progress)
        with bar, cf.ThreadPoolExecutor(workers) as pool:
            for fut in cf.as_completed([pool.submit(t[1], *t[2:]) for t in tasks]):
                fut.result()
                bar.update(1)
        for dst, src_path in copies:
            # byclass and bymerge share images and metadata: compress once, copy.
            with atomic_file(dst, "wb") as f, open(src_path, "rb") as g:
                shutil.copyfileobj(g, f, 1 << 20)
            bar.update(1)
        del store
        logger.info("EMNIST: wrote %d files in %.1f s", len(tasks), time.perf_counter() - t1)
        summaries = {name: d.summary() for name, d in dsets.items()}
        for name, s in summaries.items():
            s["files"] = {("mapping" if k == "mapping" else "-".join(k)): v for k, v in file_names(name).items()}
            s["orientation"] = orientation
        notes = [
            "images stored transposed like the official EMNIST idx files"
            if orientation == "official" else "images stored upright (not like the official "
                                              "files); loaders read the orientation here",
            "balanced datasets: the last 'validation' images of each train file are the validation portion",
            f"metadata columns (int32): {', '.join(METADATA_COLUMNS)}; field 0 d, 1 u, 2 l, 3 c",
            "every dataset's test images come from one test side of SD19, its train images "
            "from the train side: no test image is in any EMNIST training set",
        ]
        if split_config.split_by == "writer":
            notes.append("writer-disjoint: no writer has characters on both sides")
        if missing:
            notes.append(f"built from an INCOMPLETE SD19 (allow_incomplete): {len(missing)} "
                         "partition/field counts short (inputs.sd19_missing lists them)")
        if inconsistent:
            notes.append(f"built from an INCONSISTENT SD19 (allow_inconsistent): "
                         f"{len(inconsistent)} problems (duplicated or repeated characters, "
                         "surplus counts; inputs.sd19_inconsistent lists them)")
        if syn is not None:
            notes.append("built from a SYNTHETIC SD19: the images are not NIST's handwriting")
        if split_config.letters_variant == "paper37" and "letters" in dsets:
            notes.append("emnist-letters is the paper's 37-class variant (labels 0..36), "
                         "not the official 26-class release")
        n_side = int(is_test.sum())
        manifest = Manifest(
            kind="emnist", inputs=sd19_inputs(src, sd19, index, missing=missing, inconsistent=inconsistent, syn=syn),
            parameters={"datasets": names, "orientation": orientation,
                        "split": split_config.as_dict(), "prepro": config.as_dict()},
            notes=notes, orientation=orientation,
            datasets={name: DatasetEntry.from_dict(s) for name, s in summaries.items()},
            metadata_columns=list(METADATA_COLUMNS), split_by=split_config.split_by,
            sides={"train": int(len(index) - n_side), "test": n_side}, synthetic=syn is not None,
        ).write(tmp)
    logger.info("EMNIST: wrote %s into %s", ", ".join(names), out)
    return manifest
