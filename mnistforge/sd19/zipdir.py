"""Lean zip listing and in-place member reads for SD19's large zips (800k+ members).

:class:`zipfile.ZipFile` keeps one Python object per member (hundreds of MB for ``by_class.zip``) and every ``open``
re-reads the local header through a file object.  SD19 readers only need, per member, its name, where its local header
starts and its sizes, so :func:`list_zip` parses the central directory into NumPy arrays once, and :func:`read_members`
fetches many members with one ``pread`` per dense run of them, then inflates each with :mod:`zlib`.

Safety (members are never extracted, but a hostile archive is refused all the same): a name that is absolute, holds
``..`` or a drive letter, or would escape the archive's folder raises :class:`~mnistforge.errors.UnsafeArchiveError`; so
does a member claiming more than ``max_member_size`` bytes (256 MiB; a PNG member more than 1 MiB, while SD19's are
about 1 kB), or an absurd compression ratio (over 100:1 beyond 1 MiB: SD19's members are PNG or G4 data, already
compressed, about 1:1), or whose data would lie outside the file.  A member name that is not valid UTF-8 is a
:class:`~mnistforge.errors.SD19FormatError`. Each read inflates at most the declared size (plus one byte to detect a
lie) and checks the inflated size and CRC-32, so memory is bounded by these limits.

>>> import io, zipfile, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "t.zip")
>>> with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
...     z.writestr("by_write/a.txt", b"hello")
>>> lst = list_zip(p)
>>> lst.names
['by_write/a.txt']
>>> read_members(p, lst, [0])
[b'hello']
"""
from __future__ import annotations

import dataclasses
import os
import posixpath
import re
import struct
import zlib
from typing import BinaryIO, Callable

import numpy as np
import numpy.typing as npt

from ..errors import SD19FormatError, UnsafeArchiveError

__all__ = ["ZipListing", "list_zip", "read_members", "check_member_name", "DEFAULT_MAX_MEMBER"]

#: Largest member size accepted by default (a 1st-edition by_class .mis can reach tens of MB).
DEFAULT_MAX_MEMBER = 256 << 20
#: Largest PNG member (a 128x128 1-bit SD19 PNG is about 1 kB).
MAX_PNG_MEMBER = 1 << 20
#: Ratio uncompressed / compressed beyond which a member over 1 MiB is considered a zip bomb
#: (SD19 members are PNG or G4 data, already compressed: about 1:1 in the zip).
MAX_RATIO = 100
_EOCD = b"PK\x05\x06"
_EOCD64_LOC = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_CEN = b"PK\x01\x02"
_LOC = b"PK\x03\x04"
_CEN_FMT = struct.Struct("<4s6H3I5H2I")
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclasses.dataclass
class ZipListing:
    """Central directory of a zip as arrays (one entry per member, in directory order)."""

    path: str
    names: list[str]
    offset: np.ndarray    # int64: local header offset
    csize: np.ndarray     # int64: compressed size
    usize: np.ndarray     # int64: uncompressed size
    method: np.ndarray    # uint16: 0 stored, 8 deflated
    crc: np.ndarray       # uint32

    def __len__(self) -> int:
        return len(self.names)

    def take(self, idx: npt.ArrayLike) -> "ZipListing":
        idx = np.asarray(idx, np.int64)
        return ZipListing(self.path, [self.names[i] for i in idx], self.offset[idx],
                          self.csize[idx], self.usize[idx], self.method[idx], self.crc[idx])


def check_member_name(name: str, archive: str | os.PathLike[str] | None = None) -> None:
    """Raise :class:`UnsafeArchiveError` when ``name`` could escape the archive's folder."""
    if ".." not in name and ":" not in name and "\\" not in name and "\0" not in name and not name.startswith("/"):
        return   # the common, obviously safe case, without the slower checks below
    n = name.replace("\\", "/")
    parts = n.split("/")
    bad = (n.startswith("/") or _DRIVE.match(n) or ".." in parts or "\0" in n or posixpath.normpath(n).startswith(".."))
    if bad:
        raise UnsafeArchiveError("zip member path escapes the archive folder",
                                 path=archive if archive is not None else "<zip>",
                                 expected="relative member paths without '..' or a drive",
                                 found=repr(name), hint="refusing this archive; get a clean copy")


