"""torchvision's layout: ``<root>/<Class>/raw/`` with the decompressed idx files its classes read.

:func:`write_torchvision` writes it from any loadable source, each split loaded through
:func:`mnistforge.load` (so the trust gate checks it) and written in the official files' storage,
atomically.  Class, folder and file names come from the registry's ``torchvision`` entries; each ``raw/`` folder gets a
``manifest.json`` (so ``load`` checks the files against it), and the root one listing every file.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import ConfigError, IntegrityError
from ..io.atomic import atomic_dir
from ..io.hf.repo import is_hf_repo, repo_configs
from ..io.idx import write_idx
from ..io.manifest import DatasetEntry, Manifest, MANIFEST_NAME, recorded_folder_problems
from ..loaders import DatasetSplit, datasets_in_folder, load, resolve_target
from ..gate.source import resolve
from ..loaders.origins import FolderOrigin
from ..log import get_logger
from ..registry import DatasetInfo, TorchvisionInfo, get_dataset, get_file, torchvision_datasets

logger = get_logger(__name__)

__all__ = ["TorchvisionSource", "TorchvisionLayout", "sources_from_targets", "write_torchvision", "torchvision_of"]

#: statuses of a loaded file that mean "the official release" (see mnistforge.cache.verify)
OFFICIAL_STATUSES = frozenset({"exact", "content", "raw", "derived", "archive"})


@dataclass
class TorchvisionSource:
    """One dataset to write: its registry name, where it loads from (None: the cache) and the
    file splits (``train``, ``test``, ``nist``)."""

    name: str
    root: Path | None
    splits: list[str]
    #: how the manifest names ``root`` when it is a temporary folder (a build's staging)
    shown: str | None = None


@dataclass
class TorchvisionLayout:
    """What :func:`write_torchvision` wrote: ``datasets[name]`` = ``{"class", "folder", "splits":
    {split: rows}, "files": {file: {"sha256", "bytes", "official"}}}``; ``notes`` for the reader,
    ``warnings`` (also logged): what torchvision will not read as it is."""

    root: Path
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "datasets": self.datasets, "notes": list(self.notes),
                "warnings": list(self.warnings)}


def torchvision_of(name: str) -> tuple[DatasetInfo, TorchvisionInfo]:
    """The registry entry of ``name`` and how torchvision reads it (ConfigError when it does not)."""
    info = get_dataset(name)
    if info.torchvision is None:
        raise ConfigError(f"torchvision has no dataset class for {name}",
                          expected="one of " + ", ".join(torchvision_datasets()), found=name)
    return info, info.torchvision


def _folder_datasets(folder: str | os.PathLike[str]) -> list[str]:
    """The datasets of a folder: a build's or official files', or a Hugging Face export's configs
    named after registry datasets."""
    if is_hf_repo(folder):
        return [n for n in repo_configs(folder) if n in torchvision_datasets()]
    return datasets_in_folder(folder) or [resolve_target(folder)[0]]


def _present(name: str, root: Path) -> list[str]:
    """The file splits torchvision reads whose images are in the folder ``root`` (or a sibling
    build folder, as a load finds them; the splits of an export's config)."""
    info, tv = torchvision_of(name)
    if is_hf_repo(root, name):
        return [s for s in repo_configs(root).get(name, {}) if s in tv.files]
    try:
        origin = FolderOrigin(info, root)
    except FileNotFoundError:
        return []
    return [s for s in tv.files if origin.path_of(info.split(s).images or "") is not None]


def _file_split(name: str, split: str, text: str) -> str:
    info, tv = torchvision_of(name)
    if "[" in split:
        raise ConfigError("torchvision reads whole files: a slice cannot be written", found=text,
                          expected=f"one of {', '.join(tv.files)} (or no split)")
    if split not in tv.files:
        sp = info.split(split)
        hint = (f"torchvision reads {split} from the {sp.of} files: write {name}:{sp.of}"
                if sp.of in tv.files else None)
        raise ConfigError(f"torchvision's {tv.cls} reads no {split!r} files of its own", found=text,
                          expected=f"one of {', '.join(tv.files)}", hint=hint)
    return split


def sources_from_targets(targets: Iterable[str | os.PathLike[str]]) -> list[TorchvisionSource]:
    """CLI targets (``NAME[:SPLIT]``, ``FOLDER[:NAME][:SPLIT]``) -> the datasets to write. Without a split: a registry
    name gives ``train`` and ``test`` (what torchvision's ``train=True/False`` selects; qmnist's 402,953-image ``nist``
    only when asked for), a folder every split whose files it holds. A folder holding several datasets (``build all``,
    an EMNIST build) gives each."""
    merged: dict[tuple[str, str], TorchvisionSource] = {}
    for text in targets:
        text = os.fspath(text)
        picks: list[tuple[str, str | None, Path | None]]
        if os.path.isdir(text):
            picks = [(n, None, Path(text)) for n in _folder_datasets(text)]
        else:
            name, split, root = resolve_target(text)
            picks = [(name, split, root)]
        for name, split, root in picks:
            _, tv = torchvision_of(name)
            if split is not None:
                splits = [_file_split(name, split, text)]
            elif root is None:
                splits = [s for s in ("train", "test") if s in tv.files]
            else:
                splits = _present(name, root)
                if not splits:
                    raise ConfigError(f"no {name} split torchvision reads is in {root}", path=root,
                                      expected=f"the images of {', '.join(tv.files)}", found="none")
            key = (name, str(root))
            src = merged.setdefault(key, TorchvisionSource(name, root, []))
            src.splits += [s for s in splits if s not in src.splits]
    _check_plan(list(merged.values()))
    return list(merged.values())


def _check_plan(sources: list[TorchvisionSource]) -> None:
    """Two sources may not write the same file (``mnist`` and ``build/mnist`` are both ``MNIST/raw``)."""
    owner: dict[str, TorchvisionSource] = {}
    for src in sources:
        _, tv = torchvision_of(src.name)
        for s in src.splits:
            for f in tv.files[s]:
                path = f"{tv.folder}/{f}"
                other = owner.setdefault(path, src)
                if other is not src:
                    raise ConfigError(
                        f"two sources would both write {path}", expected="one source per torchvision dataset",
                        found=f"{other.name} from {other.root or 'the cache'} and "
                              f"{src.name} from {src.root or 'the cache'}", hint="write them into two roots (--out)")


def _label_table(ds: DatasetSplit, info: DatasetInfo) -> np.ndarray:
    """QMNIST's labels file: the N x 8 int32 table (column 0 the label), from the metadata."""
    meta = ds.metadata
    fields = list(info.metadata_fields)
    if meta is None or not set(fields) <= set(meta.dtype.names or ()):
        raise ConfigError(f"{info.name} {ds.split}: torchvision's labels file is the "
                          f"{len(fields)}-column table, and the source has no such metadata",
                          path=ds.source, expected=", ".join(fields),
                          found=", ".join(meta.dtype.names or ()) if meta is not None else "none")
    table = np.stack([np.asarray(meta[f], np.int32) for f in fields], axis=1)
    if not np.array_equal(table[:, 0], ds.labels):
        raise IntegrityError(f"{info.name} {ds.split}: metadata column 0 is not the label",
                             path=ds.source, expected="the labels", found="other values")
    return table


def _write_split(raw: Path, info: DatasetInfo, tv: TorchvisionInfo, split: str, ds: DatasetSplit) -> list[str]:
    """Write one split's two files into ``raw`` in the official files' storage; their names."""
    images_name, labels_name = tv.files[split]
    images = ds.images
    if info.orientation == "transposed":  # back to the official storage (EMNIST: transposed)
        images = images.transpose(0, 2, 1)
    write_idx(raw / images_name, images)
    if info.split(split).labels_column is not None:
        labels = _label_table(ds, info)
    else:
        if ds.labels.size and (int(ds.labels.min()) < 0 or int(ds.labels.max()) > 255):
            raise ConfigError(f"{info.name} {split}: labels do not fit the ubyte labels file", path=ds.source,
                              expected="0..255", found=f"{int(ds.labels.min())}..{int(ds.labels.max())}")
        labels = ds.labels.astype(np.uint8)
    write_idx(raw / labels_name, labels)
    return [images_name, labels_name]


def _source_manifest(src: TorchvisionSource) -> Manifest | None:
    # the gate's: folder and manifest
    return None if src.root is None else resolve(src.root, get_dataset(src.name)).manifest


def _official(info: DatasetInfo, split: str, role: int, sha256: str) -> bool | None:
    """Whether a written (raw) file (``role`` 0 images, 1 labels) holds the official release's
    content; None when the registry pins none."""
    sp = info.split(split)
    official = sp.images if role == 0 else sp.labels
    try:
        want = get_file(f"{info.group}/{official}").content_sha256
    except KeyError:
        return None
    return None if not want else sha256 == want


def layout_problems(root: str | os.PathLike[str]) -> list[str]:
    """What ``--overwrite`` would destroy in a torchvision root beyond what mnistforge wrote: the
    root's manifest lists the data files; each ``<Class>/raw/manifest.json`` is accepted only
    while it is itself a whole record of its folder."""
    root = Path(root)
    return [p for p in recorded_folder_problems(root)
            if not ((nested := root / p.split(" (", 1)[0]).name == MANIFEST_NAME and p.endswith("(not listed)")
                    and not recorded_folder_problems(nested.parent))]


def write_torchvision(out: str | os.PathLike[str], sources: list[TorchvisionSource], *, overwrite: bool = False,
                      inputs: Iterable[str | os.PathLike[str]] = (), download: bool | None = None) -> TorchvisionLayout:
    """Write ``sources`` in torchvision's layout under the new folder ``out``; what was written. ``inputs`` are folders
    ``out`` must not overlap (besides the sources' own); ``download`` as for :func:`mnistforge.load`.  Nothing is left
    behind on failure."""
    out = Path(out)
    _check_plan(sources)
    layout = TorchvisionLayout(root=out)
    by_folder: dict[str, list[TorchvisionSource]] = {}
    for src in sources:
        by_folder.setdefault(torchvision_of(src.name)[1].folder, []).append(src)
    folders: list[str | os.PathLike[str]] = [src.root for src in sources if src.root is not None]
    with atomic_dir(out, overwrite=overwrite, inputs=list(inputs) + folders, owned=layout_problems) as tmp:
        for folder, srcs in by_folder.items():
            raw = Path(tmp) / folder
            raw.mkdir(parents=True)
            manifest = Manifest(kind="torchvision", parameters={"layout": "torchvision"})
            for src in srcs:
                _write_source(raw, src, manifest, layout, download)
            written = manifest.write(raw)
            _record_files(written, srcs, layout)
        root_manifest = Manifest(kind="torchvision", parameters={"layout": "torchvision"},
                                 inputs={n: d["from"] for n, d in layout.datasets.items()},
                                 notes=layout.notes + layout.warnings,
                                 datasets={n: DatasetEntry(counts=dict(d["splits"]))
                                           for n, d in layout.datasets.items()})
        root_manifest.write(tmp)
    for w in layout.warnings:
        logger.warning("%s", w)
    return layout


def _write_source(raw: Path, src: TorchvisionSource, manifest: Manifest, layout: TorchvisionLayout,
                  download: bool | None) -> None:
    info, tv = torchvision_of(src.name)
    built = _source_manifest(src)
    counts: dict[str, int] = {}
    status: dict[str, dict[str, str]] = {}
    synthetic = False
    classes = None
    for split in src.splits:
        meta: bool | Literal["files"] = "files" if info.split(split).labels_column is not None else False
        ds = load(src.name, split, root=src.root, download=download, with_metadata=meta)
        _write_split(raw, info, tv, split, ds)
        counts[split] = len(ds)
        status[split] = dict(ds.status)
        synthetic = synthetic or bool(getattr(ds, "synthetic", False))
        if list(ds.classes) != list(info.classes):
            classes = list(ds.classes)
    entry = built.dataset(src.name) if built is not None else None
    manifest.datasets[src.name] = DatasetEntry(
        counts=counts, kind=entry.kind if entry else None,
        classes=len(classes) if classes else None, class_names=classes,
        orientation="official" if info.orientation == "transposed" else "upright")
    manifest.orientation = "official" if info.orientation == "transposed" else "upright"
    if built is not None:  # the build's provenance travels with its files
        for k, v in built.inputs.items():
            manifest.inputs.setdefault(k, v)
        manifest.notes += [n for n in built.notes if n not in manifest.notes]
    where = {"cache": src.root is None, "folder": None if src.root is None else src.shown or str(src.root),
             "status": status}
    manifest.inputs.setdefault("sources", {})[src.name] = where
    notes, warnings = [], []
    if synthetic:
        notes.append(f"{src.name}: built from a synthetic SD19, not NIST's data")
    if tv.needs_every_split and set(tv.files) - set(src.splits):
        missing = ", ".join(sorted(set(tv.files) - set(src.splits)))
        warnings.append(f"{src.name}: torchvision's {tv.cls} loads a root only when every split is "
                        f"there ({missing} missing); mnistforge.compat.{tv.cls} reads it")
    if classes:
        warnings.append(f"{src.name}: a build with {len(classes)} classes; torchvision's {tv.cls} "
                        f"names {len(tv.classes)} (mnistforge.compat uses the build's)")
    manifest.notes += notes + warnings
    layout.notes += notes
    layout.warnings += warnings
    layout.datasets[src.name] = {"class": tv.cls, "split_argument": tv.split, "folder": tv.folder,
                                 "splits": counts, "files": {}, "from": where}


def _record_files(written: Manifest, srcs: list[TorchvisionSource], layout: TorchvisionLayout) -> None:
    for src in srcs:
        info, tv = torchvision_of(src.name)
        entry = layout.datasets[src.name]
        for split in src.splits:
            for role, fname in enumerate(tv.files[split]):
                out = written.outputs[fname]
                official = _official(info, split, role, out["sha256"])
                entry["files"][f"{tv.folder}/{fname}"] = {**out, "official": official}
                origin = entry["from"]["status"].get(split, {})
                if official is False and origin and set(origin.values()) <= OFFICIAL_STATUSES:
                    raise IntegrityError(  # the source is the official release: so must the copy be
                        f"{src.name} {split}: the written file differs from the official content",
                        path=f"{tv.folder}/{fname}", expected="the registry's content sha256",
                        found=f"sha256 {out['sha256']}", hint="report this as a bug")
