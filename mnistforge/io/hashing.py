"""Hashing: the one place that hashes files, streams and decompressed content."""
from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING

import numpy as np
import xxhash

from ..errors import FormatError, HashMismatchError
from . import compression as _compression
from .compression import compression_of, open_reader
from .types import Readable, StrPath, Writable

if TYPE_CHECKING:
    import numpy.typing as npt
    from _typeshed import ReadableBuffer


CHUNK = 1 << 20
#: compressed bytes read per step of :func:`inflate_to` (small enough that the hashing and
#: writing thread starts early, large enough that handing buffers over costs little)
INFLATE_CHUNK = 1 << 19
#: the most decompressed bytes one step of :func:`inflate_to` produces
INFLATE_OUT = 1 << 18
#: files smaller than this are hashed on the caller's thread: starting a thread and handing
#: buffers over costs more than the hashing it would overlap (milliseconds on a busy machine)
THREAD_FROM = 4 << 20


def sha256_file(path: StrPath, chunk: int = CHUNK) -> str:
    """Return the hex sha256 of a file's bytes.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x"); _ = open(p, "wb").write(b"abc")
    >>> sha256_file(p)[:8]
    'ba7816bf'
    """
    with open(path, "rb") as f:
        return hash_stream(f, md5=False, chunk=chunk)[0]


def hash_stream(f: Readable, *, md5: bool = True, chunk: int = CHUNK) -> tuple[str, str | None, int]:
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


def hash_file(path: StrPath, *, md5: bool = True) -> tuple[str, str | None]:
    """(sha256, md5) of a file's bytes, in one pass (md5 None unless asked for)."""
    with open(path, "rb") as f:
        sha, digest, _ = hash_stream(f, md5=md5)
    return sha, digest


def hash_content(path: StrPath, name: str | None = None, *, md5: bool = True) -> tuple[str, str | None, int] | None:
    """(sha256, md5, size) of a compressed file's decompressed content. The compression follows the suffix of ``name``
    (default: the path's). Returns None for an uncompressed file; raises HashMismatchError when the file is not valid
    for its suffix."""
    p = Path(path)
    if compression_of(name or p.name) is None:
        return None
    with _decompressed(p, name or p.name) as f:
        return hash_stream(f, md5=md5)


@contextlib.contextmanager
def _decompressed(path: Path, name: str) -> Iterator[IO[bytes]]:
    """The decompressed stream of ``path``; a damaged file (while opened or read) is a
    HashMismatchError saying so, a missing one stays FileNotFoundError."""
    comp = compression_of(name)
    try:
        with open_reader(path, name) as f:
            yield f
    except _compression.DECOMPRESS_ERRORS as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise HashMismatchError("cannot decompress", path=path, expected=f"a valid .{comp} file",
                                found=f"{type(e).__name__}: {e}",
                                hint="the file is damaged or incomplete: delete it and fetch again") from None


def sha256_parts(*parts: ReadableBuffer) -> str:
    """The hex sha256 of byte strings (or buffers) joined, e.g. an idx header and an array's bytes.

    >>> sha256_parts(b"a", b"bc") == sha256_parts(b"abc")
    True
    """
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()


#: the fast content hash the registry records next to sha256 (``content_xxh3_128``): xxHash's
#: XXH3, 128 bits (the ``xxhash`` package), about 40x faster than sha256 here.  It identifies
#: content (accidental damage, another file) on a first load; it is not a defence against a
#: crafted collision, so ``check=True`` and ``verify`` hash with sha256 (``gate/policy.py``).
FAST = "xxh3_128"


def xxh3_parts(*parts: ReadableBuffer) -> str:
    """The hex XXH3-128 of byte strings (or buffers) joined, as the registry's ``content_xxh3_128``.

    >>> xxh3_parts(b"a", b"bc") == xxh3_parts(b"abc")
    True
    >>> xxh3_parts(b"abc")[:12]
    '06b05ab6733a'
    """
    h = xxhash.xxh3_128()
    for p in parts:
        h.update(p)
    return h.hexdigest()


