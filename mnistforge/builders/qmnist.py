"""Build QMNIST, MNIST and the NIST digit table (xnist) from SD19 (real or synthetic).

``mnistforge build qmnist|mnist|xnist --sd19 PATH --out DIR [--qmnist-labels DIR|download]``

``xnist``: every SD19 digit preprocessed, in NIST order, with the 8-column extended labels; ``qmnist``: the 60,000 +
60,000 digits of the QMNIST recipe; ``mnist``: QMNIST train and the first 10,000 QMNIST test digits under MNIST's four
file names (files: ``docs/provenance-mnist-qmnist.md``).

The preprocessing is :mod:`.mnist_prepro`, the selection :mod:`.qmnist_recipe`.  Column 6 (duplicates) follows step 8:
identical *final* 28x28 images, so every digit is preprocessed (``duplicates="final"``, the default);
``duplicates="source"`` takes the SD19 index's exact 128x128 hashes instead (see the provenance doc).

With the published QMNIST tables (``qmnist_labels``: a folder holding ``qmnist-{train,test}-labels.tsv.gz`` or the
idx2 versions, or ``"download"`` to fetch and verify them through the registry) the outputs follow the published order;
otherwise the documented deterministic order of :func:`~.qmnist_recipe.select_qmnist`, and the manifest says so.

Everything is written into ``<out>.incomplete`` and renamed at the end; builds are byte-identical when repeated.

>>> from mnistforge.builders.qmnist import build_qmnist, QmnistBuildConfig
>>> m = build_qmnist("sd19/", "build/qmnist", QmnistBuildConfig(qmnist_labels="download"))  # doctest: +SKIP
>>> m.dataset("qmnist").counts                                   # doctest: +SKIP
{'train': 60000, 'test': 60000, 'test10k': 10000, 'test50k': 50000}
"""
from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.download import fetch
from ..errors import BuildError, ConfigError, InconsistentSourceError, MissingSourceError
from ..io.atomic import atomic_dir
from ..io.outputs import check_output_folder
from ..io.hashing import sha256_file
from ..io.manifest import DatasetEntry, Manifest, build_folder_problems
from ..progress import progress as progress_bar
from ..sd19.completeness import description_path, source_shortfalls, synthetic_description
from ..sd19.index import find_duplicates
from ..sd19.integrity import source_problems
from . import qmnist_recipe as qr
from .label_votes import write_label_votes
from .qmnist_files import (MNIST_FILES, QMNIST_FILES, split_jobs, write_files, write_xnist)
from ..io.similar import blake2b_image_digests
from .mnist_prepro import MnistPreproConfig, preprocess
from ..sd19.products import Product
from ..sd19.reader import SD19Source, open_sd19

logger = logging.getLogger(__name__)

DUPLICATE_MODES = ("final", "source")

NOTE_ORDER = ("order is NOT MNIST's: the published QMNIST tables were not given, so the images follow the documented "
              "deterministic order (writer digits and fill digits, each in NIST order, interleaved; see "
              "docs/provenance-mnist-qmnist.md); the index sets are the recipe's")
NOTE_MNIST_TEST = ("the MNIST test set here is the first rows of the deterministic QMNIST test "
                   "order, not MNIST's 10,000 test digits (those need the published order)")


@dataclass(frozen=True)
class QmnistBuildConfig:
    """How to build QMNIST / MNIST / xnist.

    ``prepro``: Fudge factor and centring (published defaults; ``MnistPreproConfig(1.0, "true")``: the "clean" variant).
    ``qmnist_labels`` (path, ``"download"`` or None): The published QMNIST extended-label tables fixing the order.
    ``duplicates`` ({"final", "source"}): How column 6 is computed (see the module doc).
    ``workers``: Decoding processes (default: all usable cores); ``progress``: bars (None: only on a terminal).
    ``allow_incomplete`` / ``allow_inconsistent``: Build from a source with fewer digits than it should hold, or one
        that disagrees with itself (``docs/reliability.md``), listing the problems in the manifest; without them such
        a source fails the build (:class:`MissingSourceError`, :class:`InconsistentSourceError`).
    """

    prepro: MnistPreproConfig = field(default_factory=MnistPreproConfig)
    qmnist_labels: str | Path | None = None
    duplicates: str = "final"
    workers: int | None = None
    overwrite: bool = False
    progress: bool | None = None
    allow_incomplete: bool = False
    allow_inconsistent: bool = False

    def __post_init__(self) -> None:
        if self.duplicates not in DUPLICATE_MODES:
            raise ConfigError("invalid duplicates mode", expected=" or ".join(DUPLICATE_MODES),
                              found=repr(self.duplicates))
        if self.workers is not None and (not isinstance(self.workers, int) or self.workers < 1):
            raise ConfigError("invalid number of workers", expected="a positive integer", found=self.workers)


