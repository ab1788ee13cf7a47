"""The one table of compressions by file suffix: how a file is opened, read and written.

Every module that opens a possibly compressed file goes through here, so adding a compression is one entry in
:data:`CODECS`.  Writers are reproducible (gzip with mtime 0 and no file name in the header).

>>> compression_of("t10k-images-idx3-ubyte.gz"), strip_compression("a-idx1-ubyte.xz")
('gz', 'a-idx1-ubyte')
>>> import io
>>> buf = io.BytesIO()
>>> with open_writer(buf, "gz") as f:
...     _ = f.write(b"abc")
>>> with open_reader(io.BytesIO(buf.getvalue()), "x.gz") as f:
...     f.read()
b'abc'
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import types
import zlib
from typing import IO, TYPE_CHECKING, Any, Callable, Protocol, cast, overload
from .types import Readable, StrPath

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


#: suffix -> compression name, in lookup order ("" = raw first).
COMPRESSIONS = ("", ".gz", ".xz", ".bz2")

#: the zlib API that inflates gzip: ISA-L's (about 1.8x faster, identical output) or zlib's
gz_zlib: types.ModuleType
_gz_reader: Any
try:
    from isal import isal_zlib as gz_zlib
    from isal.igzip import IGzipFile as _gz_reader
except ImportError:  # pragma: no cover - isal is a dependency, zlib the fallback
    gz_zlib, _gz_reader = zlib, gzip.GzipFile
#: What a damaged compressed stream raises, whichever codec.
DECOMPRESS_ERRORS: tuple[type[BaseException], ...] = tuple(
    {zlib.error, getattr(gz_zlib, "error", zlib.error), lzma.LZMAError, EOFError, OSError})
#: compression name -> (reader of a path or binary file object, writer over a file object
#: given a level).  Readers given a path own (and close) the file.
CODECS: dict[str, tuple[Callable[[Any], Any], Callable[[Any, int], Any]]] = {
    "gz": (lambda f: _gz_reader(f, "rb") if isinstance(f, (str, os.PathLike))
           else _gz_reader(fileobj=f, mode="rb"),
           lambda f, level: gzip.GzipFile(filename="", mode="wb", fileobj=f,
                                          compresslevel=level, mtime=0)),
    "xz": (lambda f: lzma.LZMAFile(f, "rb"), lambda f, level: lzma.LZMAFile(f, "wb", preset=level)),
    "bz2": (lambda f: bz2.BZ2File(f, "rb"),
            lambda f, level: bz2.BZ2File(f, "wb", compresslevel=max(1, level))),
}


#: leading bytes of each compressed stream, for files whose name does not say
MAGICS = {"gz": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00", "bz2": b"BZh"}


def sniff_compression(head: bytes) -> str | None:
    """``"gz"``, ``"xz"``, ``"bz2"`` or ``None`` from a file's first bytes (its content, not its name).

    >>> sniff_compression(gzip_bytes(b"x")), sniff_compression(b"PAR1")
    ('gz', None)
    """
    for comp, magic in MAGICS.items():
        if head.startswith(magic):
            return comp
    return None


def compression_of(name: StrPath) -> str | None:
    """``"gz"``, ``"xz"``, ``"bz2"`` or ``None`` from a file name (case-insensitive)."""
    s = os.fspath(name).lower() if not isinstance(name, str) else name.lower()
    for suf in COMPRESSIONS[1:]:
        if s.endswith(suf):
            return suf[1:]
    return None


def strip_compression(name: str) -> str:
    """``name`` without a ``.gz``/``.xz``/``.bz2`` suffix.

    >>> strip_compression("t10k-images-idx3-ubyte.gz")
    't10k-images-idx3-ubyte'
    """
    comp = compression_of(name)
    return name[: -len(comp) - 1] if comp else name


@overload
def open_reader(source: StrPath | IO[bytes], name: StrPath | None = None) -> IO[bytes]: ...
@overload
def open_reader(source: Readable, name: StrPath) -> IO[bytes] | Readable: ...


def open_reader(source: StrPath | Readable, name: StrPath | None = None) -> IO[bytes] | Readable:
    """A binary reader of the decompressed bytes of ``source`` (a path or a binary file object). The compression
    follows the suffix of ``name`` (default: the path's); an uncompressed file is returned as is.  (Any object with
    ``read(n)`` will do as a compressed ``source``, e.g. a :class:`~mnistforge.io.hashing.HashingReader`.)"""
    # without ``name``, ``source`` must be a path (a file object is os.fspath's TypeError)
    comp = compression_of(name if name is not None else cast("StrPath", source))
    if comp is None:
        return open(source, "rb") if isinstance(source, (str, os.PathLike)) else source
    return _open_with(comp, source)


def _open_with(comp: str, source: StrPath | Readable) -> IO[bytes]:
    """``source`` opened through codec ``comp``'s reader (every codec's reader is a binary file)."""
    return cast("IO[bytes]", CODECS[comp][0](source))


def open_sniffed(path: StrPath) -> IO[bytes]:
    """A binary reader of ``path``'s decompressed bytes, the compression read from its first bytes."""
    with open(path, "rb") as f:
        comp = sniff_compression(f.read(8))
    return open(path, "rb") if comp is None else _open_with(comp, path)


def open_writer(fileobj: IO[bytes], compression: str | None, level: int = 9) -> IO[bytes]:
    """A reproducible compressing writer over binary ``fileobj`` (``None``: ``fileobj`` itself)."""
    if compression is None:
        return fileobj
    return cast("IO[bytes]", CODECS[compression][1](fileobj, level))


def gzip_bytes(data: bytes, level: int = 9) -> bytes:
    """Gzip ``data`` reproducibly (mtime 0, no file name in the header)."""
    return gzip.compress(data, compresslevel=level, mtime=0)


def open_gzip_writer(fileobj: IO[bytes], level: int = 9) -> IO[bytes]:
    """A reproducible gzip writer over an open binary file (mtime 0, empty name)."""
    return open_writer(fileobj, "gz", level)


class Decompressor(Protocol):
    """What io reads of an incremental decompressor: zlib's (or ISA-L's) ``decompressobj``,
    lzma's or bz2's.  ``unconsumed_tail`` exists for ``gz`` only, ``needs_input`` for the others."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    @property
    def unconsumed_tail(self) -> bytes: ...

    @property
    def needs_input(self) -> bool: ...

    def decompress(self, data: ReadableBuffer, max_length: int = ...) -> bytes: ...


def decompressor(compression: str) -> Decompressor:
    """An incremental decompressor object (``decompress(data, max_length)``, ``eof``, ``unused_data``)."""
    # cast: each codec's object has the attributes its callers read (see Decompressor)
    if compression == "gz":
        return cast(Decompressor, gz_zlib.decompressobj(wbits=31))
    if compression == "xz":
        return cast(Decompressor, lzma.LZMADecompressor())
    if compression == "bz2":
        return cast(Decompressor, bz2.BZ2Decompressor())
    raise ValueError(f"unknown compression {compression!r}")