def xxh3_file(path: StrPath, chunk: int = CHUNK) -> str:
    """The hex XXH3-128 of a file's bytes (a raw idx file's content, an export's shard)."""
    h = xxhash.xxh3_128()
    # one buffer read into again and again: a fresh bytes object per read costs a page fault
    # per page, more than XXH3 itself
    buf = bytearray(chunk)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def order_free_sha256(rows: npt.ArrayLike, keys: npt.ArrayLike) -> str:
    """A hash of a set of (row, key) items that does not depend on their order.

    Each item is hashed as its row's bytes followed by its key as a big-endian int32 (for images and labels: ``image
    bytes + label``); the result is the sha256 of the sorted item digests joined.  A reordered copy hashes the same.

    >>> import numpy as np
    >>> a, k = np.arange(12, dtype=np.uint8).reshape(3, 4), np.array([1, 2, 3])
    >>> order_free_sha256(a, k) == order_free_sha256(a[::-1], k[::-1])
    True
    >>> order_free_sha256(a, k) == order_free_sha256(a, k[[1, 0, 2]])
    False
    >>> order_free_sha256(a[:0], k[:0]) == hashlib.sha256(b"").hexdigest()
    True
    """
    a = np.ascontiguousarray(rows)
    a = a.reshape(len(a), int(np.prod(a.shape[1:]))).view(np.uint8)   # (0 rows: no -1 to infer)
    k = np.asarray(keys).astype(">i4").view(np.uint8).reshape(len(a), 4)
    items = np.ascontiguousarray(np.concatenate([a, k], axis=1))
    digests = sorted(hashlib.sha256(r).digest() for r in items)
    return hashlib.sha256(b"".join(digests)).hexdigest()


class HashingReader:
    """Read-through wrapper that hashes (sha256 and md5) the bytes as they stream past.

    Lets one pass both decompress or copy a file and hash it.

    >>> import io
    >>> r = HashingReader(io.BytesIO(b"abc")); _ = r.read()
    >>> r.sha256[:8], r.size
    ('ba7816bf', 3)
    """

    def __init__(self, f: Readable) -> None:
        self.f = f
        self._sha = hashlib.sha256()
        self._md5 = hashlib.md5(usedforsecurity=False)
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        b = self.f.read(n)
        self._sha.update(b)
        self._md5.update(b)
        self.size += len(b)
        return b

    def readinto(self, buffer: bytearray | memoryview) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    @property
    def md5(self) -> str:
        return self._md5.hexdigest()


#: what :func:`inflate_to` does with each buffer: a hash's ``update``, a file's ``write``
_Sink = Callable[[bytes], object]
#: one queued step of :class:`_Tee`: the sinks and the buffer handed to each
_Job = tuple[Sequence[_Sink], bytes]


class _Tee:
    """One worker thread that runs ``fn(buf)`` for each queued (fns, buf), in order. hashlib (buffers over 2 kB), file
    writes and ISA-L's inflate release the GIL, so hashing and writing here overlap the decompression on the caller's
    thread. The queue is bounded: a slow worker holds back the reader instead of memory filling."""

    def __init__(self, depth: int = 8):
        self._q: queue.Queue[_Job | None] = queue.Queue(depth)
        self.error: BaseException | None = None
        self._t = threading.Thread(target=self._run, name="mnistforge-tee", daemon=True)
        self._t.start()

    def _run(self) -> None:
        while (item := self._q.get()) is not None:
            if self.error is None:
                try:
                    for fn in item[0]:
                        fn(item[1])
                except BaseException as e:  # handed to the caller's thread
                    self.error = e

    def put(self, fns: Sequence[_Sink], buf: bytes) -> None:
        if self.error is not None:
            raise self.error
        self._q.put((fns, buf))

    def __enter__(self) -> _Tee:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._q.put(None)
        self._t.join()
        if exc_type is None and self.error is not None:
            raise self.error


class _Inline:
    """:class:`_Tee`'s interface, run on the caller's thread (a small file)."""
    error: BaseException | None = None

    def put(self, fns: Sequence[_Sink], buf: bytes) -> None:
        for fn in fns:
            fn(buf)

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        pass


def _worker(size: int) -> _Tee | _Inline:
    """Where :func:`inflate_to` hashes and writes: a second thread for a file of ``size``
    bytes from :data:`THREAD_FROM` up, else the caller's thread."""
    return _Tee() if size >= THREAD_FROM else _Inline()