def _find_eocd(f: BinaryIO, size: int, path: str) -> tuple[int, int, int]:
    tail_len = min(size, 65557 + 20 + 56)
    f.seek(size - tail_len)
    tail = f.read(tail_len)
    pos = tail.rfind(_EOCD)
    if pos < 0 or pos + 22 > len(tail):
        raise SD19FormatError("not a zip file (no end-of-central-directory record)", path=path,
                              expected="a zip archive", found=f"{size} bytes without one",
                              hint="the download is incomplete or not a zip; fetch it again")
    (_sig, _d, _dcd, _n_here, n_total, cd_size, cd_off, _clen) = struct.unpack_from("<4s4H2IH", tail, pos)
    loc = pos - 20
    if loc >= 0 and tail[loc:loc + 4] == _EOCD64_LOC:
        (_s, _disk, eocd64_off, _ndisks) = struct.unpack_from("<4sIQI", tail, loc)
        f.seek(eocd64_off)
        rec = f.read(56)
        if rec[:4] != _EOCD64:
            raise SD19FormatError("bad zip64 end-of-central-directory record", path=path,
                                  expected="PK\\x06\\x06", found=repr(rec[:4]))
        (_s, _sz, _vm, _vn, _d, _dcd, _nh, n_total, cd_size, cd_off) = struct.unpack_from("<4sQ2H2I4Q", rec)
    return int(n_total), int(cd_size), int(cd_off)


