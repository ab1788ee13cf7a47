"""Raw copies of a folder's compressed files (``load(..., root=FOLDER, keep_raw=True)``), kept in
the cache, never in the folder (``<cache>/local-raw/<key>/``), used only while their sidecar
describes both the source and the copy as they are now (``docs/loading.md``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..io.atomic import atomic_file
from ..io.compression import compression_of, strip_compression
from ..io.hashing import inflate_to, sha256_file
from ..log import get_logger
from .seen import identity as _identity, path_key
from .verify import Verification, read_marker, write_marker

logger = get_logger(__name__)

#: the cache's sub-folder for copies of files outside the cache
LOCAL_RAW = "local-raw"


def copy_path(src: str | os.PathLike[str], cache: str | os.PathLike[str], *, real: str | None = None) -> Path:
    """Where the raw copy of compressed file ``src`` lives under ``cache``.

    >>> copy_path("/data/fashion/train-images-idx3-ubyte.gz", "/c").name
    'train-images-idx3-ubyte'
    >>> copy_path("/a/x-idx1-ubyte.gz", "/c") != copy_path("/b/x-idx1-ubyte.gz", "/c")
    True
    """
    real = real or os.path.realpath(src)
    return Path(cache) / LOCAL_RAW / path_key(real) / strip_compression(os.path.basename(real))


def valid_copy(src: str | os.PathLike[str], cache: str | os.PathLike[str], *, rehash: bool = False
               ) -> tuple[Path, dict[str, Any]] | None:
    """The raw copy of ``src`` and its sidecar record while the record describes both, else None;
    never writes.  ``rehash`` also hashes the copy.  The record's ``source_sha256`` and ``sha256``
    (of the content) are what the trust gate judges: the source as the copy was made from it."""
    real = os.path.realpath(src)
    raw = copy_path(src, cache, real=real)
    rec = read_marker(raw)  # None unless the copy keeps the size and mtime recorded
    if rec is None:
        return None
    try:
        st = os.stat(src)
        copy_st = os.stat(raw)
    except OSError:
        return None
    if rec.get("source") != real or rec.get("source_identity") != _identity(st):
        logger.info("%s changed since its raw copy %s was made", src, raw)
        return None
    if rec.get("copy_identity") != _identity(copy_st):
        logger.info("%s is not the raw copy of %s that was made (replaced or rewritten)", raw, src)
        return None
    if rehash:
        sha = sha256_file(raw)
        if sha != rec.get("sha256"):
            logger.warning("%s: raw copy of %s does not match its record (sha256 %s, recorded %s); "
                           "making it again", raw, src, sha, rec.get("sha256"))
            return None
    return raw, rec


def make_copy(src: str | os.PathLike[str], cache: str | os.PathLike[str], *,
              content_size: int | None = None) -> Path | None:
    """Decompress ``src`` into its raw copy under ``cache`` and record the sidecar; the copy, or
    None when the source changed while it was read (no sidecar then: never trusted).
    ``content_size`` (the idx header's) caps the decompression and must be its exact length
    (FormatError otherwise, nothing renamed into place); OSError when the cache cannot be written.
    """
    src = Path(src)
    if (comp := compression_of(src.name)) is None:
        raise ValueError(f"{src} is not compressed")
    raw = copy_path(src, cache)
    before = os.stat(src)
    logger.info("keeping a decompressed copy of %s at %s", src, raw)
    with atomic_file(raw) as out:
        got = inflate_to(src, out, comp, limit=content_size)
        if content_size is not None and got.content_size != content_size:
            raise FormatError("decompressed content shorter than its idx header says", path=src,
                              expected=f"{content_size:,} bytes", found=f"{got.content_size:,}",
                              hint="the file is truncated or damaged")
    if _identity(os.stat(src)) != _identity(before):
        logger.warning("%s changed while it was read; its raw copy is not recorded", src)
        return None
    # the copy's own identity too: one replaced with the size and mtime its sidecar records
    # (a new inode, a new ctime) is then made again, not served
    write_marker(raw, Verification(str(raw), "derived", got.content_sha256 or ""),
                 extra={"source": os.path.realpath(src), "source_identity": _identity(before),
                        "source_sha256": got.sha256, "copy_identity": _identity(os.stat(raw))})
    return raw
