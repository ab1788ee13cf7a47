"""``load(name, split, root=None)``: official and built files, from one code path."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .. import settings
from ..errors import DatasetNotFoundError, IntegrityError, TargetNotFoundError
from ..gate.formed import require_images, require_labels, require_pair
from ..log import get_logger
from ..registry import DatasetInfo, get_dataset, list_datasets
from .names import dataset_name, parse_split, rows_of, split_name
from .origins import CacheOrigin, FolderOrigin, Origin
from .split import DatasetSplit, warn_if_empty

# Folder detection (.targets) and the trust gate's check of a folder's files (gate.files) are
# imported where a folder is involved: a load from the cache needs neither (only gate.formed).

logger = get_logger(__name__)  # logging only when a record could be shown

__all__ = ["load"]



def _view(arr, sl):
    return arr if arr is None or sl is None else arr[sl]


def load(name, split="train", *, root=None, download: bool | None = None, with_metadata=False,
         cache=None, keep_raw=None, progress=None, trust_files: bool | None = None,
         label_issues: str | None = None, check: bool = False, mirrors=None) -> DatasetSplit:
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
        ``$MNISTFORGE_MIRRORS``; see :func:`mnistforge.settings.mirrors`).  What they serve
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
        from .label_issues import check_mode

        check_mode(label_issues)
    if root is None and isinstance(name, str) and "/" not in name and os.sep not in name:
        # a dataset's name wins over a folder of that name in the working directory
        # (torchvision's root holds MNIST/, FashionMNIST/...)
        try:
            name = dataset_name(name)
        except DatasetNotFoundError:
            pass
    if root is not None or not (isinstance(name, str) and name in list_datasets()):
        from .targets import foreign_source   # only where a path is involved
        if foreign_source(name, root):  # a third-party copy: npz/npy, CSV, parquet, .mat, torchvision
            from .foreign import load_foreign

            return load_foreign(name if root is None else root, None if root is None else name, split,
                                with_metadata=with_metadata, trust=settings.trust_files(trust_files),
                                label_issues=label_issues, cache=cache, download=download,
                                progress=progress, check=check, loader=load)
    if root is None and isinstance(name, (str, os.PathLike)) and name not in list_datasets() \
            and Path(name).is_dir():
        from .targets import detect_dataset

        name, root = detect_dataset(name), Path(name)
    base, rows = parse_split(split)
    want_meta = with_metadata or label_issues is not None
    if root is not None:
        if not Path(root).is_dir():
            raise TargetNotFoundError("no such folder", path=root,
                                      expected="a folder of idx files or a Hugging Face export",
                                      found="nothing there")
        # An exported Hugging Face repository (README.md + data/<name>/).
        if _is_repo(root, name):
            from .repo import load_split_from_repo

            ds = load_split_from_repo(root, name, _repo_split(name, base), with_metadata=want_meta,
                                      cache=cache, check=check, trust=settings.trust_files(trust_files))
            return _finish(ds, rows, label_issues, with_metadata)
    info = get_dataset(dataset_name(name))
    if root is not None and _is_repo(root, info.name):
        from .repo import load_split_from_repo

        ds = load_split_from_repo(root, info.name, split_name(info, base), with_metadata=want_meta,
                                  cache=cache, check=check, trust=settings.trust_files(trust_files))
        return _finish(ds, rows, label_issues, with_metadata)
    ds = _load_files(info, split_name(info, base), root=root, download=download,
                     with_metadata=want_meta, cache=cache, keep_raw=keep_raw, progress=progress,
                     trust=settings.trust_files(trust_files), check=check, mirrors=mirrors)
    if want_meta and with_metadata != "files":  # the human label votes of the splits a study examined
        from .label_issues import add_label_votes

        add_label_votes(ds, root=root, cache=cache, download=download, progress=progress,
                        required=label_issues is not None)
    return _finish(ds, rows, label_issues, with_metadata)


def _repo_split(name: str, split: str) -> str:
    """The registry's name of ``split`` when ``name`` is a registry dataset (a renamed config
    keeps the split as typed)."""
    try:
        return split_name(get_dataset(dataset_name(name)), split)
    except DatasetNotFoundError:
        return split


def _finish(ds: DatasetSplit, rows: str | None, label_issues: str | None,
            with_metadata: bool) -> DatasetSplit:
    """The requested rows, the label-issue view, and metadata only when asked for."""
    ds = warn_if_empty(_slice(ds, rows))
    if label_issues is None and with_metadata:
        return ds
    if label_issues is None:
        ds.metadata = None
        return ds
    from .label_issues import clean_view   # the study's machinery only when a view is asked for

    return clean_view(ds, label_issues, with_metadata)


def _is_repo(root, name) -> bool:
    from ..io.hf.repo import is_hf_repo

    return is_hf_repo(root, name)


def _slice(ds: DatasetSplit, rows: str | None) -> DatasetSplit:
    if rows is None:
        return ds
    return ds.select(rows_of(rows, len(ds)), split=f"{ds.split}{rows.replace(' ', '')}")


def _load_files(info: DatasetInfo, split: str, *, root, download, with_metadata, cache, keep_raw,
                progress, trust: bool, check: bool = False, mirrors=None) -> DatasetSplit:
    sp = info.split(split)
    src: Origin
    if root is not None:
        src = FolderOrigin(info, root, cache=cache, keep_raw=settings.keep_raw_for_folders(keep_raw),
                           check=check)
    else:
        _require_release(info, info.file_split(split))
        src = CacheOrigin(info, cache=cache, download=download, keep_raw=keep_raw,
                          progress=progress, check=check, mirrors=mirrors)
    fsp = info.file_split(split)
    assert fsp.images and fsp.labels, f"registry: file split {fsp.name} without files"
    gated = isinstance(src, FolderOrigin) and not trust
    if gated:  # the trust gate: the labels file before anything else is read
        from ..gate.files import check_folder

        check_folder(info, fsp, src, cache=cache, rehash=check)
        from ..gate.files import open_images

        images = open_images(fsp, src, cache=cache, rehash=check)  # hashed as it is read
    else:
        images = src.open(fsp.images)
    lab = src.open(fsp.labels) if fsp.labels != fsp.images else images
    meta_raw = None
    if with_metadata and fsp.metadata:
        meta_raw = lab if fsp.metadata == fsp.labels else src.open_optional(fsp.metadata)
    if fsp.labels_column is not None:
        if lab.ndim != 2 or lab.shape[1] <= fsp.labels_column:
            raise IntegrityError("label table has the wrong shape", path=fsp.labels,
                                 expected=f"N x >{fsp.labels_column} columns",
                                 found=str(lab.shape))
        labels = lab[:, fsp.labels_column]
    else:
        labels = lab
    _check_shapes(info, fsp, images, labels, meta_raw, src)
    if gated:  # ... and the images by content, from the array just read
        from ..gate.files import check_folder_images

        check_folder_images(info, fsp, src, images, cache=cache, rehash=check)

    sl = None
    n = images.shape[0]
    if sp.is_view:
        if sp.rows is not None:
            sl = slice(sp.rows[0], sp.rows[1])
        elif sp.last or sp.drop_last:
            k = src.length(info.split(sp.last or sp.drop_last or ""))
            if k > n:
                raise IntegrityError(f"{info.name}: validation larger than train", path=src.where,
                                     expected=f"at most {n} rows", found=f"{k}")
            sl = slice(n - k, n) if sp.last else slice(0, n - k)
    images, labels, meta_raw = _view(images, sl), _view(labels, sl), _view(meta_raw, sl)
    if src.orientation == "transposed":
        images = images.transpose(0, 2, 1)
    stored = np.asarray(labels)  # the file's own (small) type: a cheaper range check
    labels = np.asarray(labels, dtype=np.int64)
    metadata = _structured(meta_raw, info) if meta_raw is not None else None
    if src.kind == "cache" and len(labels) != sp.count:
        raise IntegrityError(f"{info.name} {split}: wrong number of rows", path=src.where,
                             expected=f"{sp.count} (registry)", found=str(len(labels)))
    classes = list(src.classes) if src.classes else list(info.classes)
    require_labels(info, split, stored, classes, f"{src.where}/{fsp.labels}")
    logger.info("loaded %s %s: %d images from %s", info.name, split, len(labels), src)
    ds = DatasetSplit(info.name, split, images, labels, info, metadata, str(src), src.status,
                      src.orientation)
    ds.classes = classes
    manifest = getattr(src, "manifest", None)
    ds.synthetic = bool(manifest is not None and manifest.from_synthetic_sd19)
    return ds


def _require_release(info: DatasetInfo, fsp) -> None:
    """A dataset with no published files (FEMNIST) loads only from a build folder."""
    from ..registry import get_file

    try:
        get_file(f"{info.group}/{fsp.images}")
    except KeyError:
        raise DatasetNotFoundError(f"{info.name} has no published files to download",
                                   expected="a folder built by mnistforge (root=DIR)",
                                   found="no root given",
                                   hint=f"build it: `mnistforge build {info.name} --sd19 SD19 --out DIR`, "
                                        f"then load it with root=DIR") from None


def _check_shapes(info, fsp, images, labels, meta, src) -> None:
    where = f"{src.where}/{fsp.images}"
    require_images(images, info, where)
    require_pair(images, labels, info, where, labels_where=f"{src.where}/{fsp.labels}")
    if meta is not None and (meta.ndim != 2 or meta.shape[0] != images.shape[0]):
        raise IntegrityError(f"{info.name}: metadata does not match the images", path=where,
                             expected=f"{images.shape[0]} x k", found=str(meta.shape))


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