@dataclass
class Inflated:
    """What :func:`inflate_to` saw: hashes and sizes of the compressed file and of its content
    (None where not asked for; ``sha256`` empty with ``packed=False``)."""

    sha256: str
    md5: str | None
    size: int
    content_sha256: str | None
    content_md5: str | None
    content_size: int


def inflate_to(src: StrPath, out: Writable, compression: str, *, md5: bool = False, content: bool = True,
               content_md5: bool = False, limit: int | None = None,
               chunk: int = INFLATE_CHUNK, packed: bool = True) -> Inflated:
    """Decompress file ``src`` into binary file object ``out``, reading it once and hashing
    both the compressed bytes (sha256 unless ``packed=False``, and md5 if asked) and the content (if ``content``).

    For a file of :data:`THREAD_FROM` bytes or more the hashes and the writes run on a second thread, so on
    two free cores this costs about one decompression; a smaller file is hashed on the caller's thread (a
    thread would cost more than it overlaps). Multi-member gzip (zero padding between members included) gives
    what :func:`~mnistforge.io.compression.open_reader` gives.  Raises :class:`~mnistforge.errors.FormatError`
    for a damaged or truncated stream and for content longer than ``limit`` bytes (found before more than
    ``limit + 1`` bytes are held).

    >>> import io, os, tempfile
    >>> from mnistforge.io.compression import gzip_bytes
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gz"); _ = open(p, "wb").write(gzip_bytes(b"abc"))
    >>> out = io.BytesIO(); got = inflate_to(p, out, "gz")
    >>> out.getvalue(), got.content_sha256[:8], got.content_size
    (b'abc', 'ba7816bf', 3)
    """
    sha = hashlib.sha256() if packed else None
    m = hashlib.md5(usedforsecurity=False) if md5 else None
    csha = hashlib.sha256() if content else None
    cm = hashlib.md5(usedforsecurity=False) if content_md5 else None
    wrapper = [h.update for h in (sha, m) if h is not None]
    unpacked = [h.update for h in (csha, cm) if h is not None] + [out.write]
    size = csize = 0
    gz = compression == "gz"
    try:
        with open(src, "rb") as f, _worker(os.fstat(f.fileno()).st_size) as tee:
            d = _compression.decompressor(compression)
            while buf := f.read(chunk):
                size += len(buf)
                if wrapper:
                    tee.put(wrapper, buf)
                data = buf
                while True:
                    if d.eof:  # a member/stream ended: gzip may pad with zeros, then go on
                        if gz:
                            data = data.lstrip(b"\0")
                        if not data:
                            break
                        d = _compression.decompressor(compression)
                    # pieces of at most INFLATE_OUT: the allocator reuses their memory (one
                    # piece per input chunk, several MB, costs a page fault per page)
                    room = INFLATE_OUT if limit is None else min(INFLATE_OUT, limit - csize + 1)
                    piece = d.decompress(data, room)
                    data = d.unused_data if d.eof else d.unconsumed_tail if gz else b""
                    csize += len(piece)
                    if limit is not None and csize > limit:
                        raise FormatError("decompressed content longer than expected", path=src,
                                          expected=f"at most {limit:,} bytes", found=f"more than {limit:,}",
                                          hint="the file is damaged or another file")
                    if piece:
                        tee.put(unpacked, piece)
                    if d.eof or data or (piece and not gz and not d.needs_input):
                        continue  # more input, a next member, or output the decompressor holds
                    break
            if not d.eof:
                raise FormatError("truncated compressed file", path=src, expected=f"a whole {compression} stream",
                                  found=f"its end missing after {size:,} bytes",
                                  hint="the file was cut short: fetch or copy it again")
    except _compression.DECOMPRESS_ERRORS as e:
        if isinstance(e, OSError) and not isinstance(e, EOFError) and e.errno is not None:
            raise  # a read or write that failed, not a damaged stream
        raise FormatError("cannot decompress", path=src, expected=f"a valid {compression} stream",
                          found=f"{type(e).__name__}: {e}", hint="the file is damaged") from None
    return Inflated(sha.hexdigest() if sha else "", m.hexdigest() if m else None, size,
                    csha.hexdigest() if csha else None, cm.hexdigest() if cm else None, csize)
