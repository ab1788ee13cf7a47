"""Products of the one pass over SD19: the 28 x 28 images builders make from each character.

A :class:`Product` names a function from decoded characters (bool ``(n, 128, 128)``, ink True) to
``(n, 28, 28)`` uint8 images, and the characters it covers (every one, or the digits), in walk
order.  The pass that indexes by_write makes the products it is asked for from the same decode
(:func:`mnistforge.sd19.open_sd19`, ``products=``); one asked for later is made by one pass over
its characters (:meth:`~mnistforge.sd19.reader.SD19Source.product`).  Each is kept next to the
index cache, ``sd19-product-<name>.npy`` with a JSON recording the source fingerprint and the
XXH3-128 of the array, so every builder of a run, and of later runs, takes its images from it
instead of decoding SD19 again.  A product whose bytes no longer match its JSON is made again.

>>> import numpy as np
>>> p = Product.of("demo", lambda imgs: imgs[:, ::5, ::5][:, :28, :28].astype(np.uint8), {"step": 5})
>>> p.name.startswith("demo-"), p.digits
(True, False)
>>> idx = np.zeros(3, [("field", "S1")]); idx["field"] = [b"d", b"u", b"d"]
>>> product_rows(idx, Product.of("d", p.make, {}, digits=True)).tolist()
[0, 2]
"""
from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io.atomic import atomic_file
from ..io.hashing import xxh3_parts
from . import index as _index

logger = logging.getLogger(__name__)

__all__ = ["Product", "product_rows", "save_product", "load_product"]

#: Bump when a product's recipe changes its bytes without changing its parameters.
PRODUCT_VERSION = 1


@dataclass(frozen=True)
class Product:
    """28 x 28 images of SD19 characters: ``make`` (picklable: it runs in worker processes) maps
    bool ``(n, 128, 128)`` to uint8 ``(n, 28, 28)``; ``digits``: only the digit rows."""

    name: str
    make: Callable[[np.ndarray], np.ndarray]
    digits: bool = False

    @classmethod
    def of(cls, recipe: str, make: Callable[[np.ndarray], np.ndarray], parameters: dict[str, Any], *,
           digits: bool = False) -> Product:
        """A product named for its recipe and a digest of its parameters (one file per variant)."""
        key = json.dumps({"parameters": parameters, "version": PRODUCT_VERSION, "digits": digits}, sort_keys=True)
        return cls(f"{recipe}-{xxh3_parts(key.encode())[:16]}", make, digits)


def product_rows(index: np.ndarray, product: Product) -> np.ndarray:
    """Index rows a product covers, in walk order (its row ``k`` is the ``k``-th of them)."""
    return np.flatnonzero(index["field"] == b"d") if product.digits else np.arange(len(index))


def _files(folder: Path, name: str) -> tuple[Path, Path]:
    return folder / f"sd19-product-{name}.npy", folder / f"sd19-product-{name}.json"


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def save_product(source: Path, fingerprint: str, name: str, parts: Sequence[np.ndarray]) -> Path | None:
    """Keep the images ``parts`` (joined in order, never copied into one array) for ``source`` in
    the first writable cache folder; returns the folder, or None."""
    parts = [np.ascontiguousarray(p, np.uint8) for p in parts]
    shape = (sum(len(p) for p in parts),) + tuple(parts[0].shape[1:]) if parts else (0, 28, 28)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)), "fortran_order": False, "shape": shape}
    for folder in _index.cache_dirs(source):
        data, meta = _files(folder, name)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with atomic_file(data) as f:
                np.lib.format.write_array_header_1_0(f, header)
                for p in parts:
                    f.write(p.data)
            with atomic_file(meta, "w") as f:
                digest = xxh3_parts(*(p.data for p in parts))
                json.dump({"fingerprint": fingerprint, "xxh3_128": digest, "shape": list(shape)}, f, indent=1)
            return folder
        except OSError as e:
            logger.warning("could not keep the SD19 product %s in %s: %s", name, folder, e)
    return None


def load_product(source: Path, fingerprint: str, name: str) -> np.ndarray | None:
    """The images kept for ``source`` with this fingerprint, read once and checked; else None."""
    for folder in _index.cache_dirs(source):
        data, meta = _files(folder, name)
        if not (meta.is_file() and _regular(data)):   # a FIFO or device there would block the read
            continue
        try:
            doc = json.loads(meta.read_text())
            if doc.get("fingerprint") != fingerprint:
                continue
            images: np.ndarray = np.load(data, allow_pickle=False)
        except (OSError, ValueError) as e:
            logger.warning("ignoring the unreadable SD19 product %s: %s", data, e)
            continue
        digest = xxh3_parts(np.ascontiguousarray(images).data)
        if list(images.shape) != doc.get("shape") or digest != doc.get("xxh3_128"):
            logger.warning("the SD19 product %s does not match its record %s (changed after it was written): "
                           "making it again", data, meta)
            continue
        images.setflags(write=False)
        return images
    return None
