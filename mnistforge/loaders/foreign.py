"""Third-party copies as a source for ``load`` (:func:`load_foreign`): :func:`canonicalise` turns
a split as its maker stored it into ``uint8 N x 28 x 28`` images and integer labels and *says*
what it undid: lossless ``storage`` facts and departures from the official bytes (``changes``:
float scaling, inversion and, once the dataset is known, a transposition, a label offset).

>>> from mnistforge.io.foreign import ForeignSplit
>>> x = np.zeros((4, 784), np.float32); x[:, :20] = 1.0
>>> c = canonicalise(ForeignSplit("test", x, np.arange(4), "demo"))
>>> c.images.shape, c.images.dtype.name, int(c.images.max()), [ch.kind for ch in c.changes]
((4, 28, 28), 'uint8', 255, ['float01'])
>>> c.storage
['rows flattened to 784 columns (reshaped to 28 x 28)']
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, FormatError, PathArg
from ..gate import admit
from ..gate.content import Match, Verdict, judge, registry_match
from ..gate.formed import pixel_range, require_images, require_labels
from ..io.foreign import ForeignCopy, ForeignSplit, read_foreign
from ..io.hf.schema import field_name
from ..log import get_logger
from ..registry import DatasetInfo, get_dataset, list_datasets, torchvision_folders
from .label_issues import add_label_votes, check_mode, clean_view
from .names import parse_split, rows_of
from .rowmap import Loader, copy_map, identity_map, join_metadata, official_metadata, row_facts
from .split import Change, DatasetSplit, RowMap
from .targets import foreign_source  # noqa: F401 - part of this API (in .targets: a load asks it first)

logger = get_logger(__name__)

#: a copy's format -> the gate's route (:data:`mnistforge.gate.POLICY`) where the names differ (a
#: format without a rule is refused by the gate)
_ROUTES = {"idx": "idx-copy"}

__all__ = ["Canonical", "Change", "Match", "canonicalise", "label_shift_cue", "load_foreign",
           "registry_match", "shift_change", "transpose_change", "foreign_source", "make_split", "pick_split"]


@dataclass
class Canonical:
    """One split made canonical: ``uint8 N x 28 x 28`` images and ``int64`` labels as the copy has them."""

    split: str | None
    images: np.ndarray
    labels: np.ndarray
    where: str
    storage: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    metadata: dict[str, np.ndarray] = field(default_factory=dict)
    hint: str | None = None

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def _images(x: np.ndarray, where: str, storage: list[str], changes: list[Change]) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 4 and 1 in (x.shape[1], x.shape[3]):
        axis = 1 if x.shape[1] == 1 else 3
        storage.append(f"a channel axis ({'N x 1 x H x W' if axis == 1 else 'N x H x W x 1'}, dropped)")
        x = x.reshape(x.shape[0], x.shape[2 if axis == 1 else 1], -1)
    if x.ndim == 2:
        side = int(round(np.sqrt(x.shape[1])))
        if side * side != x.shape[1]:
            raise FormatError("image rows are not square", path=where,
                              expected="N x 784 (28 x 28) pixel columns", found=f"N x {x.shape[1]}")
        storage.append(f"rows flattened to {x.shape[1]} columns (reshaped to {side} x {side})")
        x = x.reshape(x.shape[0], side, side)
    if x.ndim != 3:
        raise FormatError("images of the wrong shape", path=where,
                          expected="N x 784, N x H x W or N x H x W x 1", found=str(x.shape))
    if x.dtype.kind == "f":
        hi = float(np.nanmax(x)) if x.size else 0.0
        if not np.isfinite(x).all() or float(np.min(x)) < 0 or hi > 255:
            raise FormatError("float images out of range", path=where, expected="values in [0, 1] or [0, 255]",
                              found=f"[{float(np.nanmin(x)):g}, {hi:g}]")
        unit = hi <= 1.0   # [0, 1]: x 255
        y = np.asarray(x, np.float64) * (255.0 if unit else 1.0)
        r = np.rint(y)
        desc = f"images stored as {x.dtype.name} in " + (
            "[0, 1] (x 255 and rounding give the bytes back)" if unit else "[0, 255] (rounded to bytes)")
        if not np.all(np.abs(y - r) < 1e-3):
            desc += "; not every value is a whole byte: rounded (lossy)"
        changes.append(Change("float01" if unit else "float255", desc))
        x = r.astype(np.uint8)
    elif x.dtype != np.uint8:
        pixel_range(x, where)   # whole bytes in another integer type
        storage.append(f"pixels stored as {x.dtype.name} (whole bytes, kept exact)")
        x = x.astype(np.uint8)
    x = np.ascontiguousarray(x)
    if x.size and _looks_inverted(x):
        changes.append(Change("inverted", "intensities inverted (background white, ink dark): "
                                          "255 - x gives the official bytes"))
        x = 255 - x
    return x


def _looks_inverted(x: np.ndarray) -> bool:
    """The frame of MNIST-family images is background (0); a bright frame means inverted."""
    sample = x[:: max(1, len(x) // 2000)]
    frame = np.concatenate([sample[:, 0, :], sample[:, -1, :], sample[:, :, 0], sample[:, :, -1]], axis=1)
    return float(np.median(frame)) > 127


def _labels(y: np.ndarray, n: int, where: str, storage: list[str], meta: dict[str, np.ndarray]) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    elif y.ndim == 2:
        if set(np.unique(y).tolist()) <= {0, 1} and bool((y.sum(axis=1) == 1).all()):
            storage.append(f"labels one-hot over {y.shape[1]} columns (argmax taken)")
            y = y.argmax(axis=1)
        else:
            storage.append(f"a label table of {y.shape[1]} columns (column 0 is the label; "
                           "the others kept as metadata)")
            for i in range(1, y.shape[1]):
                meta[f"col{i}"] = y[:, i]
            y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != n:
        raise FormatError("labels do not match the images", path=where, expected=f"{n} labels", found=str(y.shape))
    if y.dtype.kind == "f":
        if not np.array_equal(y, np.rint(y)):
            raise FormatError("non-integer labels", path=where, expected="whole numbers",
                              found=f"e.g. {y[np.flatnonzero(y != np.rint(y))[0]]}")
        storage.append(f"labels stored as {y.dtype.name}")
    elif y.dtype.kind not in "iub":
        raise FormatError("labels are not numbers", path=where, expected="integer labels", found=y.dtype.name)
    return y.astype(np.int64)


def canonicalise(fs: ForeignSplit) -> Canonical:
    """Canonical images and labels of one split as stored, with what was undone."""
    storage: list[str] = []
    changes: list[Change] = []
    meta = {k: np.asarray(v) for k, v in fs.metadata.items()}
    images = _images(fs.images, fs.where, storage, changes)
    labels = _labels(fs.labels, images.shape[0], fs.where, storage, meta)
    return Canonical(fs.split, images, labels, fs.where, storage, changes, meta, fs.hint)


# --------------------------------------------------------------------------- the registry

def transpose_change() -> Change:
    return Change("transposed", "images stored transposed relative to the official files "
                                "(rows and columns swapped)")


def shift_change(shift: int, labels: np.ndarray) -> Change:
    lo, hi = (int(labels.min()), int(labels.max())) if labels.size else (0, 0)
    return Change(f"labels{shift:+d}", f"labels offset by {-shift:+d}: stored {lo}..{hi}, official "
                                       f"{lo + shift}..{hi + shift}")


def label_shift_cue(labels: np.ndarray, info: DatasetInfo) -> int:
    """The offset (-1, 0, +1) that puts the labels in ``info``'s range (letters 0..25 -> +1); 0: none fits."""
    if not labels.size or not info.classes:
        return 0
    lo, hi = int(labels.min()), int(labels.max())
    first, last = int(info.label_offset), len(info.classes) - 1
    if first <= lo and hi <= last:
        return 0
    if first - 1 <= lo and hi <= last - 1:
        return 1
    return -1 if first + 1 <= lo and hi <= last + 1 else 0


