"""What was learnt about a file outside the cache, kept while the file stays the same file.

The trust gate's facts about a file (its hashes) are kept in ``<cache>/seen/<key>.json`` with the
file's :func:`identity` when it was hashed, and returned by :func:`recall` only while the file
keeps it (ctime and the inode cannot be set back).  A record is never required: a missing or
read-only cache means hashing again; ``<cache>/seen`` may be deleted at any time.

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); f = os.path.join(d, "x.bin"); _ = open(f, "wb").write(b"abc")
>>> remember(f, {"sha256": "ba78..."}, cache=d, before=os.stat(f))
True
>>> recall(f, cache=d)["sha256"]
'ba78...'
>>> _ = open(f, "ab").write(b"d")     # any change: the record no longer applies
>>> recall(f, cache=d) is None
True
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..errors import MnistforgeError
from ..io.atomic import atomic_file
from ..log import get_logger
from ..settings import cache_home

logger = get_logger(__name__)

__all__ = ["SEEN", "identity", "record_path", "recall", "remember", "forget"]

#: the cache's sub-folder for records of files outside the cache
SEEN = "seen"


def identity(st: os.stat_result) -> list[int]:
    """The facts that change whenever a file is written or replaced: size, mtime, ctime (which,
    unlike mtime, ``cp -p`` and ``tar`` cannot set back) and the inode (new for a replaced file)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def record_path(path: str | os.PathLike[str], cache: str | os.PathLike[str] | None = None, *,
                real: str | None = None) -> Path:
    """Where the record of ``path`` (resolved: ``real``, when the caller has it) lives."""
    real = real or os.path.realpath(path)
    return cache_home(cache) / SEEN / f"{path_key(real)}.json"


def path_key(real: str) -> str:
    """The name a record (or a raw copy's folder) of resolved path ``real`` is kept under."""
    return hashlib.sha256(os.fsencode(real)).hexdigest()[:32]


def recall(path: str | os.PathLike[str], cache: str | os.PathLike[str] | None = None, *,
           st: os.stat_result | None = None) -> dict[str, Any] | None:
    """The facts recorded for ``path`` while it keeps the identity it had, else None; never writes.
    ``st``: the identity to compare with (the ``fstat`` of the descriptor the caller read the
    file through; default: ``stat`` of ``path`` now)."""
    real = os.path.realpath(path)
    try:
        if st is None:
            st = os.stat(path)
        with open(record_path(path, cache, real=real), "rb") as f:
            rec = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("source") != real \
            or rec.get("identity") != identity(st) or not isinstance(rec.get("facts"), dict):
        return None
    facts: dict[str, Any] = rec["facts"]
    return facts


def remember(path: str | os.PathLike[str], facts: dict[str, Any], *, before: os.stat_result,
             cache: str | os.PathLike[str] | None = None, after: os.stat_result | None = None) -> bool:
    """Record ``facts`` about ``path``, hashed while it had the identity of ``before``; whether a
    record was written (not when the file changed since ``before``, read while being written,
    nor when the cache cannot be written).  ``after``: its identity once read (default: now)."""
    try:
        if identity(after if after is not None else os.stat(path)) != identity(before):
            logger.warning("%s changed while it was read; not recorded as checked", path)
            return False
        rec = {"source": os.path.realpath(path), "identity": identity(before), "facts": facts}
        with atomic_file(record_path(path, cache), "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write("\n")
    except (OSError, MnistforgeError) as e:  # a read-only, full or misplaced cache must not stop a load
        logger.debug("cannot record %s: %s", path, e)
        return False
    return True


def forget(path: str | os.PathLike[str], cache: str | os.PathLike[str] | None = None) -> None:
    """Remove the record of ``path`` (a file found damaged must be hashed again next time)."""
    with contextlib.suppress(OSError):
        os.unlink(record_path(path, cache))
