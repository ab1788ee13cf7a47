"""The file formats a registry file may declare (``format`` in ``data/registry.json``), each with
its reader: one table, so that the cache, a folder and a test read a file the same way.

* ``idx``: LeCun's idx files, raw or compressed (:func:`mnistforge.io.idx.read_idx`; raw files are memory-mapped);
* ``npz``: one array of a NumPy ``.npz`` archive (``array``, ``arr_0`` by default: what
  ``np.savez`` calls an unnamed array), never unpickled (:func:`mnistforge.io.foreign.npz.read_npz_array`).

>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "k49-test-labels.npz")
>>> np.savez_compressed(p, np.arange(3, dtype=np.uint8))
>>> read_array(p, "npz").tolist(), FORMATS
([0, 1, 2], ('idx', 'npz'))
"""
from __future__ import annotations

from typing import IO, Callable, cast

import numpy as np

from ..errors import ConfigError
from .types import StrPath
from .idx import read_idx
from .foreign.npz import read_npz_array

__all__ = ["FORMATS", "READERS", "read_array"]


def _idx(path: StrPath | IO[bytes], array: str | None) -> np.ndarray:
    return read_idx(cast("StrPath", path))  # idx is read by path (a file object: a TypeError there)


def _npz(path: StrPath | IO[bytes], array: str | None) -> np.ndarray:
    return read_npz_array(path, array or "arr_0")


#: format -> reader(path, array name or None); ``npz`` also reads an open binary file
READERS: dict[str, Callable[[StrPath | IO[bytes], str | None], np.ndarray]] = {"idx": _idx, "npz": _npz}
FORMATS: tuple[str, ...] = tuple(READERS)


def read_array(path: StrPath | IO[bytes], fmt: str = "idx", array: str | None = None) -> np.ndarray:
    """The array stored in ``path`` in format ``fmt`` (``array``: the ``.npz`` member)."""
    try:
        reader = READERS[fmt]
    except KeyError:
        raise ConfigError("unknown file format", path=path, expected=" or ".join(FORMATS), found=repr(fmt)) from None
    return reader(path, array)
