"""``load(name, split, root=None)`` in the four steps of ``docs/architecture.md``: resolve
(:func:`resolve_load`: a route, one reader in :data:`READERS`), read once (:mod:`.origins`), admit
(:func:`_open_arrays`, through :mod:`mnistforge.gate`), serve (:func:`_to_split`, :func:`_finish`).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Union

import numpy as np

from .. import settings
from ..errors import DatasetNotFoundError, IntegrityError, TargetNotFoundError
from ..gate.files import check_folder_file
from ..gate.formed import require_images, require_labels, require_pair
from ..io.hf.repo import is_hf_repo
from ..io.idx import FileRead
from ..log import get_logger
from ..registry import DatasetInfo, SplitInfo, get_dataset, get_file, list_datasets
from .foreign import load_foreign
from .label_issues import add_label_votes, check_mode, clean_view
from .names import dataset_name, parse_split, rows_of, split_name
from .origins import CacheOrigin, FolderOrigin, Origin
from .repo import load_split_from_repo
from .split import DatasetSplit, warn_if_empty
from .targets import detect_dataset, foreign_source

#: what a path argument may be; what ``with_metadata`` may be (real objects: the annotations of
#: :func:`load` resolve at run time, for ``typing.get_type_hints`` and documentation tools)
PathArg = Union[str, "os.PathLike[str]"]
Metadata = Union[bool, Literal["files"]]

logger = get_logger(__name__)

__all__ = ["load"]


def load(name: PathArg, split: str = "train", *, root: PathArg | None = None,
         download: bool | None = None, with_metadata: Metadata = False,
         cache: PathArg | None = None, keep_raw: bool | None = None, progress: bool | None = None,
         trust_files: bool | None = None, label_issues: str | None = None, check: bool = False,
         mirrors: Sequence[str] | str | None = None) -> DatasetSplit:
    """Load one split of a dataset (``docs/loading.md``): ``name`` as typed (``MNIST``,
    ``emnist/letters``) or a path; ``split`` a registry split, TFDS slice after it allowed
    (``test[:100]``, ``train[:90%]``); ``root`` a folder of idx files under the official names, a
    Hugging Face export or a third-party copy (without it: the cache, fetched and verified).

    ``download=False`` never opens a connection (OfflineError); ``with_metadata``: the files'
    columns and, for MNIST and QMNIST, the label votes (``"files"``: the files' only);
    ``label_issues``: ``"exclude"`` or ``"relabel"`` the images with a known label issue;
    ``keep_raw``: memory-mapped decompressed copies (a folder's only when ``True`` is passed);
    ``check``: re-hash every file read, trusting no sidecar or record; ``mirrors``: addresses tried
    before the registry's; ``trust_files=True``: data from ``root`` that fails the trust gate
    (DataMismatchError, saying what it is) loads anyway.  Shape, pixel and class checks apply always.
    """
    if label_issues is not None:  # refused on every route, the third-party copies' included
        check_mode(label_issues)
    request = Request(with_metadata=with_metadata, label_issues=label_issues, download=download,
                      cache=cache, keep_raw=keep_raw, progress=progress, check=check,
                      mirrors=mirrors, trust_files=trust_files)
    route = resolve_load(name, split, root)
    return READERS[route.kind](route, request)


# --------------------------------------------------------------------------- 1. resolve

@dataclass(frozen=True)
class Request:
    """What a :func:`load` asks for besides the data's name, split and folder."""
    with_metadata: Metadata = False
    label_issues: str | None = None
    download: bool | None = None
    cache: PathArg | None = None
    keep_raw: bool | None = None
    progress: bool | None = None
    check: bool = False
    mirrors: Sequence[str] | str | None = None
    trust_files: bool | None = None

    @property
    def trust(self) -> bool:
        """Whether a folder's files skip the trust gate (the argument, else the setting)."""
        return settings.current(trust_files=self.trust_files).trust_files

    @property
    def wants_metadata(self) -> bool:
        """The metadata is read when asked for, and for a label-issue view (it needs the votes)."""
        return bool(self.with_metadata) or self.label_issues is not None


@dataclass(frozen=True)
class Route:
    """Where a load reads from, resolved before any file is opened: ``kind``, the reader
    (``foreign``: a copy at ``path``, ``repo``: an export at ``root``, ``files``: idx files in
    ``root`` or the cache); ``split``, the registry's name; ``rows``, the slice after it."""

    kind: Literal["foreign", "repo", "files"]
    name: str | None
    split: str | None
    root: Path | None = None
    rows: str | None = None
    info: DatasetInfo | None = None
    path: PathArg | None = None


def resolve_load(name: PathArg, split: str, root: PathArg | None = None) -> Route:
    """The :class:`Route` of ``load(name, split, root=root)``, or the error of a missing folder, name or split."""
    if root is None and isinstance(name, str) and "/" not in name and os.sep not in name:
        # a dataset's name wins over a folder of that name in the working directory
        # (torchvision's root holds MNIST/, FashionMNIST/...)
        try:
            name = dataset_name(name)
        except DatasetNotFoundError:
            pass
    if root is not None or not (isinstance(name, str) and name in list_datasets()):
        if foreign_source(name, root):   # npz/npy, CSV, parquet, .mat, torchvision
            if root is None:
                return Route("foreign", None, split, path=name)
            return Route("foreign", os.fspath(name), split, path=root)
    if root is None and isinstance(name, (str, os.PathLike)) and name not in list_datasets() \
            and Path(name).is_dir():
        name, root = detect_dataset(name), Path(name)
    base, rows = parse_split(split)
    if root is not None:
        if not os.path.isdir(root):
            raise TargetNotFoundError("no such folder", path=root,
                                      expected="a folder of idx files or a Hugging Face export",
                                      found="nothing there")
        if is_hf_repo(root, os.fspath(name)):   # an export: README.md + data/<name>/
            try:   # the registry's split name (a renamed config keeps the split as typed)
                repo_split = split_name(get_dataset(dataset_name(os.fspath(name))), base)
            except DatasetNotFoundError:
                repo_split = base
            return Route("repo", os.fspath(name), repo_split, Path(root), rows)
    info = get_dataset(dataset_name(os.fspath(name)))
    if root is not None and info.name != name and is_hf_repo(root, info.name):
        return Route("repo", info.name, split_name(info, base), Path(root), rows, info)
    return Route("files", info.name, split_name(info, base), None if root is None else Path(root),
                 rows, info)


# --------------------------------------------------------------------------- the readers

def _read_foreign(route: Route, req: Request) -> DatasetSplit:
    assert route.path is not None
    return load_foreign(route.path, route.name, route.split, with_metadata=bool(req.with_metadata),
                        trust=req.trust, label_issues=req.label_issues, cache=req.cache,
                        download=req.download, progress=req.progress, check=req.check, loader=load)


def _read_repo(route: Route, req: Request) -> DatasetSplit:
    """A Hugging Face export (README.md + data/<name>/): its shards checked, then read."""
    assert route.root is not None and route.name is not None and route.split is not None
    ds = load_split_from_repo(route.root, route.name, route.split, with_metadata=req.wants_metadata,
                              cache=req.cache, check=req.check, trust=req.trust)
    return _finish(ds, route.rows, req.label_issues, req.with_metadata)


def _read_files(route: Route, req: Request) -> DatasetSplit:
    """idx files, in a folder or the cache: read once, admitted, served."""
    return _read_files_as_read(route, req)[0]


def load_as_read(name: PathArg, split: str, *, root: PathArg | None, **options: object
                 ) -> tuple[DatasetSplit, dict[str, FileRead]]:
    """:func:`load` (``options`` its keywords), and each file of a folder as it was read: the bytes
    the trust gate judged, by official name (none for other routes).  ``verify``'s file checks
    judge these reads instead of opening and inflating the files again."""
    req = Request(**options)   # type: ignore[arg-type]
    route = resolve_load(name, split, root)
    if route.kind != "files":
        return READERS[route.kind](route, req), {}
    return _read_files_as_read(route, req)


def _read_files_as_read(route: Route, req: Request) -> tuple[DatasetSplit, dict[str, FileRead]]:
    assert route.info is not None and route.split is not None
    info, split = route.info, route.split
    src = _origin(info, split, route.root, req)
    images, labels, meta = _open_arrays(info, info.file_split(split), src, req)
    ds = _to_split(info, info.split(split), src, images, labels, meta)
    if req.wants_metadata and req.with_metadata != "files":
        # the human label votes of the splits a study examined
        add_label_votes(ds, root=route.root, cache=req.cache, download=req.download,
                        progress=req.progress, required=req.label_issues is not None)
    return _finish(ds, route.rows, req.label_issues, req.with_metadata), dict(getattr(src, "reads", {}))


#: one reader per route (:attr:`Route.kind`)
READERS: dict[str, Callable[[Route, Request], DatasetSplit]] = {
    "foreign": _read_foreign,
    "repo": _read_repo,
    "files": _read_files,
}


# --------------------------------------------------------------------------- 2. read once

def _origin(info: DatasetInfo, split: str, root: Path | None, req: Request) -> Origin:
    """The folder, or the cache.  A folder gets raw copies only when ``keep_raw=True`` is passed
    (``MNISTFORGE_KEEP_RAW`` is about the cache's own files: a folder load writes nothing unasked)."""
    if root is not None:
        return FolderOrigin(info, root, cache=req.cache, keep_raw=bool(req.keep_raw), check=req.check)
    try:
        get_file(f"{info.group}/{info.file_split(split).images}")
    except KeyError:   # no published files (FEMNIST): only a build folder loads
        raise DatasetNotFoundError(f"{info.name} has no published files to download",
                                   expected="a folder built by mnistforge (root=DIR)",
                                   found="no root given",
                                   hint=f"build it: `mnistforge build {info.name} --sd19 SD19 --out DIR`, "
                                        f"then load it with root=DIR") from None
    return CacheOrigin(info, cache=req.cache, download=req.download, keep_raw=req.keep_raw,
                       progress=req.progress, check=req.check, mirrors=req.mirrors)


# --------------------------------------------------------------------------- 3. admit

def _open_arrays(info: DatasetInfo, fsp: SplitInfo, src: Origin, req: Request,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(images, labels, metadata or None)`` of file split ``fsp``, as stored, well formed; a
    folder's files judged by the gate (unless trusted) by the bytes read, the labels first."""
    assert fsp.images and fsp.labels, f"registry: file split {fsp.name} without files"
    gated = isinstance(src, FolderOrigin) and not req.trust

    def judge(fname: str) -> None:
        if gated:
            assert isinstance(src, FolderOrigin)
            read = src.reads[fname]
            src.status[fname] = check_folder_file(info, fsp.name, read, fname,
                                                  src.manifest_of(Path(read.path)), cache=req.cache,
                                                  rehash=req.check)

    if gated:   # the labels first: a folder's wrong data is named before its images are read
        lab = src.open(fsp.labels)
        judge(fsp.labels)
        images = src.open(fsp.images) if fsp.images != fsp.labels else lab
    else:
        images = src.open(fsp.images)
        lab = src.open(fsp.labels) if fsp.labels != fsp.images else images
    meta = None
    if req.wants_metadata and fsp.metadata:
        meta = lab if fsp.metadata == fsp.labels else src.open_optional(fsp.metadata)
    labels = lab
    if fsp.labels_column is not None:   # a label table: its labels column
        if lab.ndim != 2 or lab.shape[1] <= fsp.labels_column:
            raise IntegrityError("label table has the wrong shape", path=fsp.labels,
                                 expected=f"N x >{fsp.labels_column} columns", found=str(lab.shape))
        labels = lab[:, fsp.labels_column]
    where = src.named(fsp.images)
    require_images(images, info, where)
    require_pair(images, labels, info, where, labels_where=src.named(fsp.labels))
    if meta is not None and (meta.ndim != 2 or meta.shape[0] != images.shape[0]):
        raise IntegrityError(f"{info.name}: metadata does not match the images", path=where,
                             expected=f"{images.shape[0]} x k", found=str(meta.shape))
    if fsp.images != fsp.labels:   # ... and the images once well formed
        judge(fsp.images)
    if gated and all(src.status.get(f) in ("unpinned", "archive", None) for f in (fsp.images, fsp.labels)):
        logger.info("%s %s in %s: no hash to check the files against (unverified)", info.name,
                    fsp.name, src.where)
    return images, labels, meta


# --------------------------------------------------------------------------- 4. serve

def _to_split(info: DatasetInfo, sp: SplitInfo, src: Origin, images: np.ndarray,
              labels: np.ndarray, meta: np.ndarray | None) -> DatasetSplit:
    """The :class:`DatasetSplit` of split ``sp`` (a view: its rows), upright, int64 labels."""
    split = sp.name
    sl = _view_rows(info, sp, src, images.shape[0])
    if sl is not None:
        images, labels = images[sl], labels[sl]
        meta = None if meta is None else meta[sl]
    if src.orientation == "transposed":
        images = images.transpose(0, 2, 1)
    stored = np.asarray(labels)  # the file's own (small) type: a cheaper range check
    labels = np.asarray(labels, dtype=np.int64)
    if src.kind == "cache" and len(labels) != sp.count:
        raise IntegrityError(f"{info.name} {split}: wrong number of rows", path=src.where,
                             expected=f"{sp.count} (registry)", found=str(len(labels)))
    classes = list(src.classes) if src.classes else list(info.classes)
    require_labels(info, split, stored, classes, src.named(info.file_split(split).labels or sp.name))
    logger.info("loaded %s %s: %d images from %s", info.name, split, len(labels), src)
    metadata = None
    if meta is not None:   # one named int32 field per column (col<i> past the registry's names)
        k, known = meta.shape[1], list(info.metadata_fields)
        names = (known + [f"col{i}" for i in range(len(known), k)])[:k]
        metadata = np.empty(len(meta), dtype=[(f, np.int32) for f in names])
        for i, f in enumerate(names):
            metadata[f] = meta[:, i]
    ds = DatasetSplit(info.name, split, images, labels, info, metadata, str(src), src.status,
                      src.orientation)
    ds.classes = classes
    manifest = getattr(src, "manifest", None)
    ds.synthetic = bool(manifest is not None and manifest.from_synthetic_sd19)
    return ds


def _view_rows(info: DatasetInfo, sp: SplitInfo, src: Origin, n: int) -> slice | None:
    """The rows of its file split that view ``sp`` is (None: all of them)."""
    if not sp.is_view:
        return None
    if sp.rows is not None:
        return slice(sp.rows[0], sp.rows[1])
    if sp.last or sp.drop_last:
        k = src.length(info.split(sp.last or sp.drop_last or ""))
        if k > n:
            raise IntegrityError(f"{info.name}: validation larger than train", path=src.where,
                                 expected=f"at most {n} rows", found=f"{k}")
        return slice(n - k, n) if sp.last else slice(0, n - k)
    return None


def _finish(ds: DatasetSplit, rows: str | None, label_issues: str | None,
            with_metadata: Metadata) -> DatasetSplit:
    """The requested rows, the label-issue view, and metadata only when asked for."""
    if rows is not None:
        ds = ds.select(rows_of(rows, len(ds)), split=f"{ds.split}{rows.replace(' ', '')}")
    warn_if_empty(ds)
    if label_issues is not None:
        return clean_view(ds, label_issues, bool(with_metadata))
    if not with_metadata:
        ds.metadata = None
    return ds
