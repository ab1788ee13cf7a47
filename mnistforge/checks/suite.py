"""``verify(target)``: run every applicable check on a dataset and collect a report.

The target is a dataset name (official files from the cache), a folder (a
build folder with ``manifest.json``, or a folder of idx files under the
official names), ``NAME:SPLIT`` / ``FOLDER:SPLIT``, or an already loaded
split (:class:`mnistforge.loaders.DatasetSplit`, or a dict of them by split).

Checks run, when they apply (see docs/verify.md):

=====================  ============================================================
``files``              every file of a split is present
``integrity.parse``    every idx file parses (folders only)
``hashes.*``           manifest (build folders), registry (official files, folders
                       or cache)
``integrity.*``        dtype/shape, counts, label range, size, per-class balance,
                       metadata labels
``statistics``         centre of mass, 20x20 box vs frame-filling, pixel histogram
``orientation``        transposed characters are flagged
``duplicates.*``       exact within a split, exact and near across train/test
``writers.*``          writers per split, writers shared by train and test
``reference``          QMNIST-style match against ``reference``
=====================  ============================================================
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..io.manifest import Manifest
from ..registry import balanced_datasets
from . import duplicates as dup
from . import hashes, integrity, reference as ref_mod, statistics, writers
from .label_issues import check_label_issues, has_votes
from .result import FAIL, INFO, PASS, WARN, CheckResult, VerifyReport, load_failure, run_check

logger = logging.getLogger(__name__)


CROSS_PAIRS = (("train", "test"),)


def _leaf_checks():
    from .femnist import femnist_build_checks  # only a FEMNIST build pays for its import

    return femnist_build_checks


#: the extra checks a registry entry's ``build_checks`` names -> a function returning the check
#: ``(manifest, loaded, add)`` (imported when used)
BUILD_CHECKS = {"leaf": _leaf_checks}


class _Ctx:
    """What the checks need to know about the target."""

    def __init__(self, name, info=None, root=None, folder=None, manifest=None, loaded=None):
        self.name = name
        self.info = info
        self.root = root
        self.folder = folder
        self.manifest = manifest
        self.loaded = loaded or {}
        self.card_counts: dict = {}   # a Hugging Face export: rows per split from its card

    @property
    def is_build(self) -> bool:
        return self.manifest is not None


def manifest_entry(manifest: Manifest | None, name: str) -> dict:
    """The image counts per split a build manifest records for dataset ``name``, if any."""
    entry = manifest.dataset(name) if manifest is not None and name else None
    return dict(entry.counts) if entry is not None else {}


def _split_by(manifest: Manifest | None) -> str | None:
    return manifest.split_by if manifest is not None else None


def expected_count(ctx: _Ctx, split: str):
    """(count, source) for a split: build manifest first, then the registry."""
    entry = manifest_entry(ctx.manifest, ctx.name)
    if isinstance(entry.get(split), int):
        return int(entry[split]), "build manifest"
    if split in ctx.card_counts:
        return int(ctx.card_counts[split]), "dataset card"
    if ctx.is_build:
        # A build from a partial or synthetic SD19 has its own sizes; without
        # them in the manifest the registry size would be a false alarm.
        if ctx.info is not None and split in ctx.info.splits and not _synthetic(ctx.manifest):
            return ctx.info.split(split).count, "registry"
        return None, "build manifest (no size recorded)"
    if ctx.info is not None and split in ctx.info.splits:
        return ctx.info.split(split).count, "registry"
    return None, "registry"


def _synthetic(manifest: Manifest | None) -> bool:
    return manifest is not None and manifest.from_synthetic_sd19


def class_range(ctx: _Ctx, ds) -> tuple[int, int]:
    """(number of classes, first label) for a split."""
    info = getattr(ds, "info", None) or ctx.info
    classes = list(getattr(ds, "classes", None) or (info.classes if info else []))
    offset = int(info.label_offset) if info is not None else 0
    entry = ctx.manifest.dataset(ctx.name) if ctx.manifest is not None and ctx.name else None
    n = len(classes) - offset if classes else int(np.max(ds.labels)) + 1
    if entry is not None and entry.classes is not None and entry.classes != n:
        return int(entry.classes), 0  # e.g. the paper's 37-class letters variant
    return n, offset


# --------------------------------------------------------------------------- targets

def _resolve(target, split):
    """-> (name, {split: loaded or None}, root)."""
    from ..loaders import resolve_target

    if hasattr(target, "images") and hasattr(target, "labels"):
        s = getattr(target, "split", None) or "split"
        return getattr(target, "name", None), {s: target}, None
    if isinstance(target, Mapping):
        first = next(iter(target.values()))
        return getattr(first, "name", None), dict(target), None
    if not isinstance(target, (str, os.PathLike)):
        raise ConfigError("cannot verify this target", expected="a dataset name, a folder or a "
                          "loaded split", found=type(target).__name__)
    name, sp, root = resolve_target(os.fspath(target), default_split=split)
    return name, sp, root


def _splits_to_check(info, split):
    if split:
        return [split]
    return [s for s, sp in info.splits.items() if not sp.is_view]


def _split_files(info, split, folder):
    """{role: path or None} of a file split in ``folder``."""
    from ..gate.source import locate

    fsp = info.file_split(split)
    out = {}
    for role in ("images", "labels", "metadata"):
        fname = getattr(fsp, role)
        if fname and (role == "images" or fname != fsp.images):
            if role == "metadata" and fname == fsp.labels:
                continue
            out[role] = (fname, locate(folder, fname) if folder is not None else None)
    return out


def _as_metadata(value):
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        from ..io.idx import read_idx
        return np.asarray(read_idx(value))
    return np.asarray(value)


# --------------------------------------------------------------------------- main

def verify(target, *, reference=None, strict: bool = False, split: str | None = None,
           metadata: Mapping | None = None, near_threshold: float = dup.DEFAULT_NEAR_L2,
           download: bool | None = None, report_dir=None, near: bool = True) -> VerifyReport:
    """Verify a dataset; return a :class:`~mnistforge.checks.result.VerifyReport`.

    Parameters
    ----------
    target : str, path, DatasetSplit or dict of DatasetSplit
        ``NAME``, ``NAME:SPLIT``, ``FOLDER``, ``FOLDER:SPLIT`` or loaded splits;
        or a third-party copy ``PATH[:SPLIT]`` (npz, npy, CSV, torchvision root,
        parquet snapshot, .mat), which is identified first (:mod:`.foreign`).
    reference : str, path or DatasetSplit, optional
        Match every verified split against the same split of this dataset
        (QMNIST-style statistics).  ``NAME:SPLIT`` picks the reference split.
    strict : bool
        Warnings count as failures (``report.exit_code``).
    split : str, optional
        Only this split (same as ``TARGET:SPLIT``).
    metadata : dict, optional
        Extra metadata by split (array or idx path), e.g. the QMNIST extended
        labels for the official MNIST files; for a split of ``N`` images the
        first ``N`` rows are used (QMNIST's test rows start with MNIST's test set).
    near_threshold : float
        L2 radius of the near-duplicate search (pixels 0..255).
    download : bool
        Let official files be fetched into the cache when missing.
    report_dir : path, optional
        Also write the HTML report (see :mod:`mnistforge.checks.report`).
    near : bool
        Run the near-duplicate search (the slowest check on large sets).

    Examples
    --------
    >>> from mnistforge.checks import verify
    >>> rep = verify("mnist:test")                  # doctest: +SKIP
    >>> rep.status, rep["integrity.size[test]"].values["found"]   # doctest: +SKIP
    ('pass', 10000)
    >>> verify("mnist.npz").info["identification"][0]["verdict"]  # doctest: +SKIP
    'identical'
    """
    from .femnist import is_leaf_folder, verify_leaf_folder
    from .foreign import finish_report, foreign_target, identify_copy

    if isinstance(target, (str, os.PathLike)) and is_leaf_folder(target):
        return verify_leaf_folder(target, strict=strict)   # LEAF's JSON (checks/femnist.py)
    foreign = foreign_target(target, split)
    if foreign is not None:  # a third-party copy: say what it is first (checks/foreign.py)
        copy, splits, answers, ref = identify_copy(*foreign, reference=reference, download=download)
        rep = finish_report(verify(splits, reference=ref, strict=strict, metadata=metadata,
                                   download=download, near_threshold=near_threshold, near=near),
                            foreign[0], foreign[1], copy, answers)
        if report_dir is not None:
            from .report import write_report
            write_report(rep, report_dir)
        return rep
    from ..loaders import load
    from ..gate.source import resolve
    from ..registry import get_dataset, get_file

    name, sp, root = _resolve(target, split)
    results: list[CheckResult] = []
    add = results.append
    info = None
    if name:
        try:
            info = get_dataset(name)
        except KeyError:
            info = None
    loaded_given = isinstance(sp, dict)
    ctx = _Ctx(name, info, root)
    label = os.fspath(target) if isinstance(target, (str, os.PathLike)) else \
        f"{name or 'arrays'} ({', '.join(sp) if loaded_given else ''})"
    report = VerifyReport(label, results, strict=strict,
                          info={"dataset": name, "root": str(root) if root else None})

    if loaded_given:
        loaded = sp
    elif root is not None and name and _hf_splits(root, name) is not None:
        loaded = _load_hf(ctx, info, sp, add, report, download)
    else:
        if root is not None:   # the folder and its manifest, as the gate resolves them
            source = resolve(root, info)
            ctx.folder = source.folder
            ctx.manifest = source.manifest
            if ctx.manifest is None and ctx.folder is not None and ctx.folder != Path(root):
                ctx.manifest = source.manifest_of(Path(root))
                if ctx.manifest is not None:
                    ctx.folder_manifest_root = Path(root)
        report.info.update(folder=str(ctx.folder) if ctx.folder else None,
                           build=ctx.is_build,
                           source="build folder" if ctx.is_build else
                           ("folder" if root is not None else "cache"))
        loaded = {}
        used_files = []
        splits = _splits_to_check(info, sp)
        for s in splits:
            if root is not None:
                files = _split_files(info, s, ctx.folder)
                present = {r: p for r, (f, p) in files.items() if p is not None}
                missing = [f for r, (f, p) in files.items() if p is None and r != "metadata"]
                if missing and not present and sp is None:
                    logger.info("%s: split %s not present, skipped", name, s)
                    continue
                if missing:
                    add(CheckResult(f"files[{s}]", FAIL, {"missing": missing},
                                    f"{len(missing)} files missing: {', '.join(missing)}"))
                    continue
                used_files += list(present.values())
            try:
                # the hash checks below judge the files; loading must not refuse them first
                loaded[s] = load(name, s, root=root, with_metadata=True, download=download,
                                 trust_files=True)
            except Exception as e:  # a file that does not load is a finding
                add(load_failure(f"load[{s}]", e))
        ctx.loaded = loaded
        # ---- file level
        if root is not None:
            uniq = sorted(set(used_files))
            contents: dict = {}   # parse inflates each file once; the hash check reuses it
            if uniq:
                add(run_check("integrity.parse", integrity.check_parse, uniq,
                              contents=contents))
            if ctx.is_build:
                mroot = getattr(ctx, "folder_manifest_root", ctx.folder)
                rel = [Path(p).resolve().relative_to(Path(mroot).resolve()).as_posix()
                       for p in uniq]
                # The whole build unless one split was asked for: an edit of
                # any output (even one the loader does not read) is a finding.
                add(run_check("hashes.manifest", hashes.check_manifest, mroot, ctx.manifest,
                              only=rel if sp else None))
            elif uniq:
                files = {}
                for p in uniq:
                    try:
                        files[p] = get_file(f"{info.group}/{_registry_name(info, p)}")
                    except KeyError:
                        pass
                add(run_check("hashes.registry", hashes.check_registry_files, files,
                              contents=contents))
            contents.clear()
        elif loaded:
            # verify re-hashes what it verifies: a sidecar is what bit rot fools
            files = _cache_files(info, loaded)
            add(run_check("hashes.cache", lambda f: hashes.check_registry_files(
                f, name="hashes.cache"), files) if files else _cache_status(loaded))

    # ---- per split
    for s, ds in loaded.items():
        add(run_check(f"integrity.images[{s}]", integrity.check_images, ds.images))
        md = getattr(ds, "metadata", None)
        add(run_check(f"integrity.counts[{s}]", integrity.check_counts, ds.images, ds.labels,
                      metadata=md))
        n_cls, offset = class_range(ctx, ds)
        add(run_check(f"integrity.labels[{s}]", integrity.check_label_range, ds.labels, n_cls,
                      offset))
        # a copy whose rows map to official rows (a subset): its size and balance are its own
        part = getattr(ds, "row_map", None) is not None and bool(ds.row_map.mapped.any())
        if not loaded_given or name:
            want, source = expected_count(ctx, getattr(ds, "split", s) or s)
            if part and want is not None and len(ds.labels) != want:
                add(CheckResult(f"integrity.size[{s}]", INFO,
                                {"found": len(ds.labels), "expected": want, "source": source},
                                f"{len(ds.labels)} images: official rows of a split of {want} "
                                "(row map)"))
            else:
                add(run_check(f"integrity.size[{s}]", integrity.check_size, len(ds.labels), want,
                              source=source))
        if name in balanced_datasets() and not part:
            want, _ = expected_count(ctx, s)
            per = want // n_cls if want and want % n_cls == 0 else None
            add(run_check(f"integrity.balance[{s}]", integrity.check_balanced, ds.labels,
                          per, n_cls, offset))
        if md is not None:
            ml = writers.metadata_labels(md)
            if ml is not None:
                add(run_check(f"integrity.metadata[{s}]", integrity.check_metadata_labels,
                              ds.labels, ml))
        if has_votes(md):  # MNIST/QMNIST test: what humans said about the labels
            add(run_check(f"label_issues[{s}]", check_label_issues, ds.labels, md, s))
        add(run_check(f"statistics[{s}]", statistics.check_statistics, ds.images, s, name))
        add(run_check(f"orientation[{s}]", statistics.check_orientation, ds.images, ds.labels,
                      getattr(ds, "classes", None), s, name))
        add(run_check(f"duplicates.within[{s}]", dup.check_exact_within, ds.images, s))
    if name in balanced_datasets() and "train" in loaded and not loaded_given and \
            "validation" in getattr(info, "splits", {}):
        try:
            val = load(name, "validation", root=root, download=download, trust_files=True)
            n_cls, offset = class_range(ctx, val)
            add(run_check("integrity.balance[validation]", integrity.check_balanced,
                          val.labels, None, n_cls, offset))
        except Exception as e:
            add(load_failure("integrity.balance[validation]", e))

    # ---- across splits
    for a, b in CROSS_PAIRS:
        if a in loaded and b in loaded:
            tr, te = loaded[a], loaded[b]
            add(run_check(f"duplicates.{a}-{b}", dup.check_exact_across, tr.images, te.images))
            if near:
                add(run_check(f"duplicates.near[{a}-{b}]", dup.check_near_across, tr.images,
                              te.images, near_threshold))
    _writer_checks(ctx, loaded, metadata, add)
    if not loaded_given and info is not None:
        for check in info.build_checks:
            BUILD_CHECKS[check]()(ctx.manifest, loaded, add)

    # ---- reference
    if reference is not None:
        _reference_checks(reference, loaded, add, download)

    if report_dir is not None:
        from .report import write_report
        write_report(report, report_dir)
    return report


def _hf_splits(root, name):
    """{split: rows declared by the card} when ``root`` is an export holding config ``name``."""
    from ..io.hf.repo import is_hf_repo, read_card

    if not is_hf_repo(root, name):
        return None
    for entry in read_card(root).get("dataset_info") or []:
        if entry.get("config_name") == name:
            return {str(s["name"]): int(s["num_examples"]) for s in entry.get("splits") or []}
    return {}


def _load_hf(ctx, info, split, add, report, download) -> dict:
    """A Hugging Face export: shards re-hashed against the export's record, then each split
    loaded for the same checks as idx files (counts against the card)."""
    from ..io.hf.repo import recorded_shard_hashes, repo_configs, shard_problems
    from ..io.hf.schema import hf_split_name
    from ..loaders import load

    root = Path(ctx.root)
    declared = _hf_splits(root, ctx.name) or {}
    report.info.update(folder=str(root), build=False, source="Hugging Face export")
    problems = shard_problems(root, {ctx.name: repo_configs(root).get(ctx.name, {})})
    if not recorded_shard_hashes(root):
        add(CheckResult("hashes.shards", WARN, {"problems": []}, "the export recorded no shard "
                        "hashes (exported by an older mnistforge): shards not verified"))
    else:
        add(CheckResult("hashes.shards", FAIL if problems else PASS, {"problems": problems},
                        "; ".join(problems) if problems else
                        "every shard has the sha256 the export recorded"))
    names = {hf_split_name(s): s for s in (info.splits if info is not None else [])}
    ctx.card_counts = {names.get(s, s): n for s, n in declared.items()}
    wanted = [split] if split else list(ctx.card_counts)
    loaded = {}
    for s in wanted:
        if s not in ctx.card_counts:
            add(CheckResult(f"files[{s}]", FAIL, {"missing": [s]},
                            f"split {s} is not in the export's card"))
            continue
        try:
            # hashes.shards above judged the shards (re-hashed): loading must not refuse them first
            loaded[s] = load(ctx.name, s, root=root, with_metadata=True, download=download,
                             trust_files=True)
        except Exception as e:  # a split that does not load is a finding
            add(load_failure(f"load[{s}]", e))
    ctx.loaded = loaded
    return loaded


def _registry_name(info, path) -> str:
    """The registry file name behind a local (maybe decompressed) copy."""
    from ..registry import strip_compression

    stem = strip_compression(Path(path).name)
    for n in info.file_names():
        if strip_compression(n) == stem:
            return n
    return Path(path).name


def _cache_files(info, loaded) -> dict:
    """{cached path: registry file} behind the loaded splits: each compressed file (or its
    archive) and each decompressed copy the loads use."""
    from ..cache.download import cache_path
    from ..registry import get_file
    from ..settings import cache_home

    files: dict = {}
    if info is None:
        return files
    for s in loaded:
        fsp = info.file_split(s)
        for fname in {fsp.images, fsp.labels, fsp.metadata} - {None}:
            try:
                remote = get_file(f"{info.group}/{fname}")
            except KeyError:
                continue
            packed = get_file(remote.archive) if remote.archive else remote
            if cache_path(remote).is_file():
                files[cache_path(remote)] = packed
            raw = cache_home() / remote.group / remote.raw_name
            if remote.raw_name != remote.name and raw.is_file():
                files[raw] = remote
    return files


def _cache_status(loaded) -> CheckResult:
    st = {}
    for ds in loaded.values():
        st.update(getattr(ds, "status", {}) or {})
    values = {"files": st}
    unpinned = [f for f, v in st.items() if v == "unpinned"]
    if not st:
        return CheckResult("hashes.cache", PASS, values, "files verified by the cache earlier")
    msg = ", ".join(f"{f}: {v}" for f, v in sorted(st.items()))
    if unpinned:
        return CheckResult("hashes.cache", WARN, values,
                           f"{len(unpinned)} files cannot be verified (no hash pinned): {msg}")
    return CheckResult("hashes.cache", PASS, values, "verified against the registry: " + msg)


def _writer_checks(ctx, loaded, metadata, add):
    metadata = dict(metadata or {})
    wid = {}
    for s in list(loaded) + [s for s in metadata if s not in loaded]:
        md = _as_metadata(metadata.get(s))
        ds = loaded.get(s)
        if md is None and ds is not None:
            md = getattr(ds, "metadata", None)
        if md is None:
            continue
        if s not in metadata and md.dtype.names and not {"writer", "writer_id"} & set(md.dtype.names):
            continue  # loaded metadata without writers (MNIST test: only the label votes)
        if ds is not None and len(md) > len(ds.labels):
            md = md[: len(ds.labels)]
        try:
            wid[s] = writers.writer_ids(md)
        except Exception as e:
            add(CheckResult(f"writers[{s}]", FAIL, {"error": type(e).__name__}, str(e)))
            continue
        if ds is not None and s in metadata:
            ml = writers.metadata_labels(md)
            if ml is not None:
                add(run_check(f"integrity.metadata[{s}]", integrity.check_metadata_labels,
                              ds.labels, ml))
        add(run_check(f"writers[{s}]", writers.check_writer_counts, wid[s], s))
    for a, b in CROSS_PAIRS:
        if a in wid and b in wid:
            expect = writers.expects_disjoint_writers(
                ctx.name, {"split_by": _split_by(ctx.manifest) or "random"})
            add(run_check(f"writers.{a}-{b}", writers.check_writers, wid[a], wid[b],
                          expect_disjoint=expect))


def _reference_checks(reference, loaded, add, download):
    from ..loaders import load, resolve_target

    if hasattr(reference, "images"):
        refs = {getattr(reference, "split", None) or next(iter(loaded), "split"): reference}
        rname = getattr(reference, "name", "reference")
        for s in loaded:
            ds = refs.get(s) or (reference if len(loaded) == 1 else None)
            if ds is not None:
                add(run_check(f"reference[{s}]", ref_mod.check_reference, loaded[s].images,
                              ds.images, loaded[s].labels, ds.labels, split=s,
                              reference_name=rname))
        return
    rname, rsplit, rroot = resolve_target(os.fspath(reference))
    from ..registry import get_dataset
    rinfo = get_dataset(rname)
    for s, ds in loaded.items():
        target_split = rsplit or s
        if target_split not in rinfo.splits:
            add(CheckResult(f"reference[{s}]", WARN, {"reference": rname},
                            f"{rname} has no split {target_split!r}; nothing to match"))
            continue
        try:
            r = load(rname, target_split, root=rroot, download=download, trust_files=True)
        except Exception as e:  # offline or not cached: unavailable (exit 3), not a failed check
            add(load_failure(f"reference[{s}]", e, f"cannot load the reference {rname}:{target_split}: {e}"))
            continue
        where = f"{rname}:{target_split}" + (f" ({rroot})" if rroot else "")
        add(run_check(f"reference[{s}]", ref_mod.check_reference, ds.images, r.images,
                      ds.labels, r.labels, split=s, reference_name=where))
