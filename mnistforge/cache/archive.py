"""Safe zip reading: members streamed in place (:func:`open_member`, :func:`iter_members`), and
extracted only inside their folder (:func:`safe_extract`: paths that escape, absurd sizes or
ratios refused with :class:`~mnistforge.errors.UnsafeArchiveError` before anything is written).

>>> import tempfile
>>> d = tempfile.mkdtemp(); z = os.path.join(d, "a.zip")
>>> with zipfile.ZipFile(z, "w") as zf:
...     zf.writestr("b/2.txt", "two"); zf.writestr("a/1.txt", "one")
>>> [i.filename for i in iter_members(z)]
['a/1.txt', 'b/2.txt']
>>> sorted(p.name for p in safe_extract(z, os.path.join(d, "out")))
['1.txt', '2.txt']
"""
from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import IO, Union

from ..errors import MissingFileError, PathArg, UnsafeArchiveError
from ..io.atomic import atomic_file

__all__ = ["open_member", "iter_members", "member_names", "check_member", "safe_extract",
           "MAX_MEMBER_BYTES", "MAX_TOTAL_BYTES", "MAX_RATIO"]

#: largest uncompressed member accepted by default (the biggest real member, an
#: EMNIST byclass image file, is ~550 MB)
MAX_MEMBER_BYTES = 4 << 30
#: largest total uncompressed size accepted by :func:`safe_extract` by default
MAX_TOTAL_BYTES = 64 << 30
#: largest compression ratio accepted (deflate cannot exceed ~1032:1; bombs nest or lie)
MAX_RATIO = 1100
CHUNK = 1 << 20

#: a zip archive: its path, or one already open
ZipArg = Union[PathArg, zipfile.ZipFile]


def _zip(path_or_zip: ZipArg) -> AbstractContextManager[zipfile.ZipFile]:
    if isinstance(path_or_zip, zipfile.ZipFile):
        return contextlib.nullcontext(path_or_zip)
    try:
        return zipfile.ZipFile(path_or_zip)
    except FileNotFoundError:
        raise MissingFileError("zip file not found", path=path_or_zip) from None
    except (zipfile.BadZipFile, UnicodeDecodeError, ValueError, EOFError) as e:
        # a member name that is not valid UTF-8 (flag 0x800) raised a raw UnicodeDecodeError
        raise UnsafeArchiveError("not a readable zip file", path=path_or_zip, expected="a zip archive", found=str(e),
                                 hint="the file is damaged or incomplete: fetch it again") from None


def _name(path_or_zip: ZipArg) -> str | None:
    """How messages name the archive (an open ZipFile of no file: None)."""
    return path_or_zip.filename if isinstance(path_or_zip, zipfile.ZipFile) else os.fspath(path_or_zip)


def iter_members(path_or_zip: ZipArg, pattern: str | None = None) -> Iterator[zipfile.ZipInfo]:
    """The :class:`zipfile.ZipInfo` of the files, sorted by name; ``pattern``: a glob (``"gzip/*.gz"``)."""
    with _zip(path_or_zip) as zf:
        infos = sorted((i for i in zf.infolist() if not i.is_dir()), key=lambda i: i.filename)
    yield from (i for i in infos if pattern is None or fnmatch.fnmatchcase(i.filename, pattern))


def member_names(path_or_zip: ZipArg, pattern: str | None = None) -> list[str]:
    return [i.filename for i in iter_members(path_or_zip, pattern)]


@contextlib.contextmanager
def open_member(path_or_zip: ZipArg, member: str, *, max_bytes: int = MAX_MEMBER_BYTES) -> Iterator[IO[bytes]]:
    """One member of a zip, for streaming reads (UnsafeArchiveError when it claims over ``max_bytes``)."""
    with _zip(path_or_zip) as zf:
        try:
            info = zf.getinfo(member)
        except KeyError:
            raise MissingFileError(
                "member not in archive", path=_name(path_or_zip),
                expected=member, found=f"{len(zf.namelist())} other members") from None
        _check_size(info, max_bytes, MAX_RATIO, zf.filename)
        with zf.open(info) as f:
            yield f