# --- Public API -------------------------------------------------------------------------------

def build_qmnist(sd19_path: str | os.PathLike[str], out: str | os.PathLike[str],
                 config: QmnistBuildConfig | None = None) -> Manifest:
    """Build QMNIST (train 60,000 + test 60,000 with extended labels) into ``out``.

    ``sd19_path``: SD19 folder (zips or unpacked trees, either edition; real or synthetic).  Returns the manifest
    written to ``out/manifest.json`` (outputs hashed).
    """
    return _build("qmnist", sd19_path, out, config or QmnistBuildConfig())


def build_mnist(sd19_path: str | os.PathLike[str], out: str | os.PathLike[str],
                config: QmnistBuildConfig | None = None) -> Manifest:
    """Build MNIST from SD19 (QMNIST train + first 10,000 of QMNIST test) into ``out``; returns the manifest written."""
    return _build("mnist", sd19_path, out, config or QmnistBuildConfig())


def build_xnist(sd19_path: str | os.PathLike[str], out: str | os.PathLike[str],
                config: QmnistBuildConfig | None = None) -> Manifest:
    """Build the NIST digit table (every SD19 digit, 28x28, extended labels) into ``out``; returns the manifest."""
    config = config or QmnistBuildConfig()
    if config.duplicates != "final":
        config = replace(config, duplicates="final")    # every digit is preprocessed anyway
    return _build("xnist", sd19_path, out, config)


# --- Preprocessing every digit once --------------------------------------------------------------

def mnist_product(prepro: MnistPreproConfig) -> Product:
    """The digits preprocessed with ``prepro``, made in the one pass over SD19 and kept next to its
    index (:mod:`mnistforge.sd19.products`): qmnist, mnist and xnist take them from there."""
    return Product.of("mnist", functools.partial(preprocess, config=prepro), prepro.as_dict(), digits=True)


# --- The build --------------------------------------------------------------------------------

def _published_tables(spec: str | os.PathLike[str] | None, progress: bool | None
                      ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]] | tuple[None, None, None]:
    """Load the published train/test tables; returns (train, test, inputs-dict)."""
    if spec is None:
        return None, None, None
    if str(spec) == "download":
        paths: list[Path] = []
        for name in ("qmnist/qmnist-train-labels.tsv.gz", "qmnist/qmnist-test-labels.tsv.gz"):
            res = fetch(name, progress=progress)
            assert not isinstance(res, list)  # a file's name fetches that one file (a dataset's, a list)
            paths.append(Path(res.path))
            logger.info("%s: %s", name, res.text)
    else:
        paths = list(qr.find_published_tables(spec))
    train, test = (qr.read_label_table(p) for p in paths)
    info = {p.name: {"path": str(p.resolve()), "sha256": sha256_file(p)} for p in paths}
    return train, test, info


def _check_published_rows(table: np.ndarray, published: np.ndarray, name: str) -> None:
    gidx = published[:, qr.NIST_INDEX]
    if gidx.size and (gidx.min() < 0 or gidx.max() >= len(table)):
        raise BuildError(
            f"the published QMNIST {name} table disagrees with this source's digit table",
            expected=f"global NIST indices below {len(table)} (the digits of this source)",
            found=f"indices up to {int(gidx.max())}",
            hint="the order tables only apply to the real SD19 or a synthetic SD19 built with "
                 "--layout from the real xnist table; build without --qmnist-labels otherwise")
    rows = table[gidx, :6]
    bad = np.flatnonzero((rows != published[:, :6]).any(axis=1))
    if bad.size:
        raise BuildError(
            f"the published QMNIST {name} table disagrees with this source's digit table",
            expected="identical columns 0-5 (class, partition, writer, index, NIST class, NIST index)",
            found=f"{bad.size} rows differ, e.g. published row {int(bad[0])}: "
                  f"{published[bad[0], :6].tolist()} vs source {rows[bad[0]].tolist()}",
            hint="the order tables only apply to the real SD19 or a synthetic SD19 built with "
                 "--layout from the real xnist table")


