"""Placing a verified copy of an official file in the cache without a download
(:func:`place_in_cache`): written from a file on the machine or from arrays, checked by the cache's
own verification before the rename; what decides that a copy *is* the official file is
:mod:`mnistforge.checks.adopt`'s.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from ..errors import ConfigError, PathArg
from ..io import compression
from ..io.atomic import output_lock
from ..io.idx import write_idx
from ..log import get_logger
from ..registry import RemoteFile, get_file
from .download import FetchResult, _cached, cache_path
from .verify import verify_file, write_marker

logger = get_logger(__name__)

__all__ = ["place_in_cache"]

CHUNK = 1 << 20


def place_in_cache(remote: str | RemoteFile, *, source: PathArg | None = None,
                   arrays: np.ndarray | None = None, root: PathArg | None = None, origin: str = "") -> FetchResult:
    """Put ``remote`` into the cache from ``source`` (an idx file, any compression) or ``arrays``
    (its content); the verified result.  ``origin``: where it came from (logged).  Bytes that are
    not the registry's file or content raise HashMismatchError, nothing written."""
    remote = get_file(remote)
    if remote.archive:
        raise ConfigError(f"{remote.id} is kept in the cache inside {remote.archive}",
                          expected="a file the cache keeps by itself", found=remote.id,
                          hint=f"adopt the archive {remote.archive} itself")
    if (source is None) == (arrays is None):
        raise ConfigError("place_in_cache() needs one of source= or arrays=", expected="one",
                          found="both" if source is not None else "neither")
    dest = cache_path(remote, root)
    if dest.is_file():
        return _cached(remote, dest, rehash=False)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with output_lock(dest, wait=True):
        if dest.is_file():  # another process placed it meanwhile
            return _cached(remote, dest, rehash=False)
        tmp = dest.with_name(f".adopting-{dest.name}")   # verified, then renamed
        try:
            if source is not None:
                _write_file(Path(source), remote, tmp)
            else:
                write_idx(tmp, np.asarray(arrays))
            v = verify_file(tmp, remote, use_marker=False)
            if not v.verified:  # nothing pinned: a copy is adopted only when it can be verified
                raise ConfigError(f"{remote.id}: the registry pins no hash of it",
                                  expected="a file the registry's hashes can verify", found=f"sha256 {v.sha256}",
                                  hint="place it by hand if you trust it; nothing was written")
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        v.path = str(dest)
        write_marker(dest, v, {"adopted_from": origin} if origin else None)
    logger.info("%s: %s (adopted from %s)", dest, v.text, origin or source or "arrays")
    return FetchResult(remote, dest, v.status, v.sha256, downloaded=False)


def _write_file(source: Path, remote: RemoteFile, tmp: Path) -> None:
    with open(source, "rb") as f:
        comp = compression.sniff_compression(f.read(8))
    if comp == remote.compression or remote.compression not in ("gz", "xz", "bz2", None):
        shutil.copyfile(source, tmp)   # the same wrapper (or an archive, kept whole): byte for byte
        return
    with open(tmp, "wb") as out, compression.open_sniffed(source) as f:
        writer = compression.open_writer(out, remote.compression, 6)
        while chunk := f.read(CHUNK):
            writer.write(chunk)
        if writer is not out:
            writer.close()
