"""The trust gate's verdict on a folder's files, kept in memory for repeat loads.

A repeat load of a folder asks every memo of the gate again (the folder found, its manifest,
each file's record, its raw copy's sidecar) and each answers from memory; what they decide
together is then what they decided last time.  So once a whole load has been answered by memo
hits alone (:func:`mnistforge.cache.seen.looked`), the files the gate let through and the
statuses it gave are kept under every identity those memos checked: the next load asks one
``stat`` of each path and maps the same files, instead of walking the gate again.  Any change
to any of them, or another registry or cache, and the gate runs in full.

Never used with ``check=True`` (every file is hashed again) or for files read in a format other
than idx.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..cache.seen import known, learn, looked, looked_size, memo_cache_key, unlearn
from ..errors import MnistforgeError
from ..registry import generation

if TYPE_CHECKING:
    import numpy as np

    from ..io.types import StrPath
    from ..registry import DatasetInfo

__all__ = ["verdict_key", "kept_arrays", "keep_verdict"]


class FolderLike(Protocol):
    """What this module asks of :class:`mnistforge.loaders.origins.FolderOrigin` (the gate sits
    below the loaders: it names the attributes, not the class)."""

    where: str
    keep_raw: bool
    status: dict[str, str]
    read_from: dict[str, str | None]


def verdict_key(info: DatasetInfo, src: FolderLike, cache: StrPath | None,
                fnames: tuple[str, ...]) -> tuple[object, ...]:
    """What decides the gate's verdict besides the files: the folder, the dataset, the files
    read, raw copies or not, the cache (records and copies live there), the registry."""
    return ("gate verdict", src.where, info.name, fnames, bool(src.keep_raw),
            memo_cache_key(cache), generation())


def kept_arrays(key: tuple[object, ...], src: FolderLike) -> dict[str, np.ndarray] | None:
    """The files of the verdict kept under ``key``, mapped again (``src.status`` set as that
    load left it), or None: the gate must run."""
    hit = known(key, miss_counts=False)   # a miss here only means asking the gate's own memos
    if hit is None:
        return None
    files, status = hit
    from ..io.idx import read_idx

    try:   # each file's size from the identity just checked: no second stat
        arrays = {fname: read_idx(path, size=looked_size(path)) for fname, path in files.items()}
    except (OSError, ValueError, MnistforgeError):   # the gate, run in full, says what is wrong
        unlearn(key)
        return None
    src.status.update(status)
    return arrays


def keep_verdict(key: tuple[object, ...], src: FolderLike, fnames: tuple[str, ...]) -> None:
    """Keep what the gate just let through, if this whole load was answered by memo hits and
    every one of ``fnames`` was read as an idx file."""
    stamps = looked()
    if stamps is None:
        return
    files = {f: src.read_from.get(f) for f in dict.fromkeys(fnames)}
    if all(files.values()):
        learn(key, (files, dict(src.status)), stamps)