def _every_digit(src: SD19Source, config: QmnistBuildConfig) -> tuple[np.ndarray, np.ndarray]:
    """(images, duplicate_of) of every digit in NIST order (the kept product, else made and kept)."""
    images = src.product(mnist_product(config.prepro), progress=config.progress)
    return images, find_duplicates(blake2b_image_digests(images))


def synthetic_description_path(src: SD19Source) -> Path | None:
    """The ``synthetic-sd19.json`` of an opened source that is a synthetic replica (its own description), else None."""
    path = getattr(src, "path", None)
    return None if path is None or synthetic_description(path) is None else description_path(path)


def _build(target: str, sd19_path: str | os.PathLike[str], out: str | os.PathLike[str],
           config: QmnistBuildConfig) -> Manifest:
    t0 = time.perf_counter()
    out = Path(out)
    sd19_path = Path(sd19_path)
    # before any work: the --out path, and what --overwrite would replace
    check_output_folder(out, inputs=_input_paths(sd19_path, config), overwrite=config.overwrite,
                        owned=build_folder_problems)
    # every digit preprocessed (step 8) unless MNIST follows the published tables (its 70,000 only):
    # a first open makes them from the same decode as the index
    every = config.duplicates == "final" and not (target == "mnist" and config.qmnist_labels is not None)
    src = open_sd19(sd19_path, progress=config.progress, workers=config.workers,
                    products=[mnist_product(config.prepro)] if every else [])
    missing = check_complete(src, ("d",), config.allow_incomplete)
    inconsistent = check_consistent(src, ("d",), config.allow_inconsistent)
    index = src.index
    drows = qr.digit_rows(index)
    table = qr.digit_table(index)                 # column 6 from the exact source images
    source_dup = find_duplicates(index["hash"][drows])
    logger.info("%s: %d digits in %s", target, drows.size, sd19_path)
    if drows.size == 0:
        raise BuildError("the SD19 source has no digits", path=sd19_path,
                         expected="a by_write hierarchy with digit (d) fields", found="none")

    notes: list[str] = []
    prepro = config.prepro
    if not prepro.is_published:
        notes.append(f"images are a {prepro.variant} variant, not MNIST's preprocessing: "
                     f"fudge={prepro.fudge}, centring={prepro.centring!r}")
    if (syn := synthetic_description_path(src)) is not None:
        notes.append("built from a SYNTHETIC SD19: the images are not NIST's handwriting")

    pub_train, pub_test, pub_info = None, None, None
    if target != "xnist":
        # checked before the expensive part: tables that do not fit this source fail fast
        pub_train, pub_test, pub_info = _published_tables(config.qmnist_labels, config.progress)
        if pub_train is not None:
            assert pub_test is not None  # the tables come as a pair
            _check_published_rows(table, pub_train, "train")
            _check_published_rows(table, pub_test, "test")

    images_all: np.ndarray | None = None
    final_dup = None
    # MNIST in the published order needs only its 70,000 digits: the published tables fix
    # the selection, so step 8 over every SD19 digit (which only decides the selection)
    # is left to `build qmnist`, which checks the recipe against the same tables.
    if as_published := target == "mnist" and pub_train is not None and config.duplicates == "final":
        images_all = src.kept(mnist_product(prepro))   # an earlier build's, when there is one
        dup_mask = None
    elif config.duplicates == "final":
        images_all, final_dup = _every_digit(src, config)
        table[:, qr.DUPLICATE] = np.where(final_dup < 0, 0, final_dup)
        dup_mask = final_dup >= 0
        extra = np.flatnonzero(dup_mask & (source_dup < 0))
        if extra.size:
            notes.append(f"{extra.size} digits have a final 28x28 image identical to an earlier "
                         "digit's although their SD19 images differ (marked as duplicates, step 8)")
        missed = np.flatnonzero((source_dup >= 0) & ~dup_mask)
        if missed.size:      # identical sources must give identical images: a bug if not
            raise BuildError("identical SD19 images preprocessed differently",
                             expected="identical 28x28 images", found=f"digits {missed[:5].tolist()}")
    else:
        dup_mask = source_dup >= 0

    parameters: dict[str, Any] = {"target": target, "preprocessing": prepro.as_dict(), "duplicates": config.duplicates}
    if as_published:
        parameters["selection"] = "published"
        notes.append("the selection is the published QMNIST tables' (train, and the first "
                     "10,000 test rows) as given: step 8 was checked among the selected images "
                     "only (build qmnist with the same tables checks the recipe over every digit)")
    else:
        assert dup_mask is not None  # set whenever the selection is not the published one
        parameters["duplicates_found"] = int(dup_mask.sum())
    inputs: dict[str, Any] = {"sd19": {"path": str(sd19_path.resolve()), "fingerprint": src.fingerprint,
                             "edition": src.edition, "digits": int(drows.size)}}
    if missing:
        inputs["sd19"]["missing"] = missing
        notes.append(f"built from an INCOMPLETE SD19 (allow_incomplete): {len(missing)} "
                     "partition/field counts short of what the source should hold (inputs.sd19."
                     "missing lists them)")
    if inconsistent:
        inputs["sd19"]["inconsistent"] = inconsistent
        notes.append(f"built from an INCONSISTENT SD19 (allow_inconsistent): {len(inconsistent)} "
                     "problems (duplicated or repeated characters, surplus counts; inputs.sd19."
                     "inconsistent lists them)")
    if syn is not None:
        inputs["sd19"]["synthetic_description_sha256"] = sha256_file(syn)

    with atomic_dir(out, overwrite=config.overwrite, inputs=_input_paths(sd19_path, config),
                    owned=build_folder_problems) as tmp:
        if target == "xnist":
            bar = progress_bar(total=3, desc="writing xnist (xz)", unit="file",
                               disable=None if config.progress is None else not config.progress)
            with bar:
                assert images_all is not None  # xnist preprocesses every digit (duplicates="final")
                write_xnist(tmp, images_all, table, bar)
            counts = {"nist": int(drows.size)}
        else:
            if as_published:
                assert pub_train is not None and pub_test is not None  # as_published: the tables were given
                sel = qr.published_selection(table, pub_train, pub_test)
            else:
                sel = qr.select_qmnist(table, duplicate=dup_mask)
                if pub_train is not None:
                    assert pub_test is not None  # the tables come as a pair
                    sel = qr.order_like_published(sel, pub_train, pub_test)
            if pub_train is not None:
                inputs["qmnist_labels"] = pub_info
            else:
                notes.append(NOTE_ORDER)
                if target == "mnist":
                    notes.append(NOTE_MNIST_TEST)
            if sel.recipe.scale != 1.0:
                notes.append(f"the source has {drows.size} digits, not SD19's {qr.NIST_DIGITS}: "
                             f"the recipe is scaled by {sel.recipe.scale:.6g} (see the recipe doc)")
            parameters["recipe"] = sel.recipe.as_dict()
            parameters["order"] = sel.order
            test_rows = sel.test if target == "qmnist" else sel.mnist_test
            want = np.concatenate([sel.train, test_rows])
            if images_all is not None:
                imgs = images_all[want]
            else:
                imgs = src.make([mnist_product(prepro)], drows[want], desc=f"preprocessing {target} digits",
                                progress=config.progress, workers=config.workers)[0]
            if as_published:
                _check_no_duplicates(imgs, want)
            elif images_all is None:
                d = find_duplicates(blake2b_image_digests(imgs))
                if (d >= 0).any():
                    notes.append(f"{int((d >= 0).sum())} selected digits have a final image identical "
                                 "to another selected digit's (duplicates='source' does not exclude "
                                 "them; build with duplicates='final' for step 8 exactly)")
            tr_imgs, te_imgs = imgs[:sel.train.size], imgs[sel.train.size:]
            tr_tab, te_tab = table[sel.train], table[test_rows]
            files = QMNIST_FILES if target == "qmnist" else MNIST_FILES
            write_files(split_jobs(tmp, files["train"], tr_imgs, tr_tab)
                         + split_jobs(tmp, files["test"], te_imgs, te_tab))
            counts = {"train": int(sel.train.size), "test": int(test_rows.size)}
            notes += write_label_votes(tmp, "mnist" if target == "mnist" else "qmnist", {"test": te_tab[:, qr.CLASS]})
            if target == "qmnist":
                counts.update(test10k=int(min(10000, test_rows.size)), test50k=int(max(0, test_rows.size - 10000)))
        # xnist is the "nist" split of the registry's qmnist dataset
        dataset = "mnist" if target == "mnist" else "qmnist"
        manifest = Manifest(kind=target, inputs=inputs, parameters=parameters, notes=notes, orientation="upright",
                            datasets={dataset: DatasetEntry(counts=counts)}, synthetic=syn is not None).write(tmp)
    logger.info("built %s into %s in %.1f s (%s)", target, out, time.perf_counter() - t0,
                ", ".join(f"{k} {v}" for k, v in counts.items()))
    return manifest