# --------------------------------------------------------------------------- load

def _adhoc_info(name: str, labels: np.ndarray, path: PathArg) -> DatasetInfo:
    top = int(labels.max()) if labels.size else 0
    return DatasetInfo(name=name, group=name, title=name, kind="dataset",
                       description=f"third-party copy {path}", homepage="", licence="unknown",
                       citation="", classes=tuple(str(i) for i in range(top + 1)))


def _structured(meta: dict[str, np.ndarray], n: int, info: DatasetInfo) -> np.ndarray | None:
    """A copy's columns of ``n`` rows, named as the dataset names them (``writer_id``: ``writer``)."""
    cols = {field_name(k, info.metadata_fields): np.asarray(v).reshape(-1) for k, v in meta.items()
            if np.asarray(v).size == n}
    if not cols:
        return None
    out = np.empty(n, dtype=[(k, np.int64 if v.dtype.kind in "iub" else v.dtype) for k, v in cols.items()])
    for k, v in cols.items():
        out[k] = v
    return out


def pick_split(copy: ForeignCopy, name: str | None, split: str | None) -> ForeignSplit:
    """The split of ``copy`` asked for (``<dataset hint>:<split>`` in a copy of several)."""
    if name and split and f"{name}:{split}" in copy.splits:
        return copy.splits[f"{name}:{split}"]
    if name:
        mine = {k: s for k, s in copy.splits.items() if s.hint in (None, name)}
        if mine and len(mine) < len(copy.splits):
            copy = ForeignCopy(copy.format, copy.path, mine, copy.notes, copy.hint)
    return copy.split(split)


