"""Hashing: the one place that hashes files, streams and decompressed content."""
from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import HashMismatchError
from .compression import DECOMPRESS_ERRORS, compression_of, open_reader

CHUNK = 1 << 20


def sha256_file(path, chunk: int = CHUNK) -> str:
    """Return the hex sha256 of a file's bytes.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x"); _ = open(p, "wb").write(b"abc")
    >>> sha256_file(p)[:8]
    'ba7816bf'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def md5_file(path, chunk: int = CHUNK) -> str:
    """Return the hex md5 of a file's bytes (only where md5 is all that is published)."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(chunk), b""):
            h.update(b)
    return h.hexdigest()




def hash_stream(f, *, md5: bool = True, chunk: int = CHUNK) -> tuple[str, str | None, int]:
    """sha256 (and md5) and byte count of everything read from binary file object ``f``."""
    h = hashlib.sha256()
    m = hashlib.md5(usedforsecurity=False) if md5 else None
    n = 0
    for b in iter(lambda: f.read(chunk), b""):
        h.update(b)
        if m is not None:
            m.update(b)
        n += len(b)
    return h.hexdigest(), (m.hexdigest() if m else None), n


def hash_file(path, *, md5: bool = True) -> tuple[str, str | None]:
    """(sha256, md5) of a file's bytes, in one pass (md5 None unless asked for)."""
    with open(path, "rb") as f:
        sha, digest, _ = hash_stream(f, md5=md5)
    return sha, digest


def hash_content(path, name: str | None = None, *, md5: bool = True) -> tuple[str, str | None, int] | None:
    """(sha256, md5, size) of a compressed file's decompressed content.

    The compression follows the suffix of ``name`` (default: the path's).
    Returns None for an uncompressed file; raises HashMismatchError when the
    file is not valid for its suffix.
    """
    path = Path(path)
    comp = compression_of(name or path.name)
    if comp is None:
        return None
    try:
        with open_reader(path, name or path.name) as f:
            return hash_stream(f, md5=md5)
    except DECOMPRESS_ERRORS as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise HashMismatchError(
            "cannot decompress", path=path, expected=f"a valid .{comp} file",
            found=f"{type(e).__name__}: {e}",
            hint="the file is damaged or incomplete: delete it and fetch again") from None


def sha256_parts(*parts) -> str:
    """The hex sha256 of byte strings (or buffers) joined, e.g. an idx header and an array's bytes.

    >>> sha256_parts(b"a", b"bc") == sha256_parts(b"abc")
    True
    """
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()


def order_free_sha256(rows, keys) -> str:
    """A hash of a set of (row, key) items that does not depend on their order.

    Each item is hashed as its row's bytes followed by its key as a big-endian
    int32 (for images and labels: ``image bytes + label``); the result is the
    sha256 of the sorted item digests joined.  A reordered copy hashes the same.

    >>> import numpy as np
    >>> a, k = np.arange(12, dtype=np.uint8).reshape(3, 4), np.array([1, 2, 3])
    >>> order_free_sha256(a, k) == order_free_sha256(a[::-1], k[::-1])
    True
    >>> order_free_sha256(a, k) == order_free_sha256(a, k[[1, 0, 2]])
    False
    """
    import numpy as np

    rows = np.ascontiguousarray(rows).reshape(len(rows), -1).view(np.uint8)
    keys = np.asarray(keys).astype(">i4").view(np.uint8).reshape(len(rows), 4)
    items = np.ascontiguousarray(np.concatenate([rows, keys], axis=1))
    digests = sorted(hashlib.sha256(r).digest() for r in items)
    return hashlib.sha256(b"".join(digests)).hexdigest()


class HashingReader:
    """Read-through wrapper that hashes (sha256 and md5) the bytes as they stream past.

    Lets one pass both decompress or copy a file and hash it.

    Examples
    --------
    >>> import io
    >>> r = HashingReader(io.BytesIO(b"abc")); _ = r.read()
    >>> r.sha256[:8], r.size
    ('ba7816bf', 3)
    """

    def __init__(self, f):
        self.f = f
        self._sha = hashlib.sha256()
        self._md5 = hashlib.md5(usedforsecurity=False)
        self.size = 0

    def read(self, n=-1):
        b = self.f.read(n)
        self._sha.update(b)
        self._md5.update(b)
        self.size += len(b)
        return b

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readable(self):
        return True

    def close(self):
        pass

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    @property
    def md5(self) -> str:
        return self._md5.hexdigest()
