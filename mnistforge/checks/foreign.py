"""``verify`` on a third-party copy: first say what it is, then the usual checks run on it.

Every split of the copy (``verify("mnist.npz")``, ``verify("root/")``...) is made canonical,
identified (:mod:`.identify`) and loaded as a :class:`~mnistforge.loaders.DatasetSplit` with the
changes undone (:func:`identify_copy`); :func:`mnistforge.checks.verify` checks those and
:func:`finish_report` puts the answers first: one ``identify[<split>]`` result per split, and
the same answers as fields in ``report.info["identification"]`` (what ``verify --json`` writes).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..io.foreign import ForeignCopy, read_foreign
from ..io.types import StrPath
from ..loaders import load, resolve_target
from ..loaders.foreign import canonicalise, foreign_source, make_split
from ..loaders.rowmap import Official, join_metadata, official_metadata, official_splits
from ..loaders.split import DatasetSplit
from ..loaders.targets import parse_target_text
from ..registry import get_dataset, list_datasets, torchvision_folders
from .identify import Identification, _official_storage, identification_check, identify, row_map_check
from .result import VerifyReport

logger = logging.getLogger(__name__)

#: a reference as :func:`.identify.identify` takes it: ``(images as the official files store
#: them, labels, dataset, split, where)``; the split is what a given object says (Any)
RefArrays = tuple[np.ndarray, np.ndarray, str, Any, str]

__all__ = ["finish_report", "foreign_target", "identify_copy"]


def foreign_target(target: Any, split: str | None = None) -> tuple[Path, str | None] | None:
    """``(path, split)`` when ``target`` (``PATH`` or ``PATH:SPLIT``) is a third-party copy, else None."""
    if not isinstance(target, (str, os.PathLike)):
        return None
    # PATH, PATH:SPLIT, or PATH:NAME:SPLIT for a copy of several datasets; a file counts
    found = parse_target_text(target).path_prefix(os.path.exists)
    if found is None:
        return None
    head, rest = found
    return (Path(head), ":".join(rest) or split) if foreign_source(head) else None


def _reference_arrays(reference: Any, split: str | None, download: bool | None) -> RefArrays | None:
    """``(images as the official files store them, labels, dataset, split)`` of a reference, or None."""
    if reference is None:
        return None

    if hasattr(reference, "images"):
        return (_official_storage(reference), np.asarray(reference.labels), getattr(reference, "name", "reference"),
                getattr(reference, "split", split), getattr(reference, "source", "given arrays"))
    text = os.fspath(reference)
    ft = foreign_target(text, split)
    if ft is not None:
        # None: the copy's only split (load_foreign takes it; load()'s annotation says str)
        ds = load(ft[0], ft[1] or split)  # type: ignore[arg-type]
    else:
        rname, rsplit, rroot = resolve_target(text)
        ds = load(rname, rsplit or split or "test", root=rroot, download=download)
    return _official_storage(ds), np.asarray(ds.labels), ds.name, ds.split, text


def _pick(copy: ForeignCopy, split: str | None) -> list[str]:
    name, _, only = (split or "").rpartition(":")
    keys = [k for k, s in copy.splits.items() if split is None or k == split or s.split == split
            or (name and s.hint == name and s.split == only)]
    if not keys:
        copy.split(split)  # raises, naming the splits there are
    return keys


def identify_copy(path: StrPath, split: str | None = None, *, reference: Any = None, download: bool | None = None,
                  search_cache: bool = True) -> tuple[ForeignCopy, dict[str, DatasetSplit], list[Identification], Any]:
    """Identify every split of the copy at ``path``. Returns ``(copy, loaded, answers, suite_reference)``: the splits
    made canonical with the changes undone (by split name, ready for :func:`mnistforge.checks.verify`), one
    :class:`Identification` each, and the reference to pass on to the QMNIST-style checks (a NAME/FOLDER reference; a
    copy given as reference was compared here)."""
    copy = read_foreign(path, torchvision_classes=torchvision_folders())
    idents: list[Identification] = []
    loaded: dict[str, DatasetSplit] = {}
    for key in _pick(copy, split):
        fs = copy.splits[key]
        c = canonicalise(fs)
        try:
            ref = _reference_arrays(reference, fs.split, download)
        except Exception as e:  # a reference that does not load: said, then identify without it
            logger.warning("reference %s not usable: %s", reference, e)
            ref = None
        ident = identify(c, reference=ref, key=key, name=fs.hint if fs.hint in list_datasets() else None,
                         search_cache=search_cache,
                         officials=_officials(reference, ref, search_cache, c.images.shape[1:3]))
        ident.format = copy.format
        idents.append(ident)
        info = get_dataset(ident.dataset) if ident.dataset in list_datasets() else None
        kinds = {ch.kind for ch in ident.changes}
        shift = next((int(k[len("labels"):]) for k in kinds if k.startswith("labels")), 0)
        ds = make_split(copy, c, info, "transposed" in kinds, shift, ident.changes,
                        with_metadata=True, split=fs.split or key)
        if ident.row_map is not None and info is not None and ident.row_map.dataset == info.name:
            ds.row_map = ident.row_map
            _official_metadata(ds, download)
        name = key if (fs.split or key) in loaded else (fs.split or key)
        loaded[name] = ds
    suite_ref = reference if reference is not None and (
        hasattr(reference, "images") or foreign_target(reference) is None) else None
    return copy, loaded, idents, suite_ref


def _officials(reference: Any, ref: RefArrays | None, search_cache: bool,
               shape: tuple[int, ...]) -> Callable[[str | None], list[Official]]:
    """``dataset -> [Official]``: the reference's splits (every file split of a NAME or FOLDER
    reference), then the cache's official splits (``search_cache``), to map a copy's rows to."""
    def get(dataset: str | None) -> list[Official]:
        got: list[Official] = []
        if ref is not None:
            rimg, rlab, rname, rsplit, *where = ref
            got.append(Official(rname, rsplit, np.asarray(rimg), np.asarray(rlab), where[0] if where else "reference"))
            if reference is not None and not hasattr(reference, "images") \
                    and foreign_target(reference) is None and rname in list_datasets():
                _, _, rroot = resolve_target(os.fspath(reference))
                got += official_splits([rname], loader=load, root=rroot, image_shape=tuple(shape))
        if search_cache:
            got += official_splits([dataset] if dataset else None, loader=load, image_shape=tuple(shape))
        seen: set[tuple[str, str]] = set()
        out: list[Official] = []
        for o in got:  # the reference's first: one entry per official split
            if (o.dataset, o.split) not in seen:
                seen.add((o.dataset, o.split))
                out.append(o)
        return out
    return get


def _official_metadata(ds: DatasetSplit, download: bool | None) -> None:
    """The official metadata (label votes...) of a mapped copy's rows, when at hand."""
    try:
        assert ds.row_map is not None, "called for a mapped copy"
        ds.metadata = join_metadata(ds.metadata, official_metadata(ds, ds.row_map, loader=load, download=download))
    except Exception as e:  # information only: verify goes on without it
        logger.info("official metadata of %s not joined: %s", ds.source, e)


def finish_report(report: VerifyReport, path: StrPath, split: str | None, copy: ForeignCopy,
                  idents: list[Identification]) -> VerifyReport:
    """Put the answers first in ``report`` (``identify[<split>]``, then ``row_map[<split>]`` where
    a copy's rows were mapped) and in ``info["identification"]``."""
    report.target = os.fspath(path) + (f":{split}" if split else "")
    maps = [r for r in (row_map_check(i) for i in idents) if r is not None]
    report.results[:0] = [identification_check(i) for i in idents] + maps
    report.info.update(format=copy.format, path=os.fspath(path), notes=list(copy.notes),
                       identification=[i.to_dict() for i in idents])
    return report
