"""MATLAB ``.mat`` files, as the official EMNIST release ships them (``emnist-letters.mat``).

The layout is a struct ``dataset`` with ``train`` and ``test`` structs holding ``images`` (``N x 784`` uint8),
``labels`` (``N x 1``) and ``writers`` (``N x 1``, the only official source of EMNIST writer ids, kept here as the
metadata column ``writer``: the name EMNIST builds give it), plus ``mapping`` (label -> ASCII codes). Files with plain
top-level variables (``x_train``, ``y_train``...) work too.  Read with :func:`scipy.io.loadmat` (MATLAB 4/5/7 files;
7.3 files are HDF5 and refused with a hint), which builds arrays and structs only: no code runs.

>>> import numpy as np, scipy.io, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "emnist-letters.mat")
>>> part = {"images": np.zeros((2, 784), np.uint8), "labels": np.array([[1], [2]]),
...         "writers": np.array([[7], [9]])}
>>> scipy.io.savemat(p, {"dataset": {"train": part, "test": part, "mapping": np.array([[1, 65]])}})
>>> copy = read_mat(p)
>>> sorted(copy.splits), copy.splits["train"].metadata["writer"].tolist(), copy.hint
(['test', 'train'], [7, 9], 'emnist-letters')
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import FormatError
from .base import ForeignCopy, ForeignSplit, pair_arrays, split_key, split_of
from ..types import StrPath


__all__ = ["read_mat"]

#: struct fields kept as metadata -> their column name (the registry's EMNIST field ``writer``)
META_KEYS = {"writers": "writer", "writer": "writer"}


def _loadmat(path: Path) -> dict[str, Any]:
    with open(path, "rb") as f:
        head = f.read(512)
    if head[:4] == b"\x89HDF" or b"MATLAB 7.3" in head[:128]:
        raise FormatError("a MATLAB 7.3 (HDF5) file", path=path,
                          expected="a MATLAB 5/7 .mat file (what EMNIST ships)",
                          found="HDF5 container",
                          hint="save it again with MATLAB's -v7 option, or export the arrays "
                               "to .npz")
    # scipy.io here, where a .mat file is read: it pulls in scipy.sparse and the MATLAB readers,
    # 0.27 s of every process's start (a third of `import mnistforge`) for one rare format
    from scipy.io import loadmat

    try:
        mat: dict[str, Any] = loadmat(path, simplify_cells=True)
        return mat
    except (ValueError, TypeError, NotImplementedError, OSError) as e:
        raise FormatError("unreadable .mat file", path=path, expected="a MATLAB 5/7 file", found=str(e)) from e


def read_mat(path: StrPath) -> ForeignCopy:
    """A ``.mat`` file -> its splits (EMNIST struct layout or paired top-level variables)."""
    path = Path(path)
    mat = _loadmat(path)
    hint, _ = split_key(path.name)
    notes: list[str] = []
    ds = mat.get("dataset")
    if isinstance(ds, dict):
        splits = {}
        for name, part in ds.items():
            if not isinstance(part, dict) or "images" not in part or "labels" not in part:
                continue
            meta = {col: np.asarray(part[k]).reshape(-1) for k, col in META_KEYS.items() if k in part}
            rows = np.asarray(part["images"]).shape[0] if np.ndim(part["images"]) else 0
            for col, v in meta.items():  # a writer per image, or none: never a silent mismatch
                if v.shape[0] != rows:
                    raise FormatError(f"dataset.{name}: {col}s do not match the images", path=path,
                                      expected=f"{rows} {col} ids (one per image)", found=f"{v.shape[0]}",
                                      hint="the file is damaged or not EMNIST's layout")
            splits[name] = ForeignSplit(split_of(name) or name, np.asarray(part["images"]), np.asarray(part["labels"]),
                                        f"{path} [dataset.{name}]", meta, hint)
        if "mapping" in ds:
            notes.append(f"mapping: {np.asarray(ds['mapping']).shape[0]} label -> ASCII rows")
        if not splits:
            raise FormatError("no image/label structs", path=path,
                              expected="dataset.train.images / dataset.train.labels", found=", ".join(ds))
        return ForeignCopy("mat", path, splits, notes, hint)
    arrays = {k: np.asarray(v) for k, v in mat.items() if not k.startswith("__")}
    return ForeignCopy("mat", path, pair_arrays(arrays, str(path), split_of(path.name)), notes, hint)