def list_zip(path: str | os.PathLike[str], *, max_member_size: int = DEFAULT_MAX_MEMBER,
             name_filter: Callable[[str], bool] | None = None, limit: int | None = None) -> ZipListing:
    """Parse the central directory of ``path`` into a :class:`ZipListing`.

    ``name_filter(name) -> bool`` keeps only matching members (directories are always dropped); ``limit`` stops after
    that many kept members (a peek). Every member name is checked for path escapes, every size against
    ``max_member_size`` and the file's length.
    """
    path = os.fspath(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        n_total, cd_size, cd_off = _find_eocd(f, size, path)
        if cd_off + cd_size > size:
            raise SD19FormatError("zip central directory lies past the end of the file", path=path,
                                  expected=f"at most {size} bytes", found=f"{cd_off + cd_size}",
                                  hint="the download is incomplete; fetch it again")
        f.seek(cd_off)
        cd = f.read(cd_size if limit is None else min(cd_size, 1 << 20))
    names: list[str] = []
    kept: list[tuple[int, int, int, int, int]] = []   # offset, csize, usize, method, crc
    pos = 0
    unpack = _CEN_FMT.unpack_from
    for _ in range(n_total):
        if limit is not None and (len(names) >= limit or pos + 46 + 1024 > len(cd) < cd_size):
            break
        if cd[pos:pos + 4] != _CEN:
            raise SD19FormatError("corrupt zip central directory", path=path, expected="a central directory entry",
                                  found=f"bytes {cd[pos:pos + 4]!r} at {cd_off + pos}")
        (_s, _vm, _vn, flags, method, _t, _d, crc, csize, usize, nlen, elen, clen,
         _disk, _ia, _ea, off) = unpack(cd, pos)
        raw = cd[pos + 46:pos + 46 + nlen]
        try:
            name = raw.decode("utf-8" if flags & 0x800 else "cp437")
        except UnicodeDecodeError:
            raise SD19FormatError("zip member name is not valid UTF-8", path=path,
                                  expected="UTF-8 member names (flag 0x800)", found=repr(raw[:80]),
                                  hint="the archive is damaged or not SD19; get a clean copy") from None
        if 0xFFFFFFFF in (csize, usize, off):
            csize, usize, off = _zip64_extra(cd[pos + 46 + nlen:pos + 46 + nlen + elen], csize, usize, off)
        pos += 46 + nlen + elen + clen
        check_member_name(name, path)
        if name.endswith("/"):
            continue
        if name_filter is not None and not name_filter(name):
            continue
        cap = min(max_member_size, MAX_PNG_MEMBER) if name.endswith(".png") else max_member_size
        if usize > cap or (usize > (1 << 20) and usize > MAX_RATIO * max(csize, 1)):
            raise UnsafeArchiveError("zip member claims an absurd size", path=path,
                                     expected=f"at most {cap} bytes (ratio <= {MAX_RATIO})",
                                     found=f"{name!r}: {usize} bytes from {csize} compressed",
                                     hint="refusing this archive; get a clean copy")
        if off + 30 + csize > size:
            raise UnsafeArchiveError("zip member data lies outside the archive", path=path,
                                     expected=f"data within {size} bytes",
                                     found=f"{name!r} at offset {off} with {csize} bytes")
        if method not in (0, 8):
            raise SD19FormatError("unsupported zip compression method", path=path,
                                  expected="stored (0) or deflated (8)", found=f"{method} for {name!r}")
        names.append(name)
        kept.append((off, csize, usize, method, crc))
    off_, cs_, us_, meth_, crc_ = np.array(kept, np.int64).reshape(-1, 5).T
    return ZipListing(path, names, off_.copy(), cs_.copy(), us_.copy(), meth_.astype(np.uint16), crc_.astype(np.uint32))


def _zip64_extra(extra: bytes, csize: int, usize: int, off: int) -> tuple[int, int, int]:
    p = 0
    while p + 4 <= len(extra):
        tag, ln = struct.unpack_from("<2H", extra, p)
        if tag == 1:
            vals = list(struct.unpack_from(f"<{ln // 8}Q", extra, p + 4))
            if usize == 0xFFFFFFFF and vals:
                usize = vals.pop(0)
            if csize == 0xFFFFFFFF and vals:
                csize = vals.pop(0)
            if off == 0xFFFFFFFF and vals:
                off = vals.pop(0)
            break
        p += 4 + ln
    return csize, usize, off


_FDS: dict[tuple[int, str], int] = {}


def _fd(path: str) -> int:
    # One descriptor per archive per process (workers reuse theirs across batches).
    key = (os.getpid(), path)
    if key not in _FDS:
        _FDS[key] = os.open(path, os.O_RDONLY)
    return _FDS[key]


def read_members(path: str | os.PathLike[str], listing: ZipListing, idx: npt.ArrayLike, *,
                 gap: int = 1 << 16) -> list[bytes]:
    """Return the inflated bytes of members ``idx`` of ``listing`` (in that order).

    Members close together in the file are fetched with one ``pread`` (runs split where the gap between members exceeds
    ``gap`` bytes).
    """
    path = os.fspath(path)
    idx = np.asarray(idx, np.int64)
    if len(idx) == 0:
        return []
    fd = _fd(path)
    offs = listing.offset[idx]
    ends = offs + 30 + listing.csize[idx] + 1024   # local name + extra fit in the slack
    order = np.argsort(offs, kind="stable")
    out: list[bytes] = [b""] * len(idx)
    start = 0
    while start < len(order):
        stop = start + 1
        hi = ends[order[start]]
        while stop < len(order) and offs[order[stop]] - hi <= gap:
            hi = max(hi, ends[order[stop]])
            stop += 1
        lo = int(offs[order[start]])
        buf = os.pread(fd, int(hi) - lo, lo)
        for k in order[start:stop]:
            out[k] = _member_from(buf, int(offs[k]) - lo, listing, int(idx[k]), fd, path)
        start = stop
    return out


def _member_from(buf: bytes, p: int, listing: ZipListing, i: int, fd: int, path: str) -> bytes:
    name = listing.names[i]
    if buf[p:p + 4] != _LOC:
        raise SD19FormatError("corrupt zip member (bad local header)", path=f"{path}:{name}", expected="PK\\x03\\x04",
                              found=repr(buf[p:p + 4]), hint="the archive is damaged; fetch it again")
    nlen, elen = struct.unpack_from("<2H", buf, p + 26)
    start = p + 30 + nlen + elen
    csize = int(listing.csize[i])
    data = buf[start:start + csize]
    if len(data) < csize:  # extra field longer than the slack: fetch exactly
        data = os.pread(fd, csize, int(listing.offset[i]) + 30 + nlen + elen)
    usize = int(listing.usize[i])
    try:   # inflate at most one byte more than declared: a lying size is caught below
        raw = zlib.decompressobj(-15).decompress(data, usize + 1) if listing.method[i] == 8 else data
    except zlib.error as e:
        raise SD19FormatError("corrupt zip member (inflate failed)", path=f"{path}:{name}",
                              expected="valid deflate data", found=str(e)) from None
    if len(raw) != usize or (zlib.crc32(raw) & 0xFFFFFFFF) != int(listing.crc[i]):
        raise SD19FormatError("corrupt zip member (size or CRC mismatch)", path=f"{path}:{name}",
                              expected=f"{usize} bytes, crc {int(listing.crc[i]):08x}",
                              found=f"{len(raw)} bytes, crc {zlib.crc32(raw) & 0xFFFFFFFF:08x}",
                              hint="the archive is damaged; fetch it again")
    return raw