def _check_size(info: zipfile.ZipInfo, max_bytes: int, max_ratio: float, where: str | None) -> None:
    if info.file_size > max_bytes:
        raise UnsafeArchiveError(
            "member claims an absurd size", path=f"{where}:{info.filename}",
            expected=f"at most {max_bytes} bytes", found=f"{info.file_size} bytes",
            hint="refusing to extract a possible zip bomb")
    if info.file_size > (1 << 20) and info.file_size > max_ratio * max(info.compress_size, 1):
        raise UnsafeArchiveError(
            "member claims an absurd compression ratio", path=f"{where}:{info.filename}",
            expected=f"at most {max_ratio}:1", found=f"{info.file_size} bytes from {info.compress_size}",
            hint="refusing to extract a possible zip bomb")


def check_member(info: zipfile.ZipInfo, target: PathArg, *, max_bytes: int = MAX_MEMBER_BYTES,
                 max_ratio: float = MAX_RATIO, where: str = "archive") -> Path:
    """Return where ``info`` would be extracted under ``target``, or raise UnsafeArchiveError."""
    name = info.filename
    target = Path(target).resolve()
    bad = None
    if "\\" in name or "\x00" in name:
        bad = "a backslash or NUL in the name"
    elif name.startswith("/") or PurePosixPath(name).is_absolute() or \
            (len(name) > 1 and name[1] == ":"):
        bad = "an absolute path"
    elif ".." in PurePosixPath(name).parts:
        bad = "a '..' component"
    elif stat.S_ISLNK(info.external_attr >> 16):
        bad = "a symbolic link"
    if bad is None:
        dest = (target / name).resolve()
        if dest != target and target not in dest.parents:
            bad = "a path outside the target folder"
    if bad:
        raise UnsafeArchiveError(
            "member would escape the target folder", path=f"{where}:{name}",
            expected=f"a relative path inside {target}", found=bad,
            hint="refusing to extract it (the archive may be malicious)")
    _check_size(info, max_bytes, max_ratio, where)
    return dest


def safe_extract(path_or_zip: ZipArg, target: PathArg, members: str | Iterable[str] | None = None, *,
                 max_bytes: int = MAX_MEMBER_BYTES,
                 max_total: int = MAX_TOTAL_BYTES, max_ratio: float = MAX_RATIO) -> list[Path]:
    """Extract ``members`` (names or globs; default all) into ``target``; the paths, sorted.

    Every member is checked (:func:`check_member`) and the total claimed size against
    ``max_total`` *before* anything is written; a member yielding more than it declared is refused.
    """
    target = Path(target)
    where = _name(path_or_zip) or "archive"
    with _zip(path_or_zip) as zf:
        infos = list(iter_members(zf))
        if members is not None:
            pats = [members] if isinstance(members, str) else list(members)
            infos = [i for i in infos if any(fnmatch.fnmatchcase(i.filename, p) for p in pats)]
        plan = [(i, check_member(i, target, max_bytes=max_bytes, max_ratio=max_ratio, where=where)) for i in infos]
        total = sum(i.file_size for i in infos)
        if total > max_total:
            raise UnsafeArchiveError(
                "archive claims an absurd total size", path=where,
                expected=f"at most {max_total} bytes", found=f"{total} bytes")
        done: list[Path] = []
        try:
            for info, dest in plan:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, atomic_file(dest) as out:
                    n = 0
                    for b in iter(lambda: src.read(CHUNK), b""):
                        n += len(b)
                        if n > info.file_size:
                            raise UnsafeArchiveError(
                                "member is larger than it declares", path=f"{where}:{info.filename}",
                                expected=f"{info.file_size} bytes", found=f"more than {n - len(b)}")
                        out.write(b)
                done.append(dest)
        except BaseException:
            for p in done:
                with contextlib.suppress(OSError):
                    p.unlink()
            raise
    return sorted(done)
