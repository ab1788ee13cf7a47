"""Atomic outputs: files and folders appear whole or not at all.

Every file the package writes goes through :func:`atomic_file` (temporary name
in the same folder, then ``os.replace``) and every build folder through
:func:`atomic_dir` (``<out>.incomplete`` then rename, under the ``<out>.lock``
of :func:`output_lock`), so a failure (Ctrl-C included) never leaves a
half-written dataset behind, two runs into one folder cannot mix, and an
output never overlaps an input (:func:`check_output_path`).  A full disk is
one :class:`~mnistforge.errors.DiskFullError` naming the path.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

# tempfile, shutil and datetime are imported where they are used: a load that writes
# nothing imports this module (through the cache) and should not pay for them.

@contextlib.contextmanager
def atomic_file(path, mode: str = "wb"):
    """Open a temporary file next to ``path``; rename it onto ``path`` on success.

    On any exception (KeyboardInterrupt included) the temporary file is removed
    and ``path`` is untouched.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "out.bin")
    >>> with atomic_file(p) as f:
    ...     _ = f.write(b"data")
    >>> open(p, "rb").read()
    b'data'
    """
    from ..errors import ConfigError

    path = Path(path)
    if path.is_dir():
        raise ConfigError("the output path is an existing folder", path=path,
                          expected="a file name", found="a folder", hint="name a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ConfigError("the output path lies under a file", path=path,
                          expected="a path whose folders are folders",
                          found="a file among them", hint="choose another path") from None
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    # mkstemp creates 0600 files; outputs get the usual permissions (0666 minus the umask).
    os.chmod(tmp, 0o666 & ~_UMASK)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        full = disk_full_error(e, path) if isinstance(e, OSError) else e
        if full is e:
            raise
        raise full from e


#: a file inside ``<out>.incomplete`` while it is being built: a stale temporary folder
#: is removed only when it holds this mark (the package made it), never otherwise
INCOMPLETE_MARK = ".mnistforge-incomplete"


def is_build_output(folder) -> bool:
    """Whether ``folder`` was written by a build: it holds ``manifest.json``, or only subfolders
    that each do (``build all``).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> is_build_output(d), (d / "manifest.json").write_text("{}") and is_build_output(d)
    (False, True)
    """
    folder = Path(folder)
    if (folder / "manifest.json").is_file():
        return True
    try:
        children = list(folder.iterdir())
    except OSError:
        return False
    return bool(children) and all(c.is_dir() and not c.is_symlink()
                                  and (c / "manifest.json").is_file() for c in children)


def check_output_path(out, inputs=()) -> Path:
    """Refuse an output folder that is a file, lies under a file, or overlaps an input.

    ``out`` must not equal, contain or lie inside any of ``inputs`` (so neither
    a build nor ``--overwrite`` can ever touch its own source).  Returns
    ``out`` as a :class:`~pathlib.Path`.

    >>> check_output_path("/data/build", ["/data/sd19"])
    PosixPath('/data/build')
    >>> check_output_path("/data", ["/data/sd19"])  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.ConfigError: /data: the output folder contains an input ...
    """
    from ..errors import ConfigError

    out = Path(os.path.abspath(out))  # "." or "x/.." have no name to put a suffix on
    if out.exists() and not out.is_dir():
        raise ConfigError("the output path is an existing file", path=out,
                          expected="a folder to create", found="a file",
                          hint="choose another --out")
    for parent in out.absolute().parents:
        if parent.exists() and not parent.is_dir():
            raise ConfigError("the output path lies under a file", path=out,
                              expected="a folder path", found=f"{parent} is a file",
                              hint="choose another --out")
    real_out = _real(out)
    for inp in inputs:
        if inp is None:
            continue
        real_in = _real(Path(inp))
        if real_out == real_in:
            what = "the output folder is an input"
        elif real_out in real_in.parents:
            what = "the output folder contains an input"
        elif real_in in real_out.parents:
            what = "the output folder is inside an input"
        else:
            continue
        raise ConfigError(what, path=out, expected="an output folder apart from every input",
                          found=f"input {inp}",
                          hint="choose an --out that neither holds nor lies in the inputs")
    return out


def _real(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare the spelled path
        return p.absolute()


@contextlib.contextmanager
def atomic_dir(out, *, overwrite: bool = False, inputs=(), owned=is_build_output):
    """Build a folder under ``<out>.incomplete`` and rename it to ``out`` on success.

    Yields the temporary folder path.  While it runs, ``<out>.lock`` is held
    (an OS file lock, released when the process ends however it ends), so a
    second run into the same ``out`` fails at once with
    :class:`~mnistforge.errors.OutputInUseError` instead of deleting the first
    one's work.  ``out`` must not overlap ``inputs``
    (:func:`check_output_path`).  An existing ``out`` is replaced only with
    ``overwrite`` and only if ``owned(out)`` says the package wrote it (by
    default: it holds a build manifest), after the new folder is complete.
    A full disk raises :class:`~mnistforge.errors.DiskFullError`; nothing
    half-written is left either way.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "build")
    >>> with atomic_dir(out) as tmp:
    ...     _ = open(os.path.join(tmp, "f"), "w").write("x")
    >>> os.listdir(out)
    ['f']
    """
    import shutil

    from ..errors import BuildError

    out = check_output_path(out, inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    with output_lock(out):
        if out.exists() or out.is_symlink():
            if not overwrite:
                raise BuildError(
                    "output folder already exists", path=out, expected="a new folder",
                    found="an existing one", hint="choose another --out or pass --overwrite")
            if out.is_symlink() or not owned(out):
                raise BuildError(
                    "--overwrite replaces only a folder mnistforge wrote", path=out,
                    expected="a folder written by mnistforge (with its manifest)",
                    found="a folder it did not write", hint="choose another --out or remove "
                    "the folder yourself")
        tmp = out.with_name(out.name + ".incomplete")
        _remove_stale(tmp)
        tmp.mkdir()
        (tmp / INCOMPLETE_MARK).write_bytes(b"")
        try:
            try:
                yield tmp
            except OSError as e:
                full = disk_full_error(e, out)
                if full is e:
                    raise
                raise full from e
            (tmp / INCOMPLETE_MARK).unlink()
            if out.exists():
                old = out.with_name(out.name + ".old")
                _remove_stale(old, mark=None)
                os.replace(out, old)
                os.replace(tmp, out)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def _remove_stale(tmp: Path, mark: str | None = INCOMPLETE_MARK) -> None:
    """Remove a temporary folder left by a killed run (the lock is held: no run uses it)."""
    from ..errors import BuildError

    if not (tmp.exists() or tmp.is_symlink()):
        return
    if tmp.is_dir() and not tmp.is_symlink() and (mark is None or (tmp / mark).exists()):
        import shutil

        shutil.rmtree(tmp)
        return
    raise BuildError("a folder mnistforge did not write is in the way", path=tmp,
                     expected="no such folder, or one left by an interrupted mnistforge run",
                     found="something else", hint="move it away and run again")


def disk_full_error(e: OSError, where: Path):
    """A full disk as :class:`DiskFullError` naming the path; any other OSError unchanged."""
    import errno

    from ..errors import DiskFullError

    if isinstance(e, DiskFullError) or e.errno not in (errno.ENOSPC, errno.EDQUOT):
        return e
    path = e.filename or where
    return DiskFullError("no space left on the device while writing", path=path,
                         expected="free space for the output", found=os.strerror(e.errno),
                         hint="free some space (nothing half-written was kept) and run again")


@contextlib.contextmanager
def output_lock(out, *, wait: bool = False):
    """Hold ``<out>.lock`` (an exclusive OS lock) while ``out`` is written.

    Raises :class:`~mnistforge.errors.OutputInUseError` at once when another
    process holds it, or with ``wait`` waits for it (two fetches of one file:
    the second then finds the first one's result).  The lock dies with its
    process, so a killed run never blocks the next one; the lock file is
    removed on exit.
    """
    from ..errors import OutputInUseError

    lock = Path(out).with_name(Path(out).name + ".lock")
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
    while True:
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            raise OutputInUseError(
                "another mnistforge run is writing this output", path=out,
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
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import: os.umask can only be read by setting it, which is not thread-safe.
_UMASK = _umask()


def utc_now() -> str:
    """ISO timestamp, for logs and reports only (never in reproducible outputs)."""
    import datetime as _dt

    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
