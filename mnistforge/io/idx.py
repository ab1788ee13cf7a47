"""The idx format (MNIST's own): read and write every type, any number of dims.

Layout (big-endian): two zero bytes, a type byte (:data:`TYPES`), the number of dims, one uint32 per dim, then
the data in row-major order.

Files may be raw or compressed (``.gz``, ``.xz``, ``.bz2``, chosen by suffix). Raw files open as read-only
memory maps. Every malformed input raises :class:`~mnistforge.errors.IdxFormatError` naming the path, what was
expected and what was found, *before* anything large is allocated: the header is parsed and checked first, and
decompression is capped at the size the header claims.

>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "x-idx3-ubyte.gz")
>>> write_idx(p, np.arange(24, dtype=np.uint8).reshape(2, 3, 4))
>>> read_idx(p).shape
(2, 3, 4)
"""
from __future__ import annotations

import errno
import hashlib
import math
import os
import stat
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import IdxFormatError
from . import compression as _compression
from .compression import compression_of, decompressor, open_reader, open_writer
from .hashing import sha256_parts, xxh3_parts
from .types import StrPath
from .atomic import atomic_file

if TYPE_CHECKING:
    import numpy.typing as npt
    from _typeshed import ReadableBuffer

TYPES: dict[int, np.dtype] = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
                              0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
TYPE_NAMES = {0x08: "ubyte", 0x09: "sbyte", 0x0B: "int16", 0x0C: "int32", 0x0D: "float32", 0x0E: "float64"}
CODES = {dt.newbyteorder("=").str[1:]: code for code, dt in TYPES.items()}  # 'u1' -> 0x08 ...

#: Largest payload accepted unless the caller raises it (``max_bytes=``): 2 GiB is far beyond any dataset of this
#: family (EMNIST byclass train images are 0.55 GB), and stops a corrupt header, or a small compressed file that really
#: inflates to gigabytes, from making a load allocate them.
MAX_BYTES = 2 << 30
#: Most dims accepted (the family uses 1 to 3; NumPy itself stops at 32 or 64).
MAX_DIMS = 16



@dataclass(frozen=True)
class IdxHeader:
    """What an idx header says: the type byte, the big-endian dtype, the dims and the header
    length (where the data starts)."""

    type_code: int
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int

    @property
    def magic(self) -> int:
        return (self.type_code << 8) | len(self.shape)

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.count * self.dtype.itemsize

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type_code]


def parse_idx_header(data: bytes, path: StrPath = "<bytes>", *, max_bytes: int = MAX_BYTES) -> IdxHeader:
    """Parse and check an idx header from the first bytes of ``data`` (more is ignored);
    ``path`` names the file in errors.  Too short, non-zero leading bytes, an unknown type
    code or a payload over ``max_bytes`` raise :class:`IdxFormatError`.

    >>> parse_idx_header(bytes([0, 0, 8, 1, 0, 0, 0, 5])).shape
    (5,)
    """
    if len(data) < 4:
        raise IdxFormatError("truncated idx header", path=path, expected="at least 4 bytes",
                             found=f"{len(data)} bytes",
                             hint="the file is empty or cut short: re-download or rebuild it")
    if data[0] != 0 or data[1] != 0:
        raise IdxFormatError(
            "not an idx file (bad magic)", path=path,
            expected="magic starting with two zero bytes (e.g. 0x00000803 for images)",
            found=f"0x{int.from_bytes(data[:4], 'big'):08X}",
            hint="check that the file is an uncompressed idx file or carries the right "
                 ".gz/.xz/.bz2 suffix")
    code, ndim = data[2], data[3]
    if ndim > MAX_DIMS:
        raise IdxFormatError("too many idx dims", path=path, expected=f"at most {MAX_DIMS} dims",
                             found=f"{ndim}", hint="the header is corrupt or not an idx file")
    if code not in TYPES:
        raise IdxFormatError("unknown idx type code", path=path,
                             expected="one of " + ", ".join(f"0x{c:02X} ({n})" for c, n in TYPE_NAMES.items()),
                             found=f"0x{code:02X}", hint="the file is corrupt or not an idx file")
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise IdxFormatError("truncated idx header", path=path, expected=f"{offset} header bytes for {ndim} dims",
                             found=f"{len(data)} bytes", hint="re-download or rebuild the file")
    shape = struct.unpack(f">{ndim}I", bytes(data[4:offset]))
    header = IdxHeader(code, TYPES[code], tuple(int(d) for d in shape), offset)
    if header.nbytes > max_bytes:
        raise IdxFormatError("absurd idx size", path=path, expected=f"a payload of at most {max_bytes:,} bytes",
                             found=f"dims {list(shape)} of {header.type_name} = {header.nbytes:,} bytes",
                             hint="the header is corrupt; pass max_bytes= if the file really is that large")
    return header


