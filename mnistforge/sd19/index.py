"""The SD19 index: one row per character, its metadata and an exact content hash.

Built in one pass over a source by :func:`mnistforge.sd19.open_sd19` and cached as ``.npy`` files (never pickle) next to
the source, in ``<source>/.mnistforge/``, or under ``$MNISTFORGE_HOME/cache/sd19/<key>/`` when the source folder is not
writable.  A JSON file beside them records the source fingerprint; the cache is reused only while the fingerprint is
unchanged.

>>> import numpy as np
>>> idx = np.zeros(2, INDEX_DTYPE)
>>> idx.dtype.names[:4]
('hsf', 'writer', 'template', 'field')
>>> imgs = np.zeros((3, 128, 128), bool); imgs[1, 5, 5] = True
>>> h = hash_images(imgs); bool(h[0] == h[2]), bool(h[0] == h[1])
(True, False)
>>> find_duplicates(h).tolist()
[-1, -1, 0]
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from .. import settings
from ..io.atomic import atomic_file
from ..io.similar import blake2b_image_digests

logger = logging.getLogger(__name__)

__all__ = [
    "INDEX_DTYPE", "FILE_DTYPE", "file_dtype", "INDEX_VERSION", "hash_images", "hash_packed",
    "find_duplicates", "number_digits", "cache_dirs", "save_cache", "load_cache",
]

#: Bump when the layout or meaning of the cached arrays changes.
INDEX_VERSION = 1

INDEX_DTYPE = np.dtype([
    ("hsf", "u1"),            # partition number 0..7
    ("writer", "i2"),         # NIST writer id
    ("template", "u1"),       # form template id (TT in fWWWW_TT)
    ("field", "S1"),          # b'd', b'u', b'l', b'c'
    ("entry", "i4"),          # index within the writer folder's field file
    ("ascii", "u1"),          # ASCII code of the class (0 = unknown: not joined)
    ("digit_index", "i4"),    # global NIST digit index, -1 for non-digits
    ("duplicate_of", "i4"),   # earlier row with the identical image, else -1
    ("hash", "S16"),          # blake2b-128 of np.packbits(image) (row-major, 2048 bytes)
])


def file_dtype(name_width: int = 96) -> np.dtype:
    """Table of the by_write files the rows live in (one per PNG, or one per .mis)."""
    return np.dtype([
        ("name", f"S{max(1, int(name_width))}"),   # path relative to the hierarchy root (POSIX)
        ("offset", "i8"),         # zip: local header offset (else 0)
        ("csize", "i8"),          # zip: compressed size
        ("usize", "i8"),          # zip: uncompressed size
        ("method", "u2"),         # zip: 0 stored, 8 deflated
        ("crc", "u4"),            # zip: CRC-32
    ])


FILE_DTYPE = file_dtype()


def hash_packed(packed: np.ndarray) -> np.ndarray:
    """Hashes of images already packed row-major to ``(n, 2048)`` bytes."""
    return blake2b_image_digests(np.asarray(packed, np.uint8).reshape(len(packed), -1))


def hash_images(images: np.ndarray) -> np.ndarray:
    """Exact-content hash of each bool ``(n, 128, 128)`` image, as ``S16``."""
    images = np.asarray(images, bool)
    return hash_packed(np.packbits(images.reshape(len(images), -1), axis=1))


def find_duplicates(hashes: np.ndarray) -> np.ndarray:
    """``duplicate_of`` column: for each row the first earlier row with the same hash, else -1."""
    hashes = np.asarray(hashes)
    n = len(hashes)
    out = np.full(n, -1, np.int32)
    if n == 0:
        return out
    order = np.argsort(hashes, kind="stable")   # stable: within a group rows stay ascending
    h = hashes[order]
    new = np.ones(n, bool)
    new[1:] = h[1:] != h[:-1]
    first = order[np.maximum.accumulate(np.where(new, np.arange(n), 0))]
    dup = ~new
    out[order[dup]] = first[dup]
    return out


def number_digits(field: np.ndarray) -> np.ndarray:
    """``digit_index`` column: running number of the digit rows in walk order, -1 elsewhere."""
    isd = np.asarray(field) == b"d"
    out = np.full(len(isd), -1, np.int32)
    out[isd] = np.arange(int(isd.sum()), dtype=np.int32)
    return out


def cache_dirs(source: Path) -> list[Path]:
    """Candidate cache folders for a source, in order of preference."""
    source = Path(source).resolve()
    key = hashlib.blake2b(str(source).encode(), digest_size=8).hexdigest()
    return [source / ".mnistforge", settings.cache_home() / "cache" / "sd19" / key]


def _writable(folder: Path) -> bool:
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent      # the nearest existing ancestor decides
    return os.access(probe, os.W_OK)


def save_cache(source: Path, fingerprint: str, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> Path | None:
    """Save ``arrays`` (name -> ndarray) and ``meta`` for ``source``; returns the folder used."""
    for folder in cache_dirs(source):
        try:
            if not _writable(folder):
                continue
            folder.mkdir(parents=True, exist_ok=True)
            for name, arr in arrays.items():
                with atomic_file(folder / f"sd19-{name}.npy") as f:
                    np.save(f, arr, allow_pickle=False)
            doc = dict(meta, fingerprint=fingerprint, version=INDEX_VERSION, arrays=sorted(arrays))
            with atomic_file(folder / "sd19-index.json", "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
            logger.info("SD19 index cached in %s", folder)
            return folder
        except OSError as e:
            logger.warning("could not cache the SD19 index in %s: %s", folder, e)
    return None


def load_cache(source: Path, fingerprint: str) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """Return ``(arrays, meta)`` cached for ``source`` with this fingerprint, else ``None``."""
    for folder in cache_dirs(source):
        meta_path = folder / "sd19-index.json"
        if not meta_path.is_file():
            continue
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            if meta.get("fingerprint") != fingerprint or meta.get("version") != INDEX_VERSION:
                logger.info("SD19 index cache in %s is stale; rebuilding", folder)
                continue
            arrays = {n: np.load(folder / f"sd19-{n}.npy", allow_pickle=False) for n in meta["arrays"]}
            return arrays, meta
        except (OSError, ValueError, KeyError) as e:
            logger.warning("ignoring unreadable SD19 index cache in %s: %s", folder, e)
    return None
