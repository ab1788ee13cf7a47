"""The rows of ``verify``'s table of checks (:data:`CHECKS`, run by :func:`.table.run_checks`)
and the small functions that hand each check what it needs of the target.

``run(ctx, item)`` of a row gets the :class:`~.context.Context` and, by scope, nothing (target), a split name
(a split to load), a :class:`~.context.SplitItem` (a loaded split) or the (train, test) pair of loaded splits.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..cache.download import cache_path
from ..gate.source import locate
from ..io.hf.repo import recorded_shard_hashes, repo_configs, shard_problems
from ..io.idx import read_idx
from ..io.manifest import Manifest
from ..io.types import StrPath
from ..loaders import load, resolve_target
from ..loaders.core import load_as_read
from ..registry import DatasetInfo, RemoteFile, balanced_datasets, get_dataset, get_file, strip_compression
from ..settings import cache_home
from . import duplicates as dup
from . import hashes, integrity, reference as ref_mod, statistics, writers
from .context import CROSS_PAIRS, Context, SplitItem, class_range, expected_count
from .femnist import femnist_build_checks
from .identify import identification_check, row_map_check
from .label_issues import check_label_issues, has_votes
from .result import FAIL, INFO, PASS, WARN, CheckResult, load_failure, run_check
from .table import ALL, Check, kinds

logger = logging.getLogger(__name__)


#: an extra check of a build: ``(manifest, loaded splits, add)``
BuildCheck = Callable[[Manifest | None, dict[str, Any], Callable[[CheckResult], None]], None]
#: the extra checks a registry entry's ``build_checks`` names
BUILD_CHECKS: dict[str, BuildCheck] = {"leaf": femnist_build_checks}


def _split_files(info: DatasetInfo, split: str, folder: Path | None) -> dict[str, tuple[str, Path | None]]:
    """{role: path or None} of a file split in ``folder``."""
    fsp = info.file_split(split)
    out: dict[str, tuple[str, Path | None]] = {}
    for role in ("images", "labels", "metadata"):
        fname = getattr(fsp, role)
        if fname and (role == "images" or fname != fsp.images):
            if role == "metadata" and fname == fsp.labels:
                continue
            out[role] = (fname, locate(folder, fname) if folder is not None else None)
    return out


def _as_metadata(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return np.asarray(read_idx(value))
    return np.asarray(value)


def _folder_files(ctx: Context, s: str) -> list[CheckResult]:
    files = _split_files(ctx.entry, s, ctx.folder)
    present = {r: p for r, (f, p) in files.items() if p is not None}
    missing = [f for r, (f, p) in files.items() if p is None and r != "metadata"]
    if missing:
        ctx.skipped.add(s)
        if not present and ctx.split is None:
            logger.info("%s: split %s not present, skipped", ctx.name, s)
            return []
        return [CheckResult(f"files[{s}]", FAIL, {"missing": missing},
                            f"{len(missing)} files missing: {', '.join(missing)}")]
    ctx.used_files += list(present.values())
    return []


def _card_files(ctx: Context, s: str) -> list[CheckResult]:
    if s in ctx.card_counts:
        return []
    ctx.skipped.add(s)
    return [CheckResult(f"files[{s}]", FAIL, {"missing": [s]}, f"split {s} is not in the export's card")]


def _load_split(ctx: Context, s: str) -> list[CheckResult]:
    if s in ctx.skipped:
        return []
    try:
        # the hash checks judge the files (or shards); loading must not refuse them first
        assert ctx.name is not None, "a target read from files has a dataset name"
        ctx.loaded[s], reads = load_as_read(ctx.name, s, root=ctx.root, with_metadata=True,
                                            download=ctx.options["download"], trust_files=True)
        ctx.reads.update({Path(r.path): r for r in reads.values()})   # the parse check judges these
    except Exception as e:  # a file that does not load is a finding
        return [load_failure(f"load[{s}]", e)]
    return []


def _parse(ctx: Context, _: object) -> CheckResult:
    try:
        return integrity.check_parse(_uniq(ctx), contents=ctx.contents, reads=ctx.reads)
    finally:
        ctx.reads.clear()   # the hash checks keep what they need in ctx.contents


def _uniq(ctx: Context, _: object = None) -> list[Path]:
    return sorted(set(ctx.used_files))


def _manifest_hashes(ctx: Context, _: object) -> CheckResult:
    try:
        mroot = ctx.folder_manifest_root or ctx.folder or ctx.where
        rel = [Path(p).resolve().relative_to(Path(mroot).resolve()).as_posix() for p in _uniq(ctx)]
        # The whole build unless one split was asked for: an edit of
        # any output (even one the loader does not read) is a finding.
        return hashes.check_manifest(mroot, ctx.manifest, only=rel if ctx.split else None)
    finally:
        ctx.contents.clear()


def _registry_hashes(ctx: Context, _: object) -> CheckResult:
    try:
        files: dict[Path, RemoteFile] = {}
        for p in _uniq(ctx):
            try:
                files[p] = get_file(f"{ctx.entry.group}/{_registry_name(ctx.entry, p)}")
            except KeyError:
                pass
        return hashes.check_registry_files(files, contents=ctx.contents)
    finally:
        ctx.contents.clear()


def _cache_hashes(ctx: Context, _: object) -> CheckResult:
    # verify re-hashes what it verifies: a sidecar is what bit rot fools
    files = _cache_files(ctx.info, ctx.loaded)
    return hashes.check_registry_files(files, name="hashes.cache") if files else _cache_status(ctx.loaded)


def _size(ctx: Context, it: SplitItem) -> CheckResult:
    ds = it.ds
    want, source = expected_count(ctx, getattr(ds, "split", it.split) or it.split)
    if it.part and want is not None and len(ds.labels) != want:
        return CheckResult(f"integrity.size[{it.split}]", INFO,
                           {"found": len(ds.labels), "expected": want, "source": source},
                           f"{len(ds.labels)} images: official rows of a split of {want} "
                           "(row map)")
    return integrity.check_size(len(ds.labels), want, source=source)


def _balance(ctx: Context, it: SplitItem) -> CheckResult:
    want, _ = expected_count(ctx, it.split)
    per = want // it.n_cls if want and want % it.n_cls == 0 else None
    return integrity.check_balanced(it.ds.labels, per, it.n_cls, it.offset)


def _validation_balance(ctx: Context, _: object) -> CheckResult:
    try:
        assert ctx.name is not None, "a balanced dataset has a name"
        val = load(ctx.name, "validation", root=ctx.root, download=ctx.options["download"], trust_files=True)
        n_cls, offset = class_range(ctx, val)
        return run_check("integrity.balance[validation]", integrity.check_balanced, val.labels, None, n_cls, offset)
    except Exception as e:
        return load_failure("integrity.balance[validation]", e)


def _build_checks(ctx: Context, _: object) -> list[CheckResult]:
    out: list[CheckResult] = []
    for check in ctx.entry.build_checks:
        BUILD_CHECKS[check](ctx.manifest, ctx.loaded, out.append)
    return out


def _balanced(ctx: Context) -> bool:
    return ctx.name in balanced_datasets()


def _shard_hashes(ctx: Context, _: object) -> CheckResult:
    """A Hugging Face export's shards re-hashed against the export's record."""
    root = ctx.where
    assert ctx.name is not None, "an export is read for a named config"
    problems = shard_problems(root, {ctx.name: repo_configs(root).get(str(ctx.name), {})})
    if not recorded_shard_hashes(root):
        return CheckResult("hashes.shards", WARN, {"problems": []}, "the export recorded no shard "
                           "hashes (exported by an older mnistforge): shards not verified")
    return CheckResult("hashes.shards", FAIL if problems else PASS, {"problems": problems},
                       "; ".join(problems) if problems else "every shard has the sha256 the export recorded")


def _registry_name(info: DatasetInfo, path: StrPath) -> str:
    """The registry file name behind a local (maybe decompressed) copy."""
    stem = strip_compression(Path(path).name)
    for n in info.file_names():
        if strip_compression(n) == stem:
            return n
    return Path(path).name


def _cache_files(info: DatasetInfo | None, loaded: dict[str, Any]) -> dict[Path, RemoteFile]:
    """{cached path: registry file} behind the loaded splits: each compressed file (or its
    archive) and each decompressed copy the loads use."""
    files: dict[Path, RemoteFile] = {}
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


def _cache_status(loaded: dict[str, Any]) -> CheckResult:
    st: dict[str, str] = {}
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


def _writer_checks(ctx: Context, _: object) -> list[CheckResult]:
    loaded, out = ctx.loaded, list[CheckResult]()
    add = out.append
    metadata = dict(ctx.options["metadata"] or {})
    wid: dict[str, np.ndarray] = {}
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
                add(run_check(f"integrity.metadata[{s}]", integrity.check_metadata_labels, ds.labels, ml))
        add(run_check(f"writers[{s}]", writers.check_writer_counts, wid[s], s))
    for a, b in CROSS_PAIRS:
        if a in wid and b in wid:
            expect = writers.expects_disjoint_writers(
                ctx.name, {"split_by": (ctx.manifest.split_by if ctx.manifest is not None else None) or "random"})
            add(run_check(f"writers.{a}-{b}", writers.check_writers, wid[a], wid[b], expect_disjoint=expect))
    return out


def _reference_checks(ctx: Context, _: object) -> list[CheckResult]:
    reference, loaded, download = ctx.options["reference"], ctx.loaded, ctx.options["download"]
    out: list[CheckResult] = []
    add = out.append
    if hasattr(reference, "images"):
        refs = {getattr(reference, "split", None) or next(iter(loaded), "split"): reference}
        rname = getattr(reference, "name", "reference")
        for s in loaded:
            ds = refs.get(s) or (reference if len(loaded) == 1 else None)
            if ds is not None:
                add(run_check(f"reference[{s}]", ref_mod.check_reference, loaded[s].images, ds.images,
                              loaded[s].labels, ds.labels, split=s, reference_name=rname))
        return out
    rname, rsplit, rroot = resolve_target(os.fspath(reference))
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
    return out


# In report order; consecutive rows of one scope run split by split (every "split" row on
# train, then on test).  Rows of kind "copy" are added by a copy's identification
# (checks/foreign.finish_report) ahead of the others, and listed here for the docs.

_FILES = kinds("build", "folder")
_READ = kinds("build", "folder", "cache", "hf")   # everything but loaded arrays
_COPY = kinds("copy")

CHECKS: tuple[Check, ...] = (
    Check("identify[{split}]", "target", _COPY, lambda ctx, ident: identification_check(ident), "O(n) hashes",
          "a third-party copy is identical to a registry split, or the same content "
          "reordered (see above)",
          "transformed or unknown (warn); images or labels differ (fail)", many=True,
          function=identification_check),
    Check("row_map[{split}]", "target", _COPY, lambda ctx, ident: row_map_check(ident), "O(n) hashes",
          "the copy's rows map to official rows of one split (a subset)",
          "rows of several splits of one dataset: leakage (fail)",
          when_text="a copy whose rows were mapped", many=True, function=row_map_check),
    Check("hashes.shards", "target", kinds("hf"), _shard_hashes, "reads files",
          "every parquet shard has the sha256 the export recorded",
          "a shard edited, truncated or missing (fail); no hashes recorded (warn)"),
    Check("files[{split}]", "wanted", _FILES, _folder_files, "metadata only",
          "every file of the split is in the folder",
          "a file is missing (fail); a split with no file at all is skipped unless asked for",
          many=True),
    Check("files[{split}]", "wanted", kinds("hf"), _card_files, "metadata only",
          "the split is in the export's card", "a split asked for is not there (fail)",
          many=True),
    Check("load[{split}]", "wanted", _READ, _load_split, "inflates",
          "the loader reads the split", "the loader refuses it (fail, with its message)",
          many=True),
    Check("integrity.parse", "target", _FILES,
          _parse, "inflates",
          "every idx file parses fully (header, declared length, compression)",
          "truncated / corrupt file (fail)", when=lambda ctx, _: bool(ctx.used_files),
          function=integrity.check_parse),
    Check("hashes.manifest", "target", kinds("build"), _manifest_hashes, "reads files",
          "every output of the build manifest has its sha256 and size",
          "edited, truncated or deleted output (fail); idx file not in the manifest (warn)",
          function=hashes.check_manifest),
    Check("hashes.registry", "target", kinds("folder"), _registry_hashes, "reads files",
          "official files match the registry: the published bytes, or the decompressed content",
          "neither matches (fail); nothing pinned (warn, \"unverified\")",
          when=lambda ctx, _: bool(ctx.used_files),
          function=hashes.check_registry_files),
    Check("hashes.cache", "target", kinds("cache"), _cache_hashes, "reads files",
          "the cache's files re-hashed against the registry (exact / content / raw / archive)",
          "unpinned file (warn); a mismatch makes the load fail",
          when=lambda ctx, _: bool(ctx.loaded)),
    Check("integrity.images[{split}]", "split", ALL,
          lambda ctx, it: integrity.check_images(it.ds.images), "O(n) arrays",
          "uint8 N x 28 x 28", "another dtype or shape (fail)",
          function=integrity.check_images),
    Check("integrity.counts[{split}]", "split", ALL,
          lambda ctx, it: integrity.check_counts(it.ds.images, it.ds.labels,
                                                 metadata=it.metadata), "O(n) arrays",
          "images = labels (= metadata rows)", "otherwise (fail)",
          function=integrity.check_counts),
    Check("integrity.labels[{split}]", "split", ALL,
          lambda ctx, it: integrity.check_label_range(it.ds.labels, it.n_cls, it.offset),
          "O(n) arrays", "labels in the class range (EMNIST letters 1..26)",
          "a label out of range (fail)",
          function=integrity.check_label_range),
    Check("integrity.size[{split}]", "split", ALL, _size, "metadata only",
          "count equals the build manifest's, else the card's or the registry's",
          "one image short, or more (fail); a row-mapped subset is reported (info)",
          when=lambda ctx, it: ctx.kind != "arrays" or bool(ctx.name),
          when_text="arrays only when their dataset is known",
          function=integrity.check_size),
    Check("integrity.balance[{split}]", "split", ALL, _balance, "O(n) arrays",
          "every class exactly count / classes", "a flipped label breaks it (fail)",
          when=lambda ctx, it: _balanced(ctx) and not it.part,
          when_text="datasets the registry marks `balanced`",
          function=integrity.check_balanced),
    Check("integrity.metadata[{split}]", "split", ALL,
          lambda ctx, it: integrity.check_metadata_labels(it.ds.labels, it.metadata_labels),
          "O(n) arrays", "the label column of the metadata (QMNIST column 0) equals the labels",
          "disagreement (fail)",
          when=lambda ctx, it: it.metadata is not None and it.metadata_labels is not None,
          when_text="metadata with a label column",
          function=integrity.check_metadata_labels),
    Check("label_issues[{split}]", "split", ALL,
          lambda ctx, it: check_label_issues(it.ds.labels, it.metadata, it.split), "O(n) arrays",
          "**info**, never pass/warn/fail: the 15 known label errors of Northcutt et al. (2021), "
          "each with given and suggested label and the votes (`--json`); see "
          "[label-errors](label-errors.md)",
          "never (an `info` result ranks with `pass`, `--strict` included)",
          when=lambda ctx, it: has_votes(it.metadata),
          when_text="MNIST/QMNIST test with the study's votes",
          function=check_label_issues),
    Check("statistics[{split}]", "split", ALL,
          lambda ctx, it: statistics.check_statistics(it.ds.images, it.split, ctx.name,
                                                      stats=statistics.image_statistics(it.ds.images, it.moments)),
          "O(n) arrays", "frame style matches the dataset (MNIST/QMNIST: 20x20 box; EMNIST: "
          "fills the frame)", "style contradicts the dataset (fail); others reported only",
          function=statistics.check_statistics),
    Check("orientation[{split}]", "split", ALL,
          lambda ctx, it: statistics.check_orientation(it.ds.images, it.ds.labels,
                                                       getattr(it.ds, "classes", None),
                                                       it.split, ctx.name, moments=it.moments),
          "O(n) arrays", "characters upright", "transposed (fail); undecided (warn)",
          function=statistics.check_orientation),
    Check("duplicates.within[{split}]", "split", ALL,
          lambda ctx, it: dup.check_exact_within(it.ds.images, it.split, digests=ctx.digests(it.ds)),
          "O(n) hashes",
          "no byte-identical images", "groups of identical images (warn, with examples)",
          function=dup.check_exact_within),
    Check("integrity.balance[validation]", "target", _READ, _validation_balance,
          "loads more data", "the validation part of a balanced EMNIST set: every class the "
          "same count", "a class differs (fail)",
          when=lambda ctx, _: _balanced(ctx) and "train" in ctx.loaded
          and "validation" in getattr(ctx.info, "splits", {}),
          when_text="datasets the registry marks `balanced` with a validation split, train "
                    "verified",
          function=integrity.check_balanced),
    Check("duplicates.{pair}", "pair", ALL,
          lambda ctx, p: dup.check_exact_across(p[0].images, p[1].images, digests_train=ctx.digests(p[0]),
                                                digests_test=ctx.digests(p[1])), "O(n) hashes",
          "no test image is byte-identical to a training image",
          "leakage (fail, with index pairs)",
          function=dup.check_exact_across),
    Check("duplicates.near[{pair}]", "pair", ALL,
          lambda ctx, p: dup.check_near_across(p[0].images, p[1].images,
                                               ctx.options["near_threshold"]),
          "O(n^2) near-duplicates", "no test image within L2 128 of a training image",
          "near copies (warn, counts and closest examples)",
          when=lambda ctx, _: ctx.options["near"], option="off with `--no-near`",
          function=dup.check_near_across),
    Check("writers[{split}], writers.{pair}", "target", ALL, _writer_checks, "O(n) arrays",
          "writers counted; none shared where the dataset keeps them apart; a `--metadata` "
          "file's label column equals the labels (`integrity.metadata[split]`)",
          "MNIST/QMNIST/writer-disjoint EMNIST sharing a writer (fail); official-style EMNIST "
          "sharing writers (warn, with the count)", when_text="metadata with writers",
          option="more with `--metadata SPLIT=FILE`", many=True),
    Check("femnist.*", "target", _READ, _build_checks, "O(n) hashes",
          "the extra checks a registry entry's `build_checks` names (FEMNIST's `leaf`: writers, "
          "classes, LEAF parameters; docs/femnist.md)", "see docs/femnist.md",
          when=lambda ctx, _: ctx.info is not None,
          when_text="an entry with `build_checks`", many=True),
    Check("reference[{split}]", "target", ALL, _reference_checks, "loads more data",
          "every image paired, same labels, all pairs within L2 128 after the best shift",
          "different labels, reference images without counterpart (fail); far pairs (warn)",
          when=lambda ctx, _: ctx.options["reference"] is not None,
          option="on with `--reference`", many=True,
          function=ref_mod.check_reference),
)
