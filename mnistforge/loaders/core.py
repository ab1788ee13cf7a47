"""``load(name, split, root=None)``: official and built files, from one code path.

A load is three steps, each its own function:

* **resolution** (:func:`resolve_load`): which route the arguments name (a third-party copy, a
  Hugging Face export, idx files in a folder or in the cache), the dataset, the folder and the
  split, before any file is opened;
* **trust** (:func:`_open_arrays`): a folder's files pass the trust gate (:mod:`mnistforge.gate`)
  unless the caller trusts them; every route checks shapes, pixels and classes;
* **conversion** (:func:`_to_split`, :func:`_finish`): the arrays become a
  :class:`~mnistforge.loaders.split.DatasetSplit` (the registry's view of the split, the
  orientation, the requested rows, the label-issue view, the metadata asked for).

Each route is one reader in :data:`READERS`.
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
    """Load one split of a dataset: official files from the cache, or built files.

    Parameters
    ----------
    name : str
        Dataset name, as in the registry (``mnist``, ``qmnist``,
        ``emnist-letters``...) or as typed elsewhere: case and ``-``/``_``/``/``
        do not matter (``MNIST``, ``fashion_mnist``, ``emnist/letters``).  A
        folder path is accepted too (the dataset is recognised from the file
        names, see :func:`resolve_target`).
    split : str
        ``train``, ``test``; ``test10k``, ``test50k``, ``nist`` (qmnist);
        ``validation``, ``train-without-validation`` (EMNIST balanced sets).
        A slice may follow, as in TFDS: ``test[:100]``, ``train[:90%]``,
        ``train[-10%:]`` (percentages rounded to the nearest row).
    root : path, optional
        A third-party copy (Keras ``.npz``, ``.npy`` pairs, CSV, a torchvision
        root, a Hugging Face parquet snapshot, an EMNIST ``.mat``; see
        :mod:`mnistforge.loaders.foreign`; ``name`` itself may be such a path),
        or a folder of idx files with the official names (e.g. a build folder):
        looked for in ``root`` and ``root/<name>`` (and ``root/<group>``, and
        ``root/xnist`` for qmnist's ``nist``).  A Hugging Face export folder
        works too.  Without it, official files come from the cache (fetched and
        verified as needed).
    download : bool, optional
        The one network switch: ``False`` never opens a connection (a missing
        official file raises :class:`~mnistforge.errors.OfflineError`),
        ``True`` fetches what is missing; ``None`` (default) fetches unless
        ``MNISTFORGE_OFFLINE=1``.
    with_metadata : bool or "files"
        Also load the metadata (QMNIST's 8 columns; EMNIST writer side files
        of built folders).  ``metadata`` stays None when there is none.
        MNIST and QMNIST also get the human label votes of Northcutt et al.
        (2021): ``label_votes_given``/``_guessed``/``_neither``,
        ``suggested_label``, ``label_issue`` (-1 votes: not examined; see
        :mod:`mnistforge.loaders.label_issues`).  ``"files"``: the files' own
        columns only, without the label votes (nothing fetched for them).
    label_issues : {None, "exclude", "relabel"}
        ``None`` (default): the labels as published.  ``"exclude"`` drops the
        images with a known label issue (15 of MNIST's test set);
        ``"relabel"`` gives them the label most workers chose and drops those
        where no label got a majority.  ``ds.label_issues`` says what changed.
        A third-party copy must be the official split in the official order
        (:class:`~mnistforge.errors.ConfigError` otherwise).
    cache : path, optional
        Cache folder (default ``$MNISTFORGE_HOME`` or the platform cache).
    keep_raw : bool, optional
        Keep a decompressed copy in the cache for millisecond memory-mapped
        loads (default true, or ``MNISTFORGE_KEEP_RAW``).  With ``root=``, a
        folder's compressed files get such copies only when ``keep_raw=True``
        is passed; they go to ``<cache>/local-raw/``, never into the folder
        (see :mod:`mnistforge.cache.local_raw`).
    check : bool
        Re-hash every cached file this load reads (the compressed file and its
        decompressed copy) instead of trusting its ``.sha256`` sidecar, which
        a load otherwise trusts while size and modification time hold; a
        mismatch raises :class:`~mnistforge.errors.HashMismatchError` (a stale
        decompressed copy is rebuilt).  ``mnistforge verify`` always re-hashes.
        With ``root=``, the folder's files are hashed again (their records in
        ``<cache>/seen/`` are not trusted), and with ``keep_raw=True`` their raw
        copies too (a damaged one is made again).
    mirrors : list of str or str, optional
        Addresses tried before the registry's when a file must be downloaded (base
        addresses or templates with ``{name}`` and ``{file}``; default
        ``$MNISTFORGE_MIRRORS``; see :func:`mnistforge.cache.mirrors.mirrors`).  What they serve
        is checked against the registry's hashes.
    trust_files : bool, optional
        Data from ``root`` passes the trust gate (:mod:`mnistforge.gate`): a
        folder's two files are hashed (once: later loads trust the record while
        each file keeps its size, mtime, ctime and inode) and checked against
        the folder's build manifest, or, without one, against the registry; a
        third-party copy's arrays against the registry's content hashes.  Data
        that is not what ``name`` says raises
        :class:`~mnistforge.errors.DataMismatchError` saying what it is.
        ``True`` loads it anyway (default ``MNISTFORGE_TRUST_FILES``, off);
        shape, pixel and class-range checks apply either way.

    Returns
    -------
    DatasetSplit

    Examples
    --------
    >>> import mnistforge
    >>> ds = mnistforge.load("emnist-letters", "test")          # doctest: +SKIP
    >>> ds.classes[ds.labels[0]]                                # doctest: +SKIP
    'W'
    >>> first = mnistforge.load("MNIST", "test[:100]")         # doctest: +SKIP
    >>> built = mnistforge.load("qmnist", "test10k", root="build/", with_metadata=True)  # doctest: +SKIP
    """
    if label_issues is not None:  # refused on every route, the third-party copies' included

        check_mode(label_issues)
    request = Request(with_metadata=with_metadata, label_issues=label_issues, download=download,
                      cache=cache, keep_raw=keep_raw, progress=progress, check=check,
                      mirrors=mirrors, trust_files=trust_files)
    route = resolve_load(name, split, root)
    return READERS[route.kind](route, request)


# --------------------------------------------------------------------------- the request

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


# --------------------------------------------------------------------------- resolution

@dataclass(frozen=True)
class Route:
    """Where a load reads from, resolved before any file is opened.

    ``kind`` is the reader (:data:`READERS`): ``foreign`` (a third-party copy at ``path``;
    ``name`` and ``split`` as given), ``repo`` (a Hugging Face export at ``root``), ``files``
    (idx files in folder ``root``, or in the cache without one).  ``split`` is then the
    registry's split name (the export's as typed for a renamed config) and ``rows`` the slice
    that followed it (``[:100]``), taken in :func:`_finish`.
    """

    kind: Literal["foreign", "repo", "files"]
    name: str | None
    split: str | None
    root: Path | None = None
    rows: str | None = None
    info: DatasetInfo | None = None
    path: PathArg | None = None


def resolve_load(name: PathArg, split: str, root: PathArg | None = None) -> Route:
    """The :class:`Route` of ``load(name, split, root=root)`` (errors for a folder that is not
    there, a name that is no dataset, a split it does not have)."""
    if root is None and isinstance(name, str) and "/" not in name and os.sep not in name:
        # a dataset's name wins over a folder of that name in the working directory
        # (torchvision's root holds MNIST/, FashionMNIST/...)
        try:
            name = dataset_name(name)
        except DatasetNotFoundError:
            pass
    if root is not None or not (isinstance(name, str) and name in list_datasets()):
        # a third-party copy: npz/npy, CSV, parquet, .mat, torchvision
        if foreign_source(name, root):
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
        # An exported Hugging Face repository (README.md + data/<name>/).
        if _is_repo(root, name):
            return Route("repo", os.fspath(name), _repo_split(os.fspath(name), base), Path(root),
                         rows)
    info = get_dataset(dataset_name(os.fspath(name)))
    if root is not None and info.name != name \
            and _is_repo(root, info.name):   # (a name asked already is not asked again)
        return Route("repo", info.name, split_name(info, base), Path(root), rows, info)
    return Route("files", info.name, split_name(info, base), None if root is None else Path(root),
                 rows, info)


def _repo_split(name: str, split: str) -> str:
    """The registry's name of ``split`` when ``name`` is a registry dataset (a renamed config
    keeps the split as typed)."""
    try:
        return split_name(get_dataset(dataset_name(name)), split)
    except DatasetNotFoundError:
        return split


def _is_repo(root: PathArg, name: PathArg) -> bool:

    return bool(is_hf_repo(root, os.fspath(name)))


# --------------------------------------------------------------------------- the readers

def _read_foreign(route: Route, req: Request) -> DatasetSplit:
    """A third-party copy: its reader identifies, gates and converts it (:mod:`.foreign`)."""
    assert route.path is not None
    ds: DatasetSplit = load_foreign(
        route.path, route.name, route.split, with_metadata=bool(req.with_metadata),
        trust=req.trust, label_issues=req.label_issues, cache=req.cache, download=req.download,
        progress=req.progress, check=req.check, loader=load)
    return ds


def _read_repo(route: Route, req: Request) -> DatasetSplit:
    """A Hugging Face export (README.md + data/<name>/): its shards checked, then read."""
    assert route.root is not None and route.name is not None and route.split is not None
    ds: DatasetSplit = load_split_from_repo(route.root, route.name, route.split,
                                            with_metadata=req.wants_metadata, cache=req.cache,
                                            check=req.check, trust=req.trust)
    return _finish(ds, route.rows, req.label_issues, req.with_metadata)


def _read_files(route: Route, req: Request) -> DatasetSplit:
    """idx files, in a folder or the cache: opened (through the gate), then converted."""
    assert route.info is not None and route.split is not None
    info, split = route.info, route.split
    sp = info.split(split)
    src = _origin(info, split, route.root, req)
    fsp = info.file_split(split)
    images, labels, meta = _open_arrays(info, fsp, src, req)
    ds = _to_split(info, sp, src, images, labels, meta)
    if req.wants_metadata and req.with_metadata != "files":
        # the human label votes of the splits a study examined

        add_label_votes(ds, root=route.root, cache=req.cache, download=req.download,
                        progress=req.progress, required=req.label_issues is not None)
    return _finish(ds, route.rows, req.label_issues, req.with_metadata)


#: one reader per route (:attr:`Route.kind`)
READERS: dict[str, Callable[[Route, Request], DatasetSplit]] = {
    "foreign": _read_foreign,
    "repo": _read_repo,
    "files": _read_files,
}


def _origin(info: DatasetInfo, split: str, root: Path | None, req: Request) -> Origin:
    """Where the files come from: the folder, or the cache (fetched and verified as needed)."""
    if root is not None:
        return FolderOrigin(info, root, cache=req.cache,
                            keep_raw=bool(req.keep_raw), check=req.check)
    _require_release(info, info.file_split(split))
    return CacheOrigin(info, cache=req.cache, download=req.download, keep_raw=req.keep_raw,
                       progress=req.progress, check=req.check, mirrors=req.mirrors)


def _require_release(info: DatasetInfo, fsp: SplitInfo) -> None:
    """A dataset with no published files (FEMNIST) loads only from a build folder."""
    try:
        get_file(f"{info.group}/{fsp.images}")
    except KeyError:
        raise DatasetNotFoundError(f"{info.name} has no published files to download",
                                   expected="a folder built by mnistforge (root=DIR)",
                                   found="no root given",
                                   hint=f"build it: `mnistforge build {info.name} --sd19 SD19 --out DIR`, "
                                        f"then load it with root=DIR") from None


# --------------------------------------------------------------------------- trust

def _open_arrays(info: DatasetInfo, fsp: SplitInfo, src: Origin, req: Request,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(images, labels, metadata or None)`` of file split ``fsp``, as stored.

    A folder's files pass the trust gate unless trusted, each judged by the bytes it was read
    from (the labels file, tens of kB, before the images file is read).  Shapes, pixels and
    pairs are checked on every route.
    """
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
    arranged = _arranged(info, fsp, src, images, lab, meta)
    if fsp.images != fsp.labels:   # ... and the images once well formed
        judge(fsp.images)
    if gated and all(src.status.get(f) in ("unpinned", "archive", None) for f in (fsp.images, fsp.labels)):
        logger.info("%s %s in %s: no hash to check the files against (unverified)", info.name,
                    fsp.name, src.where)
    return arranged


