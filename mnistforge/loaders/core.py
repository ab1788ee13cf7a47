"""``load(name, split, root=None)``: official and built files, from one code path."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DatasetNotFoundError, IntegrityError, MissingFileError
from ..registry import DatasetInfo, get_dataset, get_file, list_datasets
from .sources import CacheSource, FolderSource, find_dataset_folder, locate

logger = logging.getLogger(__name__)

__all__ = ["load", "resolve_target", "DatasetSplit", "detect_dataset"]


class DatasetSplit:
    """One split of a dataset, loaded.

    Attributes
    ----------
    name, split : str
        Dataset and split names (registry names).
    images : numpy.ndarray
        ``uint8``, ``N x 28 x 28``, upright, ink high.  A read-only memory map
        (or a view of one) when a raw copy is available.
    labels : numpy.ndarray
        ``int64``, ``N``.
    classes : list of str
        The character (or name) of each label value: ``classes[labels[i]]``.
    metadata : numpy.ndarray or None
        Structured array with one named int32 field per metadata column
        (QMNIST: label, hsf, writer, index_in_writer, nist_class, nist_index,
        duplicate, unused; EMNIST builds: writer, hsf, field, ascii, entry,
        sd19_row), when asked for and available.
    info : DatasetInfo
        The registry entry.
    source : str
        Where the files came from (``"cache ..."`` or ``"folder ..."``).
    status : dict
        Verification status of each file used (``exact``, ``content``, ...).

    Examples
    --------
    >>> ds = load("mnist", "test")          # doctest: +SKIP
    >>> len(ds), ds.images.shape, ds.classes[ds.labels[0]]   # doctest: +SKIP
    (10000, (10000, 28, 28), '7')
    """

    def __init__(self, name, split, images, labels, info: DatasetInfo, metadata=None,
                 source="", status=None, orientation="upright"):
        self.name = name
        self.split = split
        self.images = images
        self.labels = labels
        self.info = info
        self.classes = list(info.classes)
        self.metadata = metadata
        self.source = source
        self.status = dict(status or {})
        self.orientation = orientation

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])

    def __repr__(self) -> str:
        meta = f", metadata={list(self.metadata.dtype.names)}" if self.metadata is not None else ""
        return (f"DatasetSplit({self.name!r}, {self.split!r}, n={len(self)}, "
                f"classes={len(self.classes)}{meta}, source={self.source!r})")

    def to_numpy(self):
        """``(images, labels)`` as NumPy arrays (images may be a read-only memory map)."""
        return self.images, self.labels

    def to_torch(self):
        """A ``torch.utils.data.TensorDataset(images uint8 N x 28 x 28, labels int64)``.

        torch is optional (``pip install mnistforge[torch]``); a clear
        ConfigError says so when it is missing.
        """
        from .convert import to_torch
        return to_torch(self)

    def to_hf(self):
        """A Hugging Face ``datasets.Dataset`` (see :func:`mnistforge.loaders.hf_features`)."""
        from .convert import to_hf
        return to_hf(self)


def _view(arr, sl):
    return arr if arr is None or sl is None else arr[sl]


def load(name, split="train", *, root=None, download=True, with_metadata=False, cache=None,
         keep_raw=None, offline=None, progress=None) -> DatasetSplit:
    """Load one split of a dataset: official files from the cache, or built files.

    Parameters
    ----------
    name : str
        Registry name (``mnist``, ``qmnist``, ``emnist-letters``, ...).  A
        folder path is accepted too (the dataset is recognised from the file
        names, see :func:`resolve_target`).
    split : str
        ``train``, ``test``; ``test10k``, ``test50k``, ``nist`` (qmnist);
        ``validation``, ``train-without-validation`` (EMNIST balanced sets).
    root : path, optional
        A folder of idx files with the official names (e.g. a build folder):
        looked for in ``root`` and ``root/<name>`` (and ``root/<group>``).
        Without it, official files come from the cache (fetched and verified
        as needed).
    download : bool
        Allow network access for missing official files (default true;
        ``MNISTFORGE_OFFLINE=1`` forbids it anyway).
    with_metadata : bool
        Also load the metadata (QMNIST's 8 columns; EMNIST writer side files
        of built folders).  ``metadata`` stays None when there is none.
    cache : path, optional
        Cache folder (default ``$MNISTFORGE_HOME`` or the platform cache).
    keep_raw : bool, optional
        Keep a decompressed copy in the cache for millisecond memory-mapped
        loads (default true, or ``MNISTFORGE_KEEP_RAW``).

    Returns
    -------
    DatasetSplit

    Examples
    --------
    >>> import mnistforge
    >>> ds = mnistforge.load("emnist-letters", "test")          # doctest: +SKIP
    >>> ds.classes[ds.labels[0]]                                # doctest: +SKIP
    'W'
    >>> built = mnistforge.load("qmnist", "test10k", root="build/", with_metadata=True)  # doctest: +SKIP
    """
    if root is None and isinstance(name, (str, os.PathLike)) and name not in list_datasets() \
            and Path(name).is_dir():
        name, root = detect_dataset(name), Path(name)
    if root is not None:
        # An exported Hugging Face repository (README.md + data/<name>/): formats/hf.py reads it.
        from ..formats.hf import is_hf_repo, load_split_from_repo
        if is_hf_repo(root, name):
            return load_split_from_repo(root, name, split, with_metadata=with_metadata)
    info = get_dataset(name)
    if info.kind != "dataset":
        raise DatasetNotFoundError(
            f"{name!r} cannot be loaded as images", expected="a dataset such as "
            + ", ".join(list_datasets()), found=f"a {info.kind}",
            hint=f"`mnistforge fetch {name}` downloads it")
    sp = info.split(split)
    if root is not None:
        src = FolderSource(info, root)
    else:
        src = CacheSource(info, cache=cache, download=download, offline=offline,
                          keep_raw=keep_raw, progress=progress)
    fsp = info.file_split(split)
    images = src.open(fsp.images)
    lab = src.open(fsp.labels) if fsp.labels != fsp.images else images
    meta_raw = None
    if with_metadata and fsp.metadata:
        meta_raw = lab if fsp.metadata == fsp.labels else src.open(fsp.metadata, required=False)
    if fsp.labels_column is not None:
        if lab.ndim != 2 or lab.shape[1] <= fsp.labels_column:
            raise IntegrityError("label table has the wrong shape", path=fsp.labels,
                                 expected=f"N x >{fsp.labels_column} columns",
                                 found=str(lab.shape))
        labels = lab[:, fsp.labels_column]
    else:
        labels = lab
    _check_shapes(info, fsp, images, labels, meta_raw, src)

    sl = None
    n = images.shape[0]
    if sp.is_view:
        if sp.rows is not None:
            sl = slice(sp.rows[0], sp.rows[1])
        elif sp.last or sp.drop_last:
            k = src.length(info.split(sp.last or sp.drop_last))
            if k > n:
                raise IntegrityError(f"{info.name}: validation larger than train", path=src.where,
                                     expected=f"at most {n} rows", found=f"{k}")
            sl = slice(n - k, n) if sp.last else slice(0, n - k)
    images, labels, meta_raw = _view(images, sl), _view(labels, sl), _view(meta_raw, sl)
    if src.orientation == "transposed":
        images = images.transpose(0, 2, 1)
    labels = np.asarray(labels, dtype=np.int64)
    metadata = _structured(meta_raw, info) if meta_raw is not None else None
    if src.kind == "cache" and len(labels) != sp.count:
        raise IntegrityError(f"{info.name} {split}: wrong number of rows", path=src.where,
                             expected=f"{sp.count} (registry)", found=str(len(labels)))
    logger.info("loaded %s %s: %d images from %s", info.name, split, len(labels), src)
    ds = DatasetSplit(info.name, split, images, labels, info, metadata, str(src), src.status,
                      src.orientation)
    if getattr(src, "classes", None):
        ds.classes = list(src.classes)
    return ds


def _check_shapes(info, fsp, images, labels, meta, src) -> None:
    where = f"{src.where}/{fsp.images}"
    if images.ndim != 3 or images.dtype != np.uint8:
        raise IntegrityError(f"{info.name}: images have the wrong shape or type", path=where,
                             expected="uint8 N x H x W", found=f"{images.dtype} {images.shape}")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise IntegrityError(f"{info.name}: labels do not match the images", path=where,
                             expected=f"{images.shape[0]} labels", found=str(labels.shape))
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
    for i, f in enumerate(dt.names):
        out[f] = meta[:, i]
    return out


# --- targets -----------------------------------------------------------------

def detect_dataset(folder) -> str:
    """Which registry dataset a folder of idx files holds.

    Decided by the file names; when several datasets share them (MNIST,
    Fashion-MNIST and KMNIST use the same names) by the build manifest, the
    folder name, then the hash of the test labels; MNIST otherwise.
    """
    from ..outputs import read_manifest
    from ..sources.verify import hash_content, hash_file

    folder = Path(folder)
    cands = [n for n in list_datasets() if find_dataset_folder(folder, get_dataset(n))]
    if not cands:
        raise MissingFileError(
            "no dataset files recognised", path=folder,
            expected="idx files under official names (e.g. train-images-idx3-ubyte.gz, "
                     "qmnist-test-images-idx3-ubyte.gz, emnist-letters-train-images-idx3-ubyte.gz)",
            found=", ".join(sorted(p.name for p in folder.iterdir())[:8]) or "an empty folder")
    if len(cands) == 1:
        return cands[0]
    # Prefer candidates whose files sit directly in the folder over sub-folders.
    direct = [n for n in cands if find_dataset_folder(folder, get_dataset(n)) == folder]
    pool = direct or cands
    if len(pool) == 1:
        return pool[0]
    man = read_manifest(folder) or {}
    for key in ("dataset", "name", "target", "kind"):
        v = man.get(key)
        if v in pool:
            return v
    base = folder.name.lower()
    named = sorted((n for n in pool if n in base), key=len, reverse=True)
    if named:
        return named[0]
    for n in pool:
        info = get_dataset(n)
        test = info.splits.get("test")
        p = locate(folder, test.labels) if test and test.labels else None
        if p is None:
            continue
        try:
            remote = get_file(f"{info.group}/{test.labels}")
        except KeyError:
            continue
        sha, _ = hash_file(p)
        if sha == remote.sha256:
            return n
        content = hash_content(p) if p.suffix in (".gz", ".xz", ".bz2") else (sha, None, 0)
        if content and content[0] == remote.content_sha256:
            return n
    family = {"mnist", "fashion-mnist", "kmnist"}
    if set(pool) <= family and "mnist" in pool:
        logger.info("%s: MNIST-style file names; assuming mnist (say FOLDER:fashion-mnist "
                    "or FOLDER:kmnist otherwise)", folder)
        return "mnist"
    raise ConfigError(
        "the folder holds several datasets", path=folder, expected="one dataset",
        found=", ".join(pool), hint=f"pick one with {folder}:{pool[0]}[:SPLIT]")


def _share_file_names(names) -> bool:
    """Whether datasets use the same file names (MNIST, Fashion-MNIST, KMNIST do)."""
    files = [frozenset(sp.images for sp in get_dataset(n).splits.values() if sp.images)
             for n in names]
    return len(set(files)) < len(files)


def datasets_in_folder(folder) -> list[str]:
    """Every registry dataset whose files are in ``folder`` (a build folder may hold several).

    Datasets sharing file names (MNIST, Fashion-MNIST, KMNIST) are told apart
    by :func:`mnistforge.loaders.detect_dataset`.
    """
    by_folder: dict = {}
    folder = Path(folder)
    for n in list_datasets():
        f = find_dataset_folder(folder, get_dataset(n))
        if f is not None:
            by_folder.setdefault(f, []).append(n)
    names = []
    for f, ns in by_folder.items():
        if len(ns) > 1 and _share_file_names(ns):
            try:
                one = detect_dataset(f)
            except ConfigError:  # several distinct datasets side by side: all of them
                one = None
            if one in ns:
                ns = [one]
        names += [n for n in ns if n not in names]
    return names


def resolve_target(text, default_split=None):
    """Parse a CLI target into ``(name, split, root)``.

    ``text`` may be ``NAME``, ``NAME:SPLIT``, ``FOLDER``, ``FOLDER:SPLIT``,
    ``FOLDER:NAME`` or ``FOLDER:NAME:SPLIT`` (for a folder holding several
    datasets).  ``root`` is None for registry names (load from the cache), the
    folder path otherwise.  ``split`` is ``default_split`` when not given.

    Examples
    --------
    >>> resolve_target("qmnist:test10k")
    ('qmnist', 'test10k', None)
    >>> resolve_target("emnist-letters", default_split="train")
    ('emnist-letters', 'train', None)
    """
    text = os.fspath(text)
    parts = text.split(":")
    folder, rest = None, []
    if os.path.isdir(text):
        folder = text
    else:
        for k in range(len(parts) - 1, 0, -1):
            head = ":".join(parts[:k])
            if head and os.path.isdir(head):
                folder, rest = head, parts[k:]
                break
    known = list_datasets()
    if folder is not None:
        if rest and rest[0] in known:
            name = rest.pop(0)
        else:
            name = detect_dataset(folder)
        if len(rest) > 1:
            raise ConfigError("cannot parse target", found=text,
                              expected="FOLDER, FOLDER:SPLIT or FOLDER:NAME:SPLIT")
        split = rest[0] if rest else default_split
        root = Path(folder)
    else:
        if len(parts) > 2:
            raise ConfigError("cannot parse target", found=text,
                              expected="NAME, NAME:SPLIT, FOLDER or FOLDER:SPLIT",
                              hint="a folder must exist to be used as a target")
        name = parts[0]
        if name not in known:
            looks_like_path = os.sep in name or name.startswith(".") or "/" in name
            if looks_like_path:
                raise MissingFileError("no such folder", path=name, expected="a folder of idx files",
                                       found="nothing there")
            get_dataset(name)  # raises DatasetNotFoundError naming the choices
        split = parts[1] if len(parts) > 1 else default_split
        root = None
    if split is not None:
        get_dataset(name).split(split)
    return name, split, root
