"""NumPy files: Keras-style ``.npz`` (``x_train``, ``y_train``, ``x_test``, ``y_test``, or one pair)
and ``.npy`` pairs (``x_train.npy`` + ``y_train.npy``, ``images.npy`` + ``labels.npy``...).

Always ``allow_pickle=False``: an object array (a pickle inside the file) is
refused with :class:`~mnistforge.errors.UnsafeFormatError`, never unpickled.

>>> import numpy as np, tempfile, os
>>> d = tempfile.mkdtemp()
>>> np.savez(os.path.join(d, "mnist.npz"), x_test=np.zeros((3, 28, 28), np.uint8), y_test=np.arange(3))
>>> copy = read_npz(os.path.join(d, "mnist.npz"))
>>> copy.format, list(copy.splits), copy.splits["test"].images.shape
('npz', ['test'], (3, 28, 28))
"""
from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import IO

import numpy as np

from ...errors import FormatError, UnsafeFormatError
from .base import ForeignCopy, pair_arrays, role_of, split_of
from ..types import StrPath


__all__ = ["load_array", "read_npy_pair", "read_npy_folder", "read_npz", "read_npz_array"]


def _refuse(path: StrPath | IO[bytes], e: Exception) -> UnsafeFormatError:
    return UnsafeFormatError(
        "holds pickled Python objects", path=path, expected="plain numeric arrays",
        found=f"an object array ({e})",
        hint="reading it would unpickle, which can run any code; save the arrays as numbers "
             "(np.savez with uint8/int arrays) and try again")


def load_array(path: StrPath) -> np.ndarray:
    """One ``.npy`` file, never unpickling, read into memory (never a map of the user's file: a
    later write to it cannot change the array)."""
    try:
        arr: np.ndarray = np.load(path, allow_pickle=False)  # a .npy file: one array
        return arr
    except ValueError as e:
        if "pickle" in str(e).lower() or "object" in str(e).lower():
            raise _refuse(path, e) from None
        raise FormatError("not a readable .npy file", path=path, expected="a NumPy array", found=str(e)) from e


def read_npz_array(path: StrPath | IO[bytes], key: str = "arr_0") -> np.ndarray:
    """The array ``key`` of an ``.npz`` archive (a release file such as Kuzushiji-49's
    ``k49-test-imgs.npz``), never unpickling; a missing key or an unreadable file is a
    :class:`~mnistforge.errors.FormatError` naming what the archive holds."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if key not in z.files:
                raise FormatError("the .npz archive lacks the array", path=path, expected=f"an array named {key!r}",
                                  found=", ".join(z.files) or "no arrays",
                                  hint="the file is not the release file: delete it and fetch it again")
            try:
                arr: np.ndarray = z[key]
                return arr
            except ValueError as e:
                if "pickle" in str(e).lower() or "object" in str(e).lower():
                    raise _refuse(f"{path}[{key}]", e) from None
                raise FormatError("not a readable .npz array", path=f"{path}[{key}]", expected="a NumPy array",
                                  found=str(e), hint="delete it and fetch it again") from None
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as e:
        raise FormatError("not a readable .npz archive", path=path, expected="a zip of .npy arrays",
                          found=str(e) or type(e).__name__, hint="delete it and fetch it again") from e


def read_npz(path: StrPath) -> ForeignCopy:
    """A ``.npz`` archive of image/label arrays, split by the key names."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as z:
            for key in z.files:
                if role_of(key) is None:
                    continue
                try:
                    arrays[key] = z[key]
                except ValueError as e:
                    raise _refuse(f"{path}[{key}]", e) from None
    except (zipfile.BadZipFile, OSError) as e:
        raise FormatError("not a readable .npz archive", path=path, expected="a zip of .npy arrays",
                          found=str(e)) from e
    splits = pair_arrays(arrays, str(path), default_split=split_of(path.name))
    return ForeignCopy("npz", path, splits)


def read_npy_pair(images: StrPath, labels: StrPath) -> ForeignCopy:
    """Two ``.npy`` files: the images and their labels."""
    images, labels = Path(images), Path(labels)
    sp = split_of(images.name)
    splits = pair_arrays({"images": load_array(images), "labels": load_array(labels)},
                         f"{images.parent}", default_split=sp)
    s = next(iter(splits.values()))
    s.where = f"{images}, {labels}"
    return ForeignCopy("npy", images, splits)


def read_npy_folder(folder: StrPath) -> ForeignCopy:
    """Every ``.npy`` image/label pair of a folder (``x_train.npy``/``y_train.npy``...)."""
    folder = Path(folder)
    arrays = {p.name: load_array(p) for p in sorted(folder.glob("*.npy")) if role_of(p.name)}
    return ForeignCopy("npy", folder, pair_arrays(arrays, str(folder)))