def _arranged(info: DatasetInfo, fsp: SplitInfo, src: Origin, images: np.ndarray,
              lab: np.ndarray, meta: np.ndarray | None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(images, labels, metadata)`` from the files' arrays: the labels column of a label
    table taken, and every shape checked."""
    if fsp.labels_column is not None:
        if lab.ndim != 2 or lab.shape[1] <= fsp.labels_column:
            raise IntegrityError("label table has the wrong shape", path=fsp.labels,
                                 expected=f"N x >{fsp.labels_column} columns",
                                 found=str(lab.shape))
        labels = lab[:, fsp.labels_column]
    else:
        labels = lab
    _check_shapes(info, fsp, images, labels, meta, src)
    return images, labels, meta


def _check_shapes(info: DatasetInfo, fsp: SplitInfo, images: np.ndarray, labels: np.ndarray,
                  meta: np.ndarray | None, src: Origin) -> None:
    where = f"{src.where}/{fsp.images}"
    require_images(images, info, where)
    require_pair(images, labels, info, where, labels_where=f"{src.where}/{fsp.labels}")
    if meta is not None and (meta.ndim != 2 or meta.shape[0] != images.shape[0]):
        raise IntegrityError(f"{info.name}: metadata does not match the images", path=where,
                             expected=f"{images.shape[0]} x k", found=str(meta.shape))


# --------------------------------------------------------------------------- conversion

def _to_split(info: DatasetInfo, sp: SplitInfo, src: Origin, images: np.ndarray,
              labels: np.ndarray, meta: np.ndarray | None) -> DatasetSplit:
    """The :class:`DatasetSplit` of the arrays of split ``sp``'s files: the registry's view of
    them (``test10k``, ``validation``...), upright, labels as int64, metadata as named columns."""
    split = sp.name
    sl = _view_rows(info, sp, src, images.shape[0])
    if sl is not None:
        images, labels = images[sl], labels[sl]
        meta = None if meta is None else meta[sl]
    if src.orientation == "transposed":
        images = images.transpose(0, 2, 1)
    stored = np.asarray(labels)  # the file's own (small) type: a cheaper range check
    labels = np.asarray(labels, dtype=np.int64)
    metadata = _structured(meta, info) if meta is not None else None
    if src.kind == "cache" and len(labels) != sp.count:
        raise IntegrityError(f"{info.name} {split}: wrong number of rows", path=src.where,
                             expected=f"{sp.count} (registry)", found=str(len(labels)))
    classes = list(src.classes) if src.classes else list(info.classes)
    require_labels(info, split, stored, classes, f"{src.where}/{info.file_split(split).labels}")
    logger.info("loaded %s %s: %d images from %s", info.name, split, len(labels), src)
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


def _structured(meta: np.ndarray, info: DatasetInfo) -> np.ndarray:
    fields = list(info.metadata_fields)
    k = meta.shape[1]
    if len(fields) < k:
        fields += [f"col{i}" for i in range(len(fields), k)]
    dt = np.dtype([(f, np.int32) for f in fields[:k]])
    out = np.empty(meta.shape[0], dtype=dt)
    for i, f in enumerate(dt.names or ()):
        out[f] = meta[:, i]
    return out


def _finish(ds: DatasetSplit, rows: str | None, label_issues: str | None,
            with_metadata: Metadata) -> DatasetSplit:
    """The requested rows, the label-issue view, and metadata only when asked for."""
    ds = warn_if_empty(_slice(ds, rows))
    if label_issues is None and with_metadata:
        return ds
    if label_issues is None:
        ds.metadata = None
        return ds

    out: DatasetSplit = clean_view(ds, label_issues, bool(with_metadata))
    return out


def _slice(ds: DatasetSplit, rows: str | None) -> DatasetSplit:
    if rows is None:
        return ds
    return ds.select(rows_of(rows, len(ds)), split=f"{ds.split}{rows.replace(' ', '')}")
