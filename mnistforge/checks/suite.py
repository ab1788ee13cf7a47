"""``verify(target)``: run every applicable check on a dataset and collect a report.

The checks are the rows of :data:`.rows.CHECKS`, run in order by :func:`~.table.run_checks`;
docs/verify.md's table of checks is generated from them.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..gate.source import resolve
from ..io.hf.repo import is_hf_repo, read_card
from ..io.hf.schema import hf_split_name
from ..io.types import StrPath
from ..loaders import resolve_target
from ..registry import get_dataset
from . import duplicates as dup
from .context import Context
from .femnist import is_leaf_folder, verify_leaf_folder
from .foreign import finish_report, foreign_target, identify_copy
from .report import write_report
from .rows import CHECKS
from .result import CheckResult, VerifyReport
from .table import run_checks


def _resolve(target: Any, split: str | None) -> tuple[str | None, str | dict[str, Any] | None, Path | None]:
    """-> (name, {split: loaded or None}, root)."""
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


def verify(target: Any, *, reference: Any = None, strict: bool = False, split: str | None = None,
           metadata: Mapping[str, Any] | None = None, near_threshold: float = dup.DEFAULT_NEAR_L2,
           download: bool | None = None, report_dir: StrPath | None = None, near: bool = True) -> VerifyReport:
    """Verify a dataset; return a :class:`~mnistforge.checks.result.VerifyReport`. ``target``: ``NAME``,
    ``NAME:SPLIT``, ``FOLDER``, ``FOLDER:SPLIT``, loaded splits (a ``DatasetSplit`` or a dict of them), or a
    third-party copy ``PATH[:SPLIT]`` (npz, npy, CSV, torchvision root, parquet snapshot, .mat), identified first
    (:mod:`.foreign`). ``reference``: match every verified split against the same split of this dataset (QMNIST-style
    statistics; ``NAME:SPLIT`` picks the reference split).  ``strict``: warnings count as failures
    (``report.exit_code``).  ``split``: only this split (as ``TARGET:SPLIT``). ``metadata``: extra metadata by split
    (array or idx path), e.g. the QMNIST extended labels for the official MNIST files; for a split of ``N`` images the
    first ``N`` rows are used. ``near_threshold``: L2 radius of the near-duplicate search (pixels 0..255); ``near``:
    run that search (the slowest check on large sets).  ``download``: let official files be fetched into the cache.
    ``report_dir``: also write the HTML report (:mod:`mnistforge.checks.report`). Usage: the package docstring,
    ``docs/verify.md``."""
    if isinstance(target, (str, os.PathLike)) and is_leaf_folder(target):
        return verify_leaf_folder(target, strict=strict)   # LEAF's JSON (checks/femnist.py)
    foreign = foreign_target(target, split)
    if foreign is not None:  # a third-party copy: say what it is first (checks/foreign.py)
        copy, splits, answers, ref = identify_copy(*foreign, reference=reference, download=download)
        rep = finish_report(verify(splits, reference=ref, strict=strict, metadata=metadata,
                                   download=download, near_threshold=near_threshold, near=near),
                            foreign[0], foreign[1], copy, answers)
        if report_dir is not None:
            write_report(rep, report_dir)
        return rep

    name, sp, root = _resolve(target, split)
    results: list[CheckResult] = []
    try:
        info = get_dataset(name) if name else None
    except KeyError:
        info = None
    ctx = Context(name, info, root, options=dict(reference=reference, metadata=metadata,
                                              near_threshold=near_threshold, download=download,
                                              near=near))
    label = os.fspath(target) if isinstance(target, (str, os.PathLike)) else \
        f"{name or 'arrays'} ({', '.join(sp) if isinstance(sp, dict) else ''})"
    report = VerifyReport(label, results, strict=strict, info={"dataset": name, "root": str(root) if root else None})
    if isinstance(sp, dict):
        ctx.kind, ctx.loaded = "arrays", sp
    else:
        ctx.split = sp
        declared = _hf_splits(root, name) if root is not None and name else None
        if declared is not None:
            _prepare_hf(ctx, declared, report)
        else:
            _prepare_files(ctx, report)
    run_checks(CHECKS, ctx, results.append)
    if report_dir is not None:
        write_report(report, report_dir)
    return report


def _prepare_files(ctx: Context, report: VerifyReport) -> None:
    """A folder (its files and manifest, as the gate resolves them) or the cache."""
    root = ctx.root
    if root is not None:
        source = resolve(root, ctx.entry)
        ctx.folder = source.folder
        ctx.manifest = source.manifest
        if ctx.manifest is None and ctx.folder is not None and ctx.folder != Path(root):
            ctx.manifest = source.manifest_of(Path(root))
            if ctx.manifest is not None:
                ctx.folder_manifest_root = Path(root)
        ctx.kind = "build" if ctx.is_build else "folder"
    report.info.update(folder=str(ctx.folder) if ctx.folder else None, build=ctx.is_build,
                       source="build folder" if ctx.is_build else ("folder" if root is not None else "cache"))
    # a target without a split is a registry dataset
    ctx.wanted = [ctx.split] if ctx.split else [s for s, sp in ctx.entry.splits.items() if not sp.is_view]


def _prepare_hf(ctx: Context, declared: dict[str, int], report: VerifyReport) -> None:
    """A Hugging Face export: the splits its card declares (rows per split)."""
    ctx.kind = "hf"
    report.info.update(folder=str(ctx.root), build=False, source="Hugging Face export")
    names = {hf_split_name(s): s for s in (ctx.info.splits if ctx.info is not None else [])}
    ctx.card_counts = {names.get(s, s): n for s, n in declared.items()}
    ctx.wanted = [ctx.split] if ctx.split else list(ctx.card_counts)


def _hf_splits(root: StrPath, name: str) -> dict[str, int] | None:
    """{split: rows declared by the card} when ``root`` is an export holding config ``name``."""
    if not is_hf_repo(root, name):
        return None
    for entry in read_card(root).get("dataset_info") or []:
        if entry.get("config_name") == name:
            return {str(s["name"]): int(s["num_examples"]) for s in entry.get("splits") or []}
    return {}
