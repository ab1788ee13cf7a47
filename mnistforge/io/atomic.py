"""Atomic outputs: files and folders appear whole or not at all.

Every file the package writes goes through :func:`atomic_file` and every build folder through
:func:`atomic_dir` (under the lock of :func:`output_lock`), so a failure (Ctrl-C included) never
leaves a half-written dataset behind, two runs into one folder cannot mix, and an output never
overlaps an input.  What may be written is decided by :mod:`mnistforge.io.outputs`.
"""
from __future__ import annotations

import contextlib
import ctypes
import datetime as _dt
import errno
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Any

# check_output_file, check_output_path, disk_full_error, unlisted_entries: re-exported
from .outputs import (INCOMPLETE_MARK, check_file, check_lock_path, check_output_file,  # noqa: F401
                      check_output_folder, check_output_path, check_replaceable, disk_full_error,
                      is_marked, lock_path, named_os_error, refuse_in_the_way, unlisted_entries)
from .outputs import Owned
from .types import StrPath
from ..errors import OutputInUseError


@contextlib.contextmanager
def atomic_file(path: StrPath, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; rename it onto ``path`` on success.

    On any exception (KeyboardInterrupt included) the temporary file is removed
    and ``path`` is untouched.  ``path`` must be a regular file or a new name
    (:func:`check_output_file`); OS failures are named errors (:func:`named_os_error`).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "out.bin")
    >>> with atomic_file(p) as f:
    ...     _ = f.write(b"data")
    >>> open(p, "rb").read()
    b'data'
    """
    path = check_file(Path(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise named_os_error(e, path) from None

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise named_os_error(e, path) from None
    # mkstemp creates 0600 files; outputs get the usual permissions (0666 minus the umask).
    os.chmod(tmp, 0o666 & ~_UMASK)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
        check_file(path)  # the path may have become a link or a device meanwhile
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        named = named_os_error(e, path) if isinstance(e, OSError) else e
        if named is e:
            raise
        raise named from e


@contextlib.contextmanager
def atomic_dir(out: StrPath, *, overwrite: bool = False, inputs: Iterable[StrPath | None] = (),
               owned: Owned | None = None) -> Iterator[Path]:
    """Build a folder under ``<out>.incomplete`` and rename it to ``out`` on success.

    Yields the temporary folder path.  While it runs, ``<out>.lock`` is held (an OS file lock, released when
    the process ends however it ends), so a second run into the same ``out`` fails at once with
    :class:`~mnistforge.errors.OutputInUseError` instead of deleting the first one's work.  ``out`` must not
    overlap ``inputs`` (:func:`check_output_folder`, which callers also run before their work).  An existing
    ``out`` is replaced only with ``overwrite`` and only if ``owned(out)`` finds nothing its record does not
    list (:func:`check_replaceable`), checked again once the new folder is complete; old and new are then
    exchanged in one step (:func:`replace_folder`), so ``out`` is always whole.  A full disk raises
    :class:`~mnistforge.errors.DiskFullError`; nothing half-written is left either way.

    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "build")
    >>> with atomic_dir(out) as tmp:
    ...     _ = open(os.path.join(tmp, "f"), "w").write("x")
    >>> os.listdir(out)
    ['f']
    """
    out = check_output_folder(out, inputs=inputs, overwrite=overwrite, owned=owned)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise named_os_error(e, out, "output folder") from None
    with output_lock(out):
        check_replaceable(out, overwrite=overwrite, owned=owned)
        tmp = out.with_name(out.name + ".incomplete")
        _remove_stale(tmp)
        # made and marked with Ctrl-C held: an interrupted run leaves no unmarked folder (only
        # a kill between the two steps can, and the next run then names it)
        with _signals_deferred():
            try:
                tmp.mkdir()  # (one that appeared meanwhile is not ours: EEXIST, never removed)
            except OSError as e:
                raise named_os_error(e, tmp, "output folder") from None
            try:
                (tmp / INCOMPLETE_MARK).write_bytes(b"")
            except OSError as e:
                with contextlib.suppress(OSError):
                    tmp.rmdir()  # empty: this run made it a moment ago
                raise named_os_error(e, tmp, "output folder") from None
        try:  # from here on tmp is this run's own, and marked: whatever fails, it is removed
            try:
                yield tmp
            except OSError as e:
                named = named_os_error(e, out)
                if named is e:
                    raise
                raise named from e
            if os.path.lexists(out):
                # the folder may have gained a file of the user's while this run worked
                check_replaceable(out, overwrite=overwrite, owned=owned)
                try:
                    replace_folder(tmp, out)
                except OSError as e:
                    raise named_os_error(e, out, "output folder") from e
            else:
                (tmp / INCOMPLETE_MARK).unlink()
                try:
                    os.rename(tmp, out)
                except OSError as e:
                    raise named_os_error(e, out, "output folder") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def replace_folder(new: Path, out: Path) -> None:
    """Put the complete folder ``new`` (holding :data:`INCOMPLETE_MARK`) in place of ``out``. Linux exchanges the two
    in one ``renameat2(RENAME_EXCHANGE)``: ``out`` is the old or the new folder at every instant, a kill included.  The
    old one, now at ``new``'s name, is marked and removed (a kill before that leaves it for the next run to remove).
    Elsewhere the old folder is moved into a fresh sibling this run made (``tempfile.mkdtemp``) and put back if the
    second rename fails.  Signals wait until the names are settled, so Ctrl-C cannot fall between the two steps."""
    (new / INCOMPLETE_MARK).unlink()
    old = None
    try:
        with _signals_deferred():
            if _exchange(new, out):
                old = new
                with contextlib.suppress(OSError):
                    (old / INCOMPLETE_MARK).write_bytes(b"")  # the old output, at new's name
            else:
                aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.replaced-", dir=out.parent))
                try:
                    os.replace(out, aside)       # onto the empty folder this run just made
                except BaseException:
                    os.rmdir(aside)
                    raise
                try:
                    os.rename(new, out)
                except BaseException:
                    os.replace(aside, out)       # the old output back in place
                    raise
                old = aside
    finally:  # (a Ctrl-C held during the swap arrives here: the old output still goes)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):  # pragma: no cover - glibc before 2.28, musl
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False  # pragma: no cover - a file system without exchange
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends, then deliver them. Python handlers run in the main thread
    whichever thread the OS hands a signal to, so the handlers are swapped (a signal mask would hold it only for one
    thread).  Elsewhere than the main thread nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        num: int | None = getattr(signal, name, None)
        prev = signal.getsignal(num) if num is not None else None
        if num is not None and prev is not None and prev is not signal.SIG_IGN:
            old[num] = signal.signal(num, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        for num, prev in old.items():
            signal.signal(num, prev)
        for num in dict.fromkeys(got):
            signal.raise_signal(num)


def _remove_stale(tmp: Path) -> None:
    """Remove a temporary folder left by a killed run (the lock is held: no run uses it)."""
    if not os.path.lexists(tmp):
        return
    if is_marked(tmp):
        shutil.rmtree(tmp)
        return
    refuse_in_the_way(tmp)


@contextlib.contextmanager
def output_lock(out: StrPath, *, wait: bool = False) -> Iterator[None]:
    """Hold ``<out>.lock`` (an exclusive OS lock) while ``out`` is written. Raises
    :class:`~mnistforge.errors.OutputInUseError` at once when another process holds it, or with ``wait`` waits for it
    (two fetches of one file: the second then finds the first one's result).  The lock dies with its process, so a
    killed run never blocks the next one; the lock file is removed on exit.  A lock path that is a folder, a link, a
    device or a file of the user's is an :class:`~mnistforge.errors.OutputPathError`, a read-only or immutable folder a
    :class:`~mnistforge.errors.NotWritableError`."""
    lock = lock_path(Path(out))
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: exclusive creation instead
        fcntl = None  # type: ignore[assignment]
    if fcntl is None:  # pragma: no cover
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            raise OutputInUseError("another mnistforge run is writing this output", path=out,
                                   expected="no other run", found=f"lock {lock}",
                                   hint="wait for it, or remove the lock if no run is left") from None
        try:
            yield
        finally:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)
        return
    flags = os.O_CREAT | os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    while True:
        check_lock_path(lock)
        try:
            fd = os.open(lock, flags, 0o644)
        except OSError as e:
            raise named_os_error(e, lock, "lock") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # became a FIFO or device meanwhile
                os.close(fd)
                check_lock_path(lock)
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            raise OutputInUseError("another mnistforge run is writing this output", path=out,
                                   expected="no other run on the same --out",
                                   found=f"{lock} held" + (f" by process {holder}" if holder else ""),
                                   hint="wait for that run to finish, or choose another --out") from None
        # The previous holder may have removed the file between our open and flock:
        # then we locked an orphan inode; start again on the current file.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        try:
            check_lock_path(lock)  # still only a process id (a file of the user's is never truncated)
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(fd), os.lstat(lock)):
                os.unlink(lock)
        with contextlib.suppress(OSError):
            os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import: os.umask can only be read by setting it, which is not thread-safe.
_UMASK = _umask()


def utc_now() -> str:
    """ISO timestamp, for logs and reports only (never in reproducible outputs)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
