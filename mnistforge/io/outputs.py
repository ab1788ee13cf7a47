"""What an output may be, decided before any work; filesystem failures as named errors.

:mod:`mnistforge.io.atomic` (which writes) runs these checks; commands run them on their
arguments when they are parsed.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import NoReturn
from ..errors import MnistforgeError
from .types import StrPath
from ..errors import OutputPathError
from ..errors import NotWritableError
from ..errors import ConfigError
from ..errors import NotOwnedError, OutputExistsError
from ..errors import BuildError
from ..errors import DiskFullError
from .. import errors


#: ``owned(folder)``: what a folder holds that its own record does not list (empty: all listed)
Owned = Callable[[Path], list[str]]

#: a file inside ``<out>.incomplete`` while it is being built: a stale temporary folder
#: is removed only when it holds this mark (the package made it), never otherwise
INCOMPLETE_MARK = ".mnistforge-incomplete"



# ----------------------------------------------------------------------------- what may be written

#: bytes a name grows by on its way to the output: ``.NAME.xxxxxxxx.tmp`` (atomic_file),
#: ``NAME.incomplete`` / ``NAME.lock`` (atomic_dir), ``.NAME.replaced-xxxxxxxx`` (overwrite)
NAME_GROWTH = 19


def _kind(st: os.stat_result) -> str:
    """What a path is, in words (for messages)."""
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(st.st_mode):
            return words
    return "a regular file"


def _lstat(path: Path, what: str) -> os.stat_result | None:
    """``os.lstat(path)`` or None when nothing is there; other failures as named errors."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise named_os_error(e, path, what) from None


def _check_name_length(path: Path, what: str) -> None:
    """Refuse a name the file system cannot hold once the package's suffixes are added."""
    probe = path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        name_max = os.pathconf(probe, "PC_NAME_MAX")
        path_max = os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no pathconf (Windows)
        name_max, path_max = 255, 4096
    name, full = len(os.fsencode(path.name)), len(os.fsencode(str(path.absolute())))
    if name + NAME_GROWTH > name_max or full + NAME_GROWTH >= path_max:
        raise OutputPathError(f"the {what} name is too long for the file system", path=path,
                              expected=f"a name of at most {name_max - NAME_GROWTH} bytes and a "
                                       f"path under {path_max - NAME_GROWTH} (mnistforge writes "
                                       "under a temporary name a little longer first)",
                              found=f"a name of {name} bytes, a path of {full}",
                              hint="choose a shorter name")


def _check_writable(path: Path, what: str) -> None:
    """Refuse, before any work, a path whose folder cannot be written (read-only, immutable,
    no permission): the temporary name is created there."""
    probe = path.parent
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    if os.path.isdir(probe) and not os.access(probe, os.W_OK):
        raise NotWritableError(f"the {what} cannot be written: its folder is not writable",
                               path=probe, expected="a writable folder",
                               found="no write access (read-only, immutable or not yours)",
                               hint="choose a writable place, or make it writable (chmod; "
                                    "chattr -i for an immutable folder)")


def check_file(path: Path, what: str = "output", writable: bool = True) -> Path:

    st = _lstat(path, what)
    if st is not None and _kind(st) != "a regular file":
        kind = _kind(st)
        raise OutputPathError(
            f"the {what} path is {'an existing folder' if kind == 'a folder' else kind}", path=path,
            expected="a regular file or a new name ('-' for standard output)", found=kind,
            hint="name a regular file or a new one: mnistforge never writes through a link, nor "
                 "into a device, pipe or folder, and leaves this one as it is" + (
                     " ('-' writes to standard output)" if kind != "a folder" else ""))
    _check_name_length(path, what)
    if writable:
        _check_writable(path, what)
    return path