def _check_no_duplicates(images: np.ndarray, gidx: np.ndarray) -> None:
    """Step 8 among the selected digits: no two may have identical final images."""
    d = find_duplicates(blake2b_image_digests(images))
    if (d >= 0).any():
        k = int(np.flatnonzero(d >= 0)[0])
        raise BuildError(
            "the published QMNIST tables select digits with identical final images",
            expected="no duplicates among the selected digits (step 8 excludes them)",
            found=f"{int((d >= 0).sum())}, e.g. global indices {int(gidx[d[k]])} and {int(gidx[k])}",
            hint="this source is not SD19 as QMNIST knew it; build qmnist with the same tables "
                 "for the full check, or build without --qmnist-labels")


def check_complete(src: SD19Source, fields: Sequence[str], allow: bool) -> list[str]:
    """Shortfalls of ``src`` in ``fields`` (:mod:`mnistforge.sd19.completeness`): an error unless ``allow``."""
    missing, what = source_shortfalls(src, fields)
    if missing and not allow:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise MissingSourceError(
            "the SD19 source is incomplete", path=getattr(src, "path", None),
            expected=f"the characters of {what}", found=missing[0] + more,
            hint="restore the missing files, or build anyway with --allow-incomplete "
                 "(the manifest then lists what was missing)")
    if missing:
        logger.warning("SD19 source incomplete (allowed): %s", "; ".join(missing[:5]))
    return missing


def check_consistent(src: SD19Source, fields: Sequence[str], allow: bool) -> list[str]:
    """Problems of ``src`` in ``fields`` (:mod:`mnistforge.sd19.integrity`): an error unless ``allow``."""
    problems, what = source_problems(src, fields)
    if problems and not allow:
        path = getattr(src, "path", None)
        more = (f" (and {len(problems) - 1} more problems: `mnistforge sd19 info {path}` lists "
                "them)") if len(problems) > 1 else ""
        raise InconsistentSourceError(
            "the SD19 source disagrees with itself or with what it should hold", path=path,
            expected=f"each character once, numbered once, within {what}", found=problems[0] + more,
            hint="re-copy the named files from the SD19 distribution (or synthesise the replica again), or build "
                 "anyway with --allow-inconsistent (the manifest then lists every problem)")
    if problems:
        logger.warning("SD19 source inconsistent (allowed): %s", "; ".join(problems[:5]))
    return problems


def _input_paths(sd19: str | os.PathLike[str], config: QmnistBuildConfig) -> list[str | os.PathLike[str]]:
    """What a build reads from disk: the output folder must not overlap any of it."""
    labels = config.qmnist_labels
    return [sd19] + ([labels] if labels not in (None, "download") else [])