def read_idx_header(path: StrPath, *, max_bytes: int = MAX_BYTES) -> IdxHeader:
    """Read only the header of an idx file (raw or compressed).

    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "l-idx1-ubyte")
    >>> write_idx(p, np.zeros(7, np.uint8))
    >>> read_idx_header(p).shape
    (7,)
    """
    comp = compression_of(path)
    _regular_file_size(Path(path))
    try:
        with open_reader(path) as f:
            head = f.read(4)
            if len(head) == 4 and head[:2] == b"\0\0":
                head += f.read(4 * head[3])
    except _compression.DECOMPRESS_ERRORS as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise IdxFormatError("cannot decompress", path=path, expected=f"valid {comp} data",
                             found=str(e), hint="the file is corrupt: re-download it") from e
    return parse_idx_header(head, path, max_bytes=max_bytes)


#: the most header an idx file has (magic + 255 dimensions)
_MAX_HEADER = 4 + 4 * 255


def _header_prefix(comp: str, prefix: Callable[[int], bytes], path: StrPath) -> bytes:
    """The first (up to :data:`_MAX_HEADER`) decompressed bytes, from a prefix of the stream (``prefix(n)``: its first
    ``n`` bytes): 64 KiB, grown while it gives too little.  A bz2 block gives no output until all of it (up to about
    900 kB) is read: a 64 KiB prefix of a bz2 idx file of random pixels decompressed to nothing."""
    n = 1 << 16
    while True:
        data = prefix(n)
        head = _decompress_capped(comp, data, _MAX_HEADER, path)
        if len(head) >= _MAX_HEADER or len(data) < n or n >= 1 << 22:
            return head
        n <<= 2


def _decompress_capped(comp: str, data: bytes, limit: int, path: StrPath) -> bytes:
    """Decompress at most ``limit`` bytes of (possibly multi-member) data."""
    chunks: list[bytes] = []
    have = 0
    try:
        while data and have < limit:
            d = decompressor(comp)
            out = d.decompress(data, limit - have)
            chunks.append(out)
            have += len(out)
            if not d.eof:
                break  # capped (or truncated: the caller checks the length)
            data = d.unused_data
            if comp == "gz":
                data = data.lstrip(b"\0")  # gzip allows zero padding between members
    except _compression.DECOMPRESS_ERRORS + (ValueError,) as e:
        raise IdxFormatError("corrupt compressed data", path=path, expected=f"a valid {comp} stream",
                             found=str(e), hint="the file is damaged: re-download or rebuild it") from e
    return b"".join(chunks) if len(chunks) != 1 else chunks[0]


def parse_idx_bytes(data: bytes, path: StrPath = "<bytes>", *, compression: str | None = None,
                    max_bytes: int = MAX_BYTES) -> np.ndarray:
    """Parse an idx file held in memory (e.g. a member streamed out of a zip), compressed when
    ``compression`` ("gz", "xz", "bz2") is given.  The array is native-endian, read-only for
    ubyte/sbyte (a view on the decompressed bytes).

    >>> parse_idx_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 2, 7, 9])).tolist()
    [7, 9]
    """
    if compression is not None:
        header = _packed_header(compression, data, path, max_bytes)
        return _inflate_idx(compression, _chunks_of(data), header, path)[0]
    header = parse_idx_header(data, path, max_bytes=max_bytes)
    _check_length(header, len(data), path)
    arr = np.frombuffer(data, dtype=header.dtype, count=header.count, offset=header.offset)
    arr = arr.reshape(header.shape)
    if not header.dtype.isnative and header.dtype.itemsize > 1:
        arr = arr.astype(header.dtype.newbyteorder("="))
    return arr


