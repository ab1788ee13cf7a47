"""Atomic outputs: files and folders appear whole or not at all.

Every file the package writes goes through :func:`atomic_file` (temporary name
in the same folder, then ``os.replace``) and every build folder through
:func:`atomic_dir` (``<out>.incomplete`` then rename), so a failure (Ctrl-C
included) never leaves a half-written dataset behind.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import tempfile
from pathlib import Path

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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    # mkstemp creates 0600 files; outputs get the usual permissions (0666 minus the umask).
    os.chmod(tmp, 0o666 & ~_UMASK)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(out, *, overwrite: bool = False):
    """Build a folder under ``<out>.incomplete`` and rename it to ``out`` on success.

    Yields the temporary folder path.  If ``out`` exists and ``overwrite`` is
    true it is replaced only after the new folder is complete.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "build")
    >>> with atomic_dir(out) as tmp:
    ...     _ = open(os.path.join(tmp, "f"), "w").write("x")
    >>> os.listdir(out)
    ['f']
    """
    from ..errors import BuildError

    out = Path(out)
    if out.exists() and not overwrite:
        raise BuildError(
            "output folder already exists", path=out, expected="a new folder",
            found="an existing one", hint="choose another --out or pass --overwrite")
    tmp = out.with_name(out.name + ".incomplete")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import: os.umask can only be read by setting it, which is not thread-safe.
_UMASK = _umask()


def utc_now() -> str:
    """ISO timestamp, for logs and reports only (never in reproducible outputs)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
