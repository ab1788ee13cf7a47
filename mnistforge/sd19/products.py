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

import contextlib
import io
import json
import logging
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import xxhash

from ..errors import MnistforgeError
from ..io.atomic import atomic_file
from ..io.hashing import xxh3_parts
from . import index as _index

logger = logging.getLogger(__name__)

__all__ = ["Product", "ProductWriter", "product_rows", "is_kept", "load_product"]

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


def _header(shape: tuple[int, ...]) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "|u1", "fortran_order": False, "shape": shape})
    return buf.getvalue()


class ProductWriter:
    """Keeps one product next to the index, written part by part as the pass makes it (never whole
    in memory), under a temporary name renamed when whole.  A failure to write (a full disk, a
    read-only place, something in the way) keeps nothing and only warns: the build goes on."""

    def __init__(self, source: Path, fingerprint: str, name: str) -> None:
        self.fingerprint, self.name = fingerprint, name
        self.digest, self.rows, self.tail = xxhash.xxh3_128(), 0, (28, 28)
        self.f: IO[bytes] | None = None
        self.tmp: str | None = None
        self.room = 0
        for folder in _index.cache_dirs(source):
            self.data, self.meta = _files(folder, name)
            try:
                folder.mkdir(parents=True, exist_ok=True)
                fd, self.tmp = tempfile.mkstemp(prefix=f".{self.data.name}.", suffix=".tmp", dir=folder)
                self.f = os.fdopen(fd, "wb")
                self.room = self.f.write(_header((0, *self.tail)))   # the row count is written at the end
                return
            except OSError as e:
                self._give_up(e)

    def add(self, part: np.ndarray) -> None:
        """Append images (uint8 ``(n, 28, 28)``, the next rows of the product)."""
        if self.f is None:
            return
        part = np.ascontiguousarray(part, np.uint8)
        try:
            self.f.write(part.data)
        except OSError as e:
            self._give_up(e)
            return
        self.digest.update(part.data)
        self.rows, self.tail = self.rows + len(part), tuple(part.shape[1:])

    def __enter__(self) -> ProductWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:   # Ctrl-C or an error in the pass: nothing half-written is kept
            self._give_up(None)
        elif self.f is not None:
            try:
                head = _header((self.rows, *self.tail))
                if len(head) != self.room:   # 128 bytes for any count of 28 x 28 images
                    raise OSError(f"an npy header of {len(head)} bytes, {self.room} bytes left for it")
                self.f.seek(0)
                self.f.write(head)
                self.f.close()
                if os.path.lexists(self.data) and not _regular(self.data):
                    raise OSError(f"{self.data} is not a regular file: left as it is")
                os.replace(self.tmp, self.data)   # type: ignore[arg-type]
                self.tmp = None
                with atomic_file(self.meta, "w") as f:
                    json.dump({"fingerprint": self.fingerprint, "xxh3_128": self.digest.hexdigest(),
                               "shape": [self.rows, *self.tail]}, f, indent=1)
            except (OSError, MnistforgeError) as e:
                self._give_up(e)

    def _give_up(self, e: BaseException | None) -> None:
        if e is not None:
            logger.warning("could not keep the SD19 product %s in %s: %s", self.name, self.data.parent, e)
        if self.f is not None:
            with contextlib.suppress(OSError):
                self.f.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
        self.f, self.tmp = None, None


def _records(source: Path, fingerprint: str, name: str) -> Iterator[tuple[Path, Path, dict[str, Any]]]:
    """(images file, record file, record) of each cache folder recording the product for this
    fingerprint, beside a regular file (a FIFO or device there would block a read)."""
    for folder in _index.cache_dirs(source):
        data, meta = _files(folder, name)
        try:
            doc = json.loads(meta.read_text()) if _regular(meta) and _regular(data) else None
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("fingerprint") == fingerprint:
            yield data, meta, doc


def is_kept(source: Path, fingerprint: str, name: str) -> bool:
    """Whether a product is recorded for ``source`` with this fingerprint (its bytes are checked
    when it is read: :func:`load_product`)."""
    return next(_records(source, fingerprint, name), None) is not None


def load_product(source: Path, fingerprint: str, name: str) -> np.ndarray | None:
    """The images kept for ``source`` with this fingerprint, read once and checked; else None."""
    for data, meta, doc in _records(source, fingerprint, name):
        try:
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