def _check_gz_trailer(header: IdxHeader, data: bytes, path: StrPath) -> None:
    """The gzip trailer's size (the last 4 bytes of ``data``) must be the header's, unless the
    file holds several members (``data`` starts with the first of them)."""
    isize = int.from_bytes(data[-4:], "little")
    want = (header.offset + header.nbytes) & 0xFFFFFFFF
    if isize != want and not _is_multimember_gz(memoryview(data)[:-4]):
        raise IdxFormatError("idx dims disagree with the decompressed length", path=path,
                             expected=f"{header.offset + header.nbytes:,} bytes (dims {list(header.shape)})",
                             found=f"gzip trailer size {isize:,} (mod 2^32)",
                             hint="the file is truncated or its header is corrupt: re-download or rebuild it")


#: compressed bytes handed to a decompressor at a time, and decompressed bytes asked back
_INPUT_CHUNK = 1 << 16
_OUTPUT_CHUNK = 1 << 20


#: the next chunk of a compressed stream (``b""`` at its end)
_Chunks = Callable[[], bytes | memoryview]


def _inflate_into(comp: str, read: _Chunks, out: memoryview, path: StrPath) -> int:
    """Decompress the stream ``read()`` yields (chunks; ``b""`` at the end), member after member, into ``out``; the
    number of bytes it holds (``len(out) + 1`` when it holds more). Nothing is allocated beyond ``out`` but one output
    chunk: a capped read peaks at its payload.  A stream without its end marker is truncated, whatever it held."""
    n, pos = len(out), 0
    gz = comp == "gz"
    d = decompressor(comp)
    data = read()
    try:
        while True:
            room = n - pos
            chunk = d.decompress(data, min(room, _OUTPUT_CHUNK) if room else 1)
            data = d.unconsumed_tail if gz else b""
            if len(chunk) > room:   # only when room is 0: one byte more than the header says
                return n + 1
            out[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
            if d.eof:
                rest = bytes(d.unused_data)
                while True:   # the next member, past gzip's zero padding, or the end
                    if gz:
                        rest = rest.lstrip(b"\0")
                    if rest:
                        break
                    rest = bytes(read())
                    if not rest:
                        return pos
                d, data = decompressor(comp), rest
                continue
            if chunk:
                continue      # the decompressor may hold more output for the input it has
            if data or (not gz and not d.needs_input):
                continue
            data = read()
            if not data:
                raise IdxFormatError("truncated compressed data", path=path,
                                     expected=f"a whole {comp} stream (with its end marker)",
                                     found=f"the stream ends after {pos:,} bytes",
                                     hint="the file was cut short: re-download or rebuild it")
    except IdxFormatError:
        raise
    except _compression.DECOMPRESS_ERRORS + (ValueError,) as e:
        raise IdxFormatError("corrupt compressed data", path=path, expected=f"a valid {comp} stream",
                             found=str(e), hint="the file is damaged: re-download or rebuild it") from e


def _packed_header(comp: str, packed: bytes, path: StrPath, max_bytes: int) -> IdxHeader:
    """The checked header of compressed idx bytes, decompressed alone first so that a lying
    header is caught before a buffer of its claimed size is allocated."""
    header = parse_idx_header(_header_prefix(comp, lambda n: packed[:n], path), path, max_bytes=max_bytes)
    if comp == "gz" and len(packed) >= 18:
        _check_gz_trailer(header, packed, path)
    return header


def _chunks_of(packed: bytes) -> _Chunks:
    view = memoryview(packed)
    chunks = (view[i:i + _INPUT_CHUNK] for i in range(0, len(view), _INPUT_CHUNK))
    return lambda: next(chunks, b"")


def _inflate_idx(comp: str, read: _Chunks, header: IdxHeader, path: StrPath, *,
                 keep_bytes: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The array of a compressed idx stream whose ``header`` was checked, and the buffer of
    exactly the size the header gives that it was inflated into.  Byte-swapped in place unless
    ``keep_bytes`` (then a read-only native copy, and the buffer keeps the file's content)."""
    buf = np.empty(header.offset + header.nbytes, np.uint8)
    _check_length(header, _inflate_into(comp, read, buf.data, path), path)
    arr = buf[header.offset:].view(header.dtype).reshape(header.shape)
    if not header.dtype.isnative and header.dtype.itemsize > 1:
        native = header.dtype.newbyteorder("=")
        arr = arr.astype(native) if keep_bytes else arr.byteswap(inplace=True).view(native)
    if keep_bytes or header.dtype.isnative or header.dtype.itemsize == 1:
        arr.flags.writeable = False   # as a view on bytes would be: callers copy to modify
    return arr, buf


def _is_multimember_gz(data: ReadableBuffer) -> bool:
    d = zlib.decompressobj(wbits=31)
    try:
        # a bounded slice finds the end of a small first member; a large single member never reaches eof here
        d.decompress(data, 1 << 16)
    except zlib.error:
        return False
    return d.eof and bool(d.unused_data.strip(b"\0"))


def _check_length(header: IdxHeader, length: int, path: StrPath) -> None:
    want = header.offset + header.nbytes
    if length < want:
        raise IdxFormatError("truncated idx data", path=path,
                             expected=f"{want:,} bytes for dims {list(header.shape)} of {header.type_name}",
                             found=f"{length:,} bytes", hint="the file was cut short: re-download or rebuild it")
    if length > want:
        raise IdxFormatError("idx dims disagree with the file length", path=path,
                             expected=f"{want:,} bytes for dims {list(header.shape)} of {header.type_name}",
                             found="more data after the last element",
                             hint="the header is corrupt or two files were concatenated")


def read_idx(path: StrPath, *, mmap: bool = True, max_bytes: int = MAX_BYTES) -> np.ndarray:
    """Read an idx file (raw, ``.gz``, ``.xz`` or ``.bz2``) as a read-only array.

    With ``mmap``, raw files open as read-only memory maps (milliseconds, no copy); multi-byte
    types are then big-endian views (``.astype(native)`` for a native copy).  A malformed
    header, an unknown type, truncated or over-long data, corrupt compression or a payload over
    ``max_bytes`` raise :class:`IdxFormatError`; a missing file ``FileNotFoundError``.

    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "l-idx1-int")
    >>> write_idx(p, np.array([1, -2], np.int32))
    >>> read_idx(p).tolist()
    [1, -2]
    """
    path = os.fspath(path)   # a string: a Path object costs a repeat load more than its stat
    comp = compression_of(path)
    size = _regular_file_size(path)
    if comp is None:
        with open(path, "rb") as f:
            head = f.read(4 + 4 * 255)
            header = parse_idx_header(head, path, max_bytes=max_bytes)
            _check_length(header, size, path)
            if mmap and header.nbytes > 0:
                # mapped through the open file: no second open, and no Path.resolve (numpy
                # resolves a Path it is given, an lstat per component: most of a repeat load)
                return np.memmap(f, dtype=header.dtype, mode="r", offset=header.offset, shape=header.shape)
        with open(path, "rb") as f:
            return parse_idx_bytes(f.read(), path, max_bytes=max_bytes)
    if size > max_bytes + (1 << 20):  # compressed data is never much larger than its content
        raise IdxFormatError("absurd idx size", path=path,
                             expected=f"a compressed file of at most {max_bytes:,} bytes", found=f"{size:,} bytes",
                             hint="pass max_bytes= if the file really is that large")
    with open(path, "rb") as f:
        # the header from a prefix of the stream, checked before anything large is allocated
        def prefix(n: int) -> bytes:
            f.seek(0)
            return f.read(n)

        head = _header_prefix(comp, prefix, path)
        header = parse_idx_header(head, path, max_bytes=max_bytes)
        if comp == "gz" and size >= 18:
            f.seek(size - 4)
            isize = int.from_bytes(f.read(4), "little")
            if isize != (header.offset + header.nbytes) & 0xFFFFFFFF:
                f.seek(0)
                _check_gz_trailer(header, f.read(1 << 20) + isize.to_bytes(4, "little"), path)
        f.seek(0)
        # streamed into one buffer of the header's size: the peak is the payload, not twice it
        return _inflate_idx(comp, lambda: f.read(_INPUT_CHUNK), header, path)[0]


@dataclass(frozen=True)
class FileRead:
    """One file read once: the array and every hash of it come from the same bytes. ``array`` lives in process memory
    (never a map of the file: a later write to the file cannot change it); ``packed`` are the file's bytes, ``content``
    the decompressed ones (the same for a raw file); ``before``/``after``: ``fstat`` of the descriptor around the read
    (they differ when the file was written while it was read)."""

    path: str
    array: np.ndarray
    packed: bytes
    content: memoryview
    before: os.stat_result
    after: os.stat_result
    #: hashes known without the bytes (a raw copy's record of the file it was made from)
    known: dict[str, str] = field(default_factory=dict)

    @property
    def steady(self) -> bool:
        """Whether the file kept its identity (size, mtime, ctime, inode) while it was read."""
        b, a = self.before, self.after
        return (b.st_size, b.st_mtime_ns, b.st_ctime_ns, b.st_ino) == \
            (a.st_size, a.st_mtime_ns, a.st_ctime_ns, a.st_ino)

    def digest(self, fact: str) -> str:
        """``sha256`` / ``md5`` of the file's bytes, ``content_sha256`` / ``content_md5`` /
        ``content_xxh3_128`` of its content, from the bytes read."""
        kind, _, algo = fact.rpartition("_") if fact.startswith("content_") else ("", "", fact)
        if fact in self.known:
            return self.known[fact]
        data: ReadableBuffer = self.content if kind else self.packed
        if kind and not len(self.content):   # a mapped raw copy: its content from the array
            data = b"".join(_idx_parts(self.array))
        if algo == "sha256":
            return sha256_parts(data)
        if algo == "md5":
            return hashlib.md5(data, usedforsecurity=False).hexdigest()
        if fact == "content_xxh3_128":
            return xxh3_parts(data)
        raise ValueError(f"unknown hash {fact!r}")


def _read_regular(path: str, limit: int) -> tuple[bytes, os.stat_result, os.stat_result]:
    """The bytes of regular file ``path`` (at most its size and one byte more, under ``limit``)
    and its ``fstat`` before and after the read.  Opened without blocking, and refused unless the
    descriptor is a regular file: a FIFO put in its place after a check would block for ever."""
    _regular_file_size(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as f:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise IdxFormatError("not a file to read", path=path, expected="a regular file",
                                 found="something else put in its place", hint="point at the file itself")
        # its size and one byte more (a file that grew shows as changed): never a buffer of the
        # largest size allowed, which Python would allocate before reading
        packed = f.read(min(before.st_size, limit) + 1)
        after = os.fstat(fd)
    return packed, before, after


def read_whole(path: StrPath, parse: Callable[[bytes], np.ndarray]) -> FileRead:
    """Read the regular file ``path`` once into memory and ``parse`` its bytes (a file whose
    bytes are its content: ``.npz``, ``.npy``)."""
    path = os.fspath(path)
    packed, before, after = _read_regular(path, MAX_BYTES)
    return FileRead(path, parse(packed), packed, memoryview(packed), before, after)


def read_idx_whole(path: StrPath, *, max_bytes: int = MAX_BYTES) -> FileRead:
    """Read the idx file ``path`` (raw, ``.gz``, ``.xz``, ``.bz2``) once, into memory.

    Refused before opening: anything but a regular file (a FIFO would block).  The same checks
    as :func:`read_idx` (header first, decompression capped at what the header claims).

    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x-idx1-ubyte.gz")
    >>> write_idx(p, np.array([3, 1], np.uint8))
    >>> got = read_idx_whole(p)
    >>> got.array.tolist(), got.steady, len(got.content)
    ([3, 1], True, 10)
    """
    path = os.fspath(path)
    comp = compression_of(path)
    size = _regular_file_size(path)
    if size > max_bytes + (1 << 20):
        raise IdxFormatError("absurd idx size", path=path, expected=f"a file of at most {max_bytes:,} bytes",
                             found=f"{size:,} bytes", hint="pass max_bytes= if the file really is that large")
    packed, before, after = _read_regular(path, max_bytes + (1 << 20))
    if comp is None:
        content = memoryview(packed)
        arr = parse_idx_bytes(packed, path, max_bytes=max_bytes)
        arr.flags.writeable = False
    else:
        header = _packed_header(comp, packed, path, max_bytes)
        arr, buf = _inflate_idx(comp, _chunks_of(packed), header, path, keep_bytes=True)
        content = buf.data.cast("B").toreadonly()
    return FileRead(path, arr, packed, content, before, after)


def _regular_file_size(path: StrPath) -> int:
    """The size of ``path`` if it is a regular file; a directory, a FIFO, a device or a symlink
    loop is an :class:`IdxFormatError` (a FIFO would block the read for ever)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as e:
        why = "a symlink loop" if e.errno == errno.ELOOP else os.strerror(e.errno or 0)
        raise IdxFormatError("cannot open the idx file", path=path, expected="a regular file",
                             found=why, hint="point at the file itself") from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "not a regular file")
        raise IdxFormatError("not an idx file", path=path, expected="a regular file",
                             found=kind, hint="point at the idx file itself")
    return st.st_size


def idx_header_bytes(shape: Sequence[int], dtype: npt.DTypeLike) -> bytes:
    """The header bytes for an array of ``shape`` and ``dtype``."""
    dt = np.dtype(dtype)
    key = dt.newbyteorder("=").str[1:]
    if dt.kind == "b" or key not in CODES:
        raise IdxFormatError("unsupported dtype for idx", path=None,
                             expected="uint8, int8, int16, int32, float32 or float64", found=str(dt),
                             hint="convert the array first, e.g. .astype(np.uint8)")
    if len(shape) > 255:
        raise IdxFormatError("too many dims for idx", expected="at most 255", found=len(shape))
    if any(d >= 1 << 32 for d in shape):
        raise IdxFormatError("dimension too large for idx", expected="< 2^32", found=list(shape))
    code = CODES[key]
    return bytes([0, 0, code, len(shape)]) + struct.pack(f">{len(shape)}I", *shape)


def idx_content_sha256(array: npt.ArrayLike) -> str:
    """The sha256 of the idx file content ``array`` would be written as (header + bytes).

    Equal to the registry's ``content_sha256`` of an official file holding the
    same array, so arrays read from any format compare without the file.

    >>> idx_content_sha256(np.zeros(3, np.uint8))[:12]
    'c51ace58717b'
    """
    return sha256_parts(*_idx_parts(array))


def idx_content_xxh3(array: npt.ArrayLike) -> str:
    """The XXH3-128 of the idx file content ``array`` would be written as (the registry's
    ``content_xxh3_128``; see :data:`mnistforge.io.hashing.FAST`).

    >>> idx_content_xxh3(np.zeros(3, np.uint8))[:12]
    'dde46efc05bf'
    """
    return xxh3_parts(*_idx_parts(array))


def _idx_parts(array: npt.ArrayLike) -> tuple[bytes, memoryview]:
    """(header, bytes) of the idx content of ``array`` (big-endian, C order)."""
    arr = np.asarray(array)
    data = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder(">"), copy=False))
    return idx_header_bytes(arr.shape, arr.dtype), data.reshape(-1).view(np.uint8).data


def write_idx(path: StrPath, array: npt.ArrayLike, *, compresslevel: int | None = None,
              chunk_bytes: int = 1 << 24) -> None:
    """Write an array as an idx file, atomically and reproducibly.

    Compression follows the suffix (``.gz``, ``.xz``, ``.bz2`` or none); gzip headers carry mtime 0 and no
    file name, so identical arrays give identical bytes.  ``array``: uint8, int8, int16, int32, float32 or
    float64, any number of dims; ``compresslevel``: the gzip/bz2 level or xz preset (default 6).

    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a-idx2-double.xz")
    >>> write_idx(p, np.eye(2))
    >>> read_idx(p).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    arr = np.asarray(array)
    header = idx_header_bytes(arr.shape, arr.dtype)
    be = arr.dtype.newbyteorder(">")
    comp = compression_of(path)
    level = 6 if compresslevel is None else compresslevel
    flat = arr.reshape(-1) if arr.ndim else arr.reshape(1)
    step = max(1, chunk_bytes // max(1, arr.dtype.itemsize))
    with atomic_file(path, "wb") as raw:
        f = open_writer(raw, comp, level) if comp else None
        out = f if f is not None else raw
        out.write(header)
        for i in range(0, flat.size, step):
            out.write(np.ascontiguousarray(flat[i:i + step], dtype=be).tobytes())
        if f is not None:
            f.close()


def decompress_to_raw(src: StrPath, dst: StrPath) -> Path:
    """Decompress an idx file to a raw copy (atomically), for memory-mapped loads.

    The content is validated as idx on the way.

    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "x-idx1-ubyte.gz")
    >>> write_idx(p, np.arange(3, dtype=np.uint8))
    >>> read_idx(decompress_to_raw(p, os.path.join(d, "x-idx1-ubyte"))).tolist()
    [0, 1, 2]
    """
    arr = read_idx(src)
    write_idx(dst, arr)
    return Path(dst)


def idx_suffix(array: npt.ArrayLike) -> str:
    """The conventional file-name part for an array, e.g. ``idx3-ubyte``."""
    arr = np.asarray(array)
    code = CODES[arr.dtype.newbyteorder("=").str[1:]]
    return f"idx{arr.ndim}-{TYPE_NAMES[code]}"


__all__ = ["IdxHeader", "read_idx", "read_idx_header", "write_idx", "parse_idx_bytes", "parse_idx_header",
           "decompress_to_raw", "compression_of", "idx_suffix", "TYPES", "MAX_BYTES"]
