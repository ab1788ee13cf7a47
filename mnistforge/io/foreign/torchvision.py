"""torchvision's dataset folders: ``root/<Name>/raw/`` holds the idx files (gzipped or not).

``MNIST``, ``FashionMNIST``, ``KMNIST``, ``QMNIST`` and ``EMNIST`` all keep the release files (or their decompressed
copies) in ``raw/``; that is what is read here, through :func:`mnistforge.io.idx.read_idx`. ``processed/*.pt`` files
are written by ``torch.save``: pickles, which run code when loaded. They are never opened as such; when ``raw/`` is
missing the copy is refused with :class:`~mnistforge.errors.UnsafeFormatError` and the way out.

>>> import numpy as np, tempfile, os
>>> from mnistforge.io.idx import write_idx
>>> raw = os.path.join(tempfile.mkdtemp(), "MNIST", "raw"); os.makedirs(raw)
>>> write_idx(os.path.join(raw, "t10k-images-idx3-ubyte"), np.zeros((2, 28, 28), np.uint8))
>>> write_idx(os.path.join(raw, "t10k-labels-idx1-ubyte.gz"), np.array([3, 4], np.uint8))
>>> copy = read_torchvision(os.path.dirname(os.path.dirname(raw)), {"MNIST": "mnist"})
>>> copy.hint, list(copy.splits), copy.splits["test"].labels.tolist()
('mnist', ['test'], [3, 4])

Which dataset a class folder holds (``FashionMNIST`` -> ``fashion-mnist``) is a
registry fact (:func:`mnistforge.registry.torchvision_folders`), passed in by
the layers that know datasets; without it the folder's name, lower-cased, is the hint.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ...errors import FormatError, UnsafeFormatError
from ..compression import strip_compression
from ..idx import read_idx
from .base import ForeignCopy, pair_arrays
from ..types import StrPath

__all__ = ["raw_folders", "read_idx_folder", "read_torchvision", "refuse_pickle"]


def refuse_pickle(path: StrPath, what: str = "a pickle") -> UnsafeFormatError:
    """The error for a pickle-based file (``torch.save`` output, ``.pkl``): never loaded."""
    return UnsafeFormatError(
        f"refused: {what}", path=path, expected="idx, npz/npy, CSV, parquet or .mat data",
        found="a pickle (torch.save / pickle.dump), which runs arbitrary code when loaded",
        hint="mnistforge never unpickles; use torchvision's raw/ folder next to processed/ "
             "(torchvision re-creates it with download=True), or export the tensors with "
             "numpy.savez")


def _is_idx_name(name: str) -> bool:
    """``train-images-idx3-ubyte[.gz]``, also Kaggle's ``train-images.idx3-ubyte``."""
    return re.search(r"[-.]idx\d", name) is not None and not name.endswith((".pt", ".pkl", ".zip"))


def read_idx_folder(folder: StrPath, hint: str | None = None, fmt: str = "idx") -> ForeignCopy:
    """Every idx image/label pair of a folder, paired by file name (any idx names)."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file() and _is_idx_name(p.name))
    arrays: dict[str, np.ndarray] = {}
    seen: set[str] = set()
    for p in files:  # sorted: a decompressed twin (torchvision keeps both) comes first
        if strip_compression(p.name) in seen:
            continue
        seen.add(strip_compression(p.name))
        arrays[p.name] = read_idx(p, mmap=False)   # in memory: never a map of the user's file
    if not arrays:
        raise FormatError("no idx files", path=folder, expected="files named *-idx?-ubyte[.gz]",
                          found=", ".join(sorted(p.name for p in folder.iterdir())[:6]) or "nothing")
    splits = pair_arrays(arrays, str(folder))
    for s in splits.values():
        s.hint = s.hint or hint
    return ForeignCopy(fmt, folder, splits, hint=hint)


def raw_folders(root: StrPath, classes: Mapping[str, str] | None = None) -> list[tuple[str | None, Path]]:
    """``[(dataset hint, raw folder)]`` under a torchvision root (``root/<Name>/raw`` or ``root/raw``);
    ``classes`` maps a class folder to the dataset it holds (see the module doc)."""
    root = Path(root)
    classes = classes or {}
    out: list[tuple[str | None, Path]] = []
    if (root / "raw").is_dir():
        out.append((classes.get(root.name), root / "raw"))
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        if (sub / "raw").is_dir():
            out.append((classes.get(sub.name, sub.name.lower()), sub / "raw"))
    return out


def _processed(root: StrPath) -> list[Path]:
    root = Path(root)
    return sorted(root.glob("processed/*.pt")) + sorted(root.glob("*/processed/*.pt"))


def read_torchvision(root: StrPath, classes: Mapping[str, str] | None = None) -> ForeignCopy:
    """A torchvision root (or one ``<Name>`` folder of it) -> the splits of its ``raw/`` idx files
    (``classes``: class folder -> dataset, for the hint)."""
    root = Path(root)
    raws = raw_folders(root, classes)
    pts = _processed(root)
    if not raws or not any(any(_is_idx_name(p.name) for p in r.iterdir()) for _, r in raws):
        if pts:
            raise refuse_pickle(pts[0], "torchvision processed/*.pt files without raw/ idx files")
        raise FormatError("not a torchvision dataset folder", path=root,
                          expected="<Name>/raw/ with idx files", found="no raw/ folder")
    if len(raws) > 1:
        raise FormatError("several torchvision datasets", path=root, expected="one",
                          found=", ".join(str(r.parent.name) for _, r in raws),
                          hint=f"give one of them, e.g. {raws[0][1].parent}")
    hint, raw = raws[0]
    copy = read_idx_folder(raw, hint, fmt="torchvision")
    copy.path = root
    if pts:
        copy.notes.append(f"{len(pts)} processed/*.pt files (pickles) not read")
    return copy
