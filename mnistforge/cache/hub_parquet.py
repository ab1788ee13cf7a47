"""The Hugging Face Hub's parquet copies of official files (``files.<id>.hub_parquet``): the route
:func:`~mnistforge.cache.download.fetch_file` takes when every address of a file failed.  The
copy holds the file's split (``image`` PNGs, ``label``); each official file of that split is
written back as its idx array and kept only where its content matches the hash the registry
pins (a file without one is never taken from it): ``docs/loading.md#the-hubs-parquet-copies``.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .. import settings
from ..errors import HashMismatchError
from ..io.foreign.base import role_of
from ..io.foreign.parquet import read_parquet
from ..io.idx import write_idx
from ..log import get_logger
from ..registry import RemoteFile, list_files
from .verify import Verification, verify_file, write_marker

logger = get_logger(__name__)

__all__ = ["HUB", "MAX_BYTES", "hub_url", "why_not", "place_split"]

HUB = "https://huggingface.co"
#: most bytes accepted for one parquet copy (Fashion-MNIST's train split has 31 MB)
MAX_BYTES = 256 << 20


def hub_url(remote: RemoteFile) -> str | None:
    """The address of ``remote``'s parquet copy (``HF_ENDPOINT`` moves the Hub), or None.

    >>> from mnistforge.registry import get_file
    >>> hub_url(get_file("mnist/t10k-labels-idx1-ubyte.gz")).rsplit("/", 2)[1:]
    ['mnist', 'test-00000-of-00001.parquet']
    """
    if not remote.hub_parquet:
        return None
    return f"{(settings.current().hf_endpoint or HUB).rstrip('/')}/{remote.hub_parquet}"


def why_not(remote: RemoteFile) -> str | None:
    """Why ``remote`` is not taken from its parquet copy, or None."""
    why = ("the registry pins no hash of its content: a copy of it cannot be verified"
           if not (remote.content_sha256 or remote.content_md5) else
           "HF_HUB_OFFLINE is set" if settings.current().hf_offline else None)
    if why:
        logger.info("%s: its Hub parquet copy is not tried: %s", remote.id, why)
    return why


def place_split(parquet: Path, remote: RemoteFile, url: str) -> Verification:
    """Write ``remote`` beside ``parquet`` (its copy, from ``url``), and the other files of its split not
    there yet, each kept if its content hash matches: a wrong ``remote`` is a HashMismatchError."""
    split = next(iter(read_parquet(parquet).splits.values()))   # one file: one split

    def place(f: RemoteFile) -> Verification:
        arr = split.labels if role_of(f.name) == "labels" else split.images
        return _place(arr, f, parquet.parent / f.name, url)

    got = place(remote)
    for f in list_files():
        if f.hub_parquet == remote.hub_parquet and f.id != remote.id \
                and not (parquet.parent / f.name).exists() and not why_not(f):
            try:
                place(f)
                logger.info("%s: placed from the same copy, %s", f.id, url)
            except HashMismatchError as e:
                logger.warning("%s", e)
    return got


def _place(arr: np.ndarray, f: RemoteFile, dest: Path, url: str) -> Verification:
    tmp = dest.with_name(f".hub-{dest.name}")   # its compression suffix kept
    try:
        if arr.dtype.kind in "iu" and arr.ndim == 1:   # the Hub's int64 labels; the official bytes
            arr = arr.astype(np.uint8 if arr.size and 0 <= arr.min() and arr.max() < 256 else np.int32)
        write_idx(tmp, arr)
        try:
            v = verify_file(tmp, f, use_marker=False)
        except HashMismatchError as e:
            raise HashMismatchError(
                f"{f.id}: the Hub's parquet copy {url} does not hold the official content",
                expected=e.expected, found=e.found, hint="nothing was written to the cache") from None
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    v.path = str(dest)
    write_marker(dest, v, {"adopted_from": url})
    return v