def check_output_file(path: StrPath, what: str = "output", writable: bool = True) -> Path | None:
    """Refuse, before any work, an output file that exists and is not a regular file.

    A symlink (even to a file of yours: the link's target stays untouched), a FIFO, a device (``/dev/full``),
    a socket or a folder is an :class:`~mnistforge.errors.OutputPathError`, as is a path under a file or a
    name too long once the temporary suffix is added; with ``writable`` a folder that cannot be written is a
    :class:`~mnistforge.errors.NotWritableError`.  ``-`` means standard output (returns None).
    :func:`atomic_file` checks the same again.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); os.symlink(os.path.join(d, "real.json"), os.path.join(d, "l.json"))
    >>> check_output_file("-") is None, check_output_file(os.path.join(d, "new.json")).name
    (True, 'new.json')
    >>> check_output_file(os.path.join(d, "l.json"))  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.OutputPathError: .../l.json: the output path is a symbolic link: ...
    """
    if os.fspath(path) == "-":
        return None
    return check_file(Path(path), what, writable)


def check_output_path(out: StrPath, inputs: Iterable[StrPath | None] = (), writable: bool = True) -> Path:
    """Refuse an output folder that is a file, a symlink, lies under a file, or overlaps an input.

    ``out`` must not equal, contain or lie inside any of ``inputs`` (so neither a build nor ``--overwrite``
    can ever touch its own source).  Returns ``out`` as a :class:`~pathlib.Path`.

    >>> check_output_path("/data/build", ["/data/sd19"])
    PosixPath('/data/build')
    >>> check_output_path("/data", ["/data/sd19"])  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.ConfigError: /data: the output folder contains an input ...
    """
    out = Path(os.path.abspath(out))  # "." or "x/.." have no name to put a suffix on
    st = _lstat(out, "output folder")
    if st is not None and _kind(st) != "a folder":
        kind = _kind(st)
        raise OutputPathError(f"the output path is {'an existing file' if kind == 'a regular file' else kind}",
                              path=out, expected="a folder to create (or one mnistforge wrote, "
                              "with --overwrite)", found=kind,
                              hint="choose another --out" + (
                                  " (mnistforge never writes through a link)" if kind == "a symbolic link" else ""))
    if st is not None and os.path.ismount(out):  # (it could never be renamed into place)
        raise OutputPathError("the output folder is a mount point", path=out, expected="a folder that can be renamed",
                              found="a mount point", hint="choose an --out inside the mounted folder")
    _check_name_length(out, "output folder")
    if writable:
        _check_writable(out, "output folder")
    check_apart(out, inputs, "output folder")
    return out