def load_foreign(path: PathArg, name: str | None = None, split: str | None = "train", *,
                 with_metadata: bool = False, trust: bool = False,
                 label_issues: str | None = None, cache: PathArg | None = None, download: bool | None = None,
                 progress: bool | None = None, check: bool = False, loader: Loader | None = None) -> DatasetSplit:
    """``load(name, split, root=COPY)`` / ``load(COPY, split)`` on a third-party copy: the dataset
    is ``name`` (checked by the trust gate unless ``trust``), else what the hashes recognise, else
    the copy's name hint the content does not contradict.  A copy not in the official order gets a
    row map (:mod:`mnistforge.loaders.rowmap`) read with ``loader`` (:func:`mnistforge.load`)."""
    rows = None
    if split is not None:
        split, rows = parse_split(split)  # test[:100] as for the official files
    if label_issues is not None:
        check_mode(label_issues)
    before = os.stat(path) if os.path.isfile(path) else None  # a copy in one file: recordable
    copy = read_foreign(path, torchvision_classes=torchvision_folders())
    fs = pick_split(copy, name, split)
    c = canonicalise(fs)
    split_claim = split if split is not None else fs.split
    maps: dict[str | None, RowMap | None] = {}

    def mapped(dataset: str | None) -> RowMap | None:
        if dataset not in maps:
            maps[dataset] = copy_map(c.images, c.labels, dataset=dataset, claimed=split_claim,
                                     cache=cache, loader=loader)
        return maps.get(dataset)

    adm = admit(c.images, c.labels, dataset=name, split=split_claim, route=_ROUTES.get(copy.format, copy.format),
                where=fs.where, trust=trust, formed=False, source=path if before else None,
                before=before, key=fs.where, cache=cache, rehash=check,
                rows=(lambda: row_facts(mapped(name))) if name else None)
    match = adm.verdict.match
    verdict = adm.verdict
    if name is None and match is not None and (match.images and match.labels):
        name = match.dataset
        # a split asked for by name that the rows are not (the test set as `train`): leakage,
        # refused as the named load refuses it
        judge(c, name, split_claim, where=fs.where, match=match, hashes=adm.hashes, trust=trust)
    if name is None and fs.hint in list_datasets():
        # a name the file names suggest: kept unless the registry pins that dataset's content
        hinted = judge(c, fs.hint, split_claim, where=fs.where, match=match, hashes=adm.hashes,
                       refuse=False, rows=lambda: row_facts(mapped(fs.hint)))
        name = fs.hint if hinted.status != "refused" else None
        verdict = hinted if name else verdict
        if name is None:
            logger.warning("%s: named like %s, but its content is not %s's (loaded unnamed)",
                           fs.where, fs.hint, fs.hint)
    if name is None and match is None:  # unrecognised and unnamed: its rows may say what it is
        facts = row_facts(mapped(None))
        if facts is not None and facts.dataset and 2 * facts.mapped >= facts.rows:
            name = facts.dataset
            maps[name] = maps[None]
    rm = None
    if match is not None and match.images and match.labels and match.order == "same" \
            and match.dataset == name:
        rm = identity_map(name, match.split, len(c))
    elif name is not None or None in maps:
        rm = mapped(name)
    info = get_dataset(name) if name else None
    if match is not None and info is not None and match.dataset == info.name:
        transposed, shift = match.transposed and match.images, match.shift if match.labels else 0
    elif rm is not None and info is not None and rm.dataset == info.name and rm.mapped.any():
        transposed, shift = rm.transposed, rm.shift
    else:
        transposed, shift = False, label_shift_cue(c.labels, info) if info else 0
    changes = list(c.changes) + ([transpose_change()] if transposed else []) + (
        [shift_change(shift, c.labels)] if shift else [])
    for ch in changes:
        logger.warning("%s: %s (undone)", fs.where, ch.description)
    ds = make_split(copy, c, info, transposed, shift, changes, with_metadata=with_metadata, split=fs.split or split)
    if info is not None:  # well formed for the dataset it is said to be
        require_images(ds.images, info, fs.where)
        require_labels(info, ds.split, ds.labels, ds.classes, fs.where)
    ds.status = {"content": verdict.status}
    ds.row_map = rm
    if rm is not None:
        _say_map(fs.where, rm)
    if label_issues is not None or (with_metadata and rm is not None and not verdict.official_order):
        ds = _official_rows(ds, verdict, label_issues, cache=cache, download=download, progress=progress, loader=loader)
    if rows is not None:
        ds = ds.select(rows_of(rows, len(ds)), split=f"{ds.split}{rows.replace(' ', '')}")
    if label_issues is not None:
        ds = clean_view(ds, label_issues, with_metadata)
    return ds