def check_apart(out: StrPath, inputs: Iterable[StrPath | None], what: str = "output") -> None:
    """Refuse an output (file or folder) that is an input (a link or hard link to one
    included), lies inside an input folder, or holds an input: writing it would replace or
    remove what the command reads.  ``-`` (standard output) and None inputs are skipped.

    >>> check_apart("/data/out.json", ["/data/sd19", None])
    >>> check_apart("/data/sd19/x.json", ["/data/sd19"])  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.ConfigError: /data/sd19/x.json: the output is inside an input: ...
    """
    if os.fspath(out) == "-":
        return
    real_out = _real(Path(os.path.abspath(out)))
    for inp in inputs:
        if inp is None:
            continue
        real_in = _real(Path(inp))
        if real_out == real_in or _same_file(real_out, real_in):
            found = f"the {what} is an input"
        elif real_out in real_in.parents:
            found = f"the {what} contains an input"
        elif real_in in real_out.parents:
            found = f"the {what} is inside an input"
        else:
            continue
        raise ConfigError(found, path=out, expected=f"an {what} apart from every input",
                          found=f"input {os.fspath(inp)}",
                          hint="choose another path: the command would replace or hide what "
                               "it reads (nothing was written)")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _real(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare the spelled path
        return p.absolute()


def unlisted_entries(folder: StrPath, listed: Mapping[str, int | None], *, ignore: Callable[[str], bool] | None = None,
                     folders: Iterable[str] = (), limit: int = 10) -> list[str]:
    """What in ``folder`` its record does not list: the entries ``--overwrite`` would destroy.

    ``listed`` maps a relative path (``/``-separated) to its recorded size in bytes (None: any size).  A file
    not listed, of another size, a symlink, a FIFO or a folder holding nothing listed is reported (at most
    ``limit``, then a count); ``ignore(rel)`` accepts more, and ``folders`` are looked into even when they
    list nothing (the package's own caches).  An empty list means the folder is exactly what was recorded.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a").write_text("xy"); _ = (d / "b").write_text("")
    >>> unlisted_entries(d, {"a": 2}), unlisted_entries(d, {"a": 3, "b": None})
    (['b (not listed)'], ['a (2 bytes, recorded 3)'])
    """
    folder = Path(folder)
    skip = ignore or (lambda rel: False)
    parents = {"/".join(r.split("/")[:i]) for r in listed for i in range(1, r.count("/") + 1)}
    parents |= set(folders)
    found: list[str] = []

    def walk(d: Path, prefix: str) -> None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as err:
            found.append(f"{prefix or '.'} (unreadable: {err.strerror})")
            return
        for entry in entries:
            rel = prefix + entry.name
            if skip(rel):
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if rel in parents:
                    walk(Path(entry.path), rel + "/")
                else:
                    found.append(f"{rel}/ (not listed)")
            elif rel not in listed:
                found.append(f"{rel} (not listed)")
            elif not stat.S_ISREG(st.st_mode):
                found.append(f"{rel} ({_kind(st)})")
            elif listed[rel] is not None and st.st_size != listed[rel]:
                found.append(f"{rel} ({st.st_size} bytes, recorded {listed[rel]})")

    walk(folder, "")
    if len(found) > limit:
        found = found[:limit] + [f"and {len(found) - limit} more"]
    return found


def check_replaceable(out: StrPath, *, overwrite: bool, owned: Owned | None = None) -> None:
    """Refuse an existing ``out`` unless ``overwrite`` and ``owned(out)`` finds nothing foreign. ``owned(folder) ->
    list[str]`` names what the folder's own record does not list (:func:`unlisted_entries`); an empty folder holds
    nothing to lose.  Without ``owned`` nothing is replaced."""

    out = Path(out)
    if not os.path.lexists(out):
        return
    if out.is_symlink():  # (made one while the run worked: the link is never followed)
        raise OutputPathError("the output path is a symbolic link", path=out,
                              expected="a folder mnistforge wrote", found="a symbolic link",
                              hint="choose another --out (mnistforge never writes through a link)")
    if not overwrite:  # a usage error (exit 2), found before any work
        raise OutputExistsError("output folder already exists", path=out, expected="a new folder",
                         found="an existing one", hint="choose another --out or pass --overwrite")
    try:
        empty = out.is_dir() and not out.is_symlink() and not any(os.scandir(out))
    except OSError as e:
        raise named_os_error(e, out, "output folder") from None
    if empty:
        return
    problems = (["no record of what mnistforge wrote there"] + unlisted_entries(out, {})
                if owned is None else owned(out))
    if problems:
        raise NotOwnedError(
            "--overwrite replaces only a folder mnistforge wrote", path=out,
            expected="exactly the files its own record lists (a build's manifest.json, a "
                     "synthetic SD19's synthetic-sd19.json, an export's card)",
            found="; ".join(problems),
            hint="move those files away (nothing was removed), or choose another --out")


def check_output_folder(out: StrPath, *, inputs: Iterable[StrPath | None] = (), overwrite: bool = False,
                        owned: Owned | None = None) -> Path:
    """Everything :func:`atomic_dir` refuses, checked before any work: the path (:func:`check_output_path`), whether an
    existing folder may be replaced (:func:`check_replaceable`), and what is in the way of ``<out>.lock`` and
    ``<out>.incomplete``.  Returns ``out`` as an absolute path."""
    path = check_output_path(out, inputs)
    check_replaceable(path, overwrite=overwrite, owned=owned)
    check_lock_path(lock_path(path))
    tmp = path.with_name(path.name + ".incomplete")
    # (while a lock file exists another run may be at work there: the locked check decides)
    if os.path.lexists(tmp) and not is_marked(tmp) and not os.path.lexists(lock_path(path)):
        refuse_in_the_way(tmp)
    return path


def is_marked(tmp: Path) -> bool:
    return tmp.is_dir() and not tmp.is_symlink() and (tmp / INCOMPLETE_MARK).exists()


def refuse_in_the_way(p: Path) -> NoReturn:

    raise BuildError("a folder mnistforge did not write is in the way", path=p,
                     expected="no such folder, or one left by an interrupted mnistforge run",
                     found="something else", hint="move it away and run again")


def disk_full_error(e: OSError, where: Path) -> OSError:
    """A full disk as :class:`DiskFullError` naming the path; any other OSError unchanged."""
    if isinstance(e, DiskFullError) or e.errno not in (errno.ENOSPC, errno.EDQUOT):
        return e
    path = e.filename or where
    return DiskFullError("no space left on the device while writing", path=path,
                         expected="free space for the output", found=os.strerror(e.errno),
                         hint="free some space (nothing half-written was kept) and run again")


def _os_errors() -> dict[int, tuple[str, str, str, str]]:
    """errno -> (error class name, what, expected, hint) of the failures outputs meet."""
    ro = ("NotWritableError", "cannot write here", "a writable folder",
          "choose a writable place, or make it writable (chmod; chattr -i for an immutable "
          "folder; a read-only mount cannot be written)")
    table = {
        errno.EACCES: ro, errno.EPERM: ro, errno.EROFS: ro,
        errno.ENAMETOOLONG: ("OutputPathError", "a name is too long for the file system",
                             "names of at most 255 bytes", "choose a shorter name"),
        errno.ENOTDIR: ("OutputPathError", "the path lies under a file",
                        "a path whose folders are folders", "choose another path"),
        errno.EISDIR: ("OutputPathError", "a folder is in the way", "a file (or nothing)",
                       "move the folder away, or choose another path"),
        errno.ELOOP: ("OutputPathError", "a symbolic link is in the way",
                      "a regular file (mnistforge never writes through a link)",
                      "remove the link, or choose another path"),
        errno.ENOTEMPTY: ("BuildError", "output folder already exists", "a new folder",
                          "choose another --out (it appeared while this run worked)"),
    }
    table[errno.EEXIST] = table[errno.ENOTEMPTY]
    table[errno.EBUSY] = ("OutputPathError", "cannot be renamed (a mount point, or in use)",
                          "a folder that is not a mount point",
                          "choose an --out inside the mounted folder, not the mount point itself")
    table[errno.EXDEV] = table[errno.EBUSY]
    return table


def named_os_error(e: BaseException, where: StrPath, what: str | None = None) -> BaseException:
    """An OSError as one named error of :mod:`mnistforge.errors` (path, expected, found, what to do):
    a full disk :class:`DiskFullError`, a read-only or immutable place :class:`NotWritableError`,
    a name too long, a file or folder or link in the way :class:`OutputPathError`.  Errors of the
    package and anything else come back unchanged.

    >>> import errno
    >>> type(named_os_error(OSError(errno.ENAMETOOLONG, "File name too long"), "x")).__name__
    'OutputPathError'
    """
    if not isinstance(e, OSError) or isinstance(e, errors.MnistforgeError):
        return e
    full = disk_full_error(e, Path(where))
    if full is not e:
        return full
    entry = _os_errors().get(e.errno) if e.errno is not None else None
    if entry is None:
        return e
    cls, head, expected, hint = entry
    head = f"{what}: {head}" if what else head
    named: type[MnistforgeError] = getattr(errors, cls)
    return named(head, path=e.filename or where, expected=expected,
                                found=os.strerror(e.errno) if e.errno else str(e), hint=hint)


def lock_path(out: Path) -> Path:
    return out.with_name(out.name + ".lock")


def check_lock_path(lock: Path) -> None:
    """Refuse a ``<out>.lock`` that is not a lock file of the package's (a folder, a link, a
    FIFO, a file of the user's): it is neither truncated nor removed."""
    st = _lstat(lock, "lock")
    if st is None:
        return
    if _kind(st) != "a regular file":
        raise OutputPathError("the lock path is " + _kind(st), path=lock,
                              expected="no such path, or the lock file of a mnistforge run",
                              found=_kind(st), hint="move it away, or choose another --out")
    if st.st_size > _LOCK_MAX or not _lock_text(lock).isdigit() and st.st_size:
        raise OutputPathError("a file mnistforge did not write is in the way of the lock", path=lock,
                              expected="no such file, or a lock holding a process id",
                              found=f"a file of {st.st_size} bytes", hint="move it away, or choose another --out")


_LOCK_MAX = 32


def _lock_text(lock: Path) -> str:
    try:
        with open(lock, "rb") as f:
            return f.read(_LOCK_MAX).decode("ascii", "replace").strip()
    except OSError:
        return ""