def _say_map(where: str, rm: RowMap) -> None:
    """Leakage and rows that map to nothing, said (the map itself is ``ds.row_map``)."""
    s = rm.summary()
    if s["leakage"]["rows"]:
        lk = s["leakage"]
        logger.warning("%s: leakage: %d rows of this %s split are official rows of %s (rows "
                       "%s...; ds.leakage lists them)", where, lk["rows"], lk["claimed"],
                       ", ".join(f"{sp} ({n})" for sp, n in lk["by_split"].items()),
                       ", ".join(map(str, lk["first_rows"])))
    if s["mapped"] < s["rows"] and s["dataset"]:
        logger.warning("%s: %s", where, rm.message())


def _official_rows(ds: DatasetSplit, v: Verdict, label_issues: str | None, *, loader: Loader | None = None,
                   **kw: Any) -> DatasetSplit:
    """The votes and official metadata of the rows (official order, or by the row map); else refused."""
    rm = ds.row_map
    official = (v.official_order and v.match is not None and v.match.dataset == ds.name
                and v.match.split == ds.split) or (
        rm is not None and rm.official_order and rm.keys == ((ds.name, ds.split),))
    if official:  # row i is official row i: the votes join directly (metadata: the copy's own)
        return ds if label_issues is None else add_label_votes(ds, root=None, required=True, **kw)
    if rm is not None and rm.dataset == ds.name and rm.mapped.any() and loader is not None:
        kw.pop("progress", None)
        try:
            meta = official_metadata(ds, rm, loader=loader, required=label_issues is not None, **kw)
        except Exception as e:  # the official metadata cannot be had: a view cannot be made
            if label_issues is not None:
                raise
            logger.warning("%s: official metadata left out: %s", ds.source, e)
            return ds
        ds.metadata = join_metadata(ds.metadata, meta)
        return ds
    if label_issues is None:
        return ds
    raise ConfigError(
        f"label_issues={label_issues!r} needs the official split in the official order, or its "
        "official images on this machine to map the rows",
        path=ds.source, expected=f"{ds.name} {ds.split} as published (row i = official row i), "
                                 "or a copy whose rows map to official rows",
        found=f"content {v.status}" + (f" ({v.match.dataset} {v.match.split}, order "
                                       f"{v.match.order})" if v.match is not None else "")
        + ("; no official images in the cache to map its rows to" if rm is None else ""),
        hint="fetch the official files (mnistforge fetch NAME) so the copy's rows can be mapped, "
             "or load the official files (mnistforge.load(name, split))")


def make_split(copy: ForeignCopy, c: Canonical, info: DatasetInfo | None, transposed: bool,
               shift: int, changes: list[Change], *, with_metadata: bool = False,
               split: str | None = None) -> DatasetSplit:
    """The :class:`DatasetSplit` of a canonical split once orientation and label offset are decided."""
    labels = c.labels + shift
    if info is None:
        info = _adhoc_info(c.hint or "foreign", labels, copy.path)
    # upright: undo the copy's own transposition, then the official files' (EMNIST's)
    stored_transposed = transposed != (info.orientation == "transposed")
    images = c.images.transpose(0, 2, 1) if stored_transposed else c.images
    ds = DatasetSplit(info.name, split or c.split or "data", images, labels, info,
                      _structured(c.metadata, len(labels), info) if with_metadata else None,
                      f"{copy.format} {c.where}", {}, "transposed" if stored_transposed else "upright")
    ds.changes = list(changes)
    ds.storage = list(c.storage)
    return ds

