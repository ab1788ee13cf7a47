"""Atomic outputs, reproducible compression, hashes and build manifests.

Every file the package writes goes through :func:`atomic_file` (temporary name
in the same folder, then ``os.replace``) and every build folder through
:func:`atomic_dir` (``<out>.incomplete`` then rename), so a failure (Ctrl-C
included) never leaves a half-written dataset behind.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import gzip
import hashlib
import json
import logging
import os
import platform
import shutil
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

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
    from .errors import BuildError

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


def gzip_bytes(data: bytes, level: int = 9) -> bytes:
    """Gzip ``data`` reproducibly (mtime 0, no file name in the header)."""
    return gzip.compress(data, compresslevel=level, mtime=0)


def open_gzip_writer(fileobj, level: int = 9):
    """A reproducible gzip writer over an open binary file (mtime 0, empty name)."""
    return gzip.GzipFile(filename="", mode="wb", fileobj=fileobj, compresslevel=level, mtime=0)


def package_version() -> str:
    from . import __version__
    return __version__


def write_manifest(folder, *, kind: str, inputs: dict, parameters: dict,
                   notes: list[str] | None = None, extra: dict | None = None,
                   name: str = "manifest.json") -> dict:
    """Write ``manifest.json`` listing inputs, parameters, version and output hashes.

    Every regular file in ``folder`` (except the manifest) is hashed.  The
    manifest holds no timestamps, so identical builds give identical manifests.

    Returns the manifest as a dict.
    """
    folder = Path(folder)
    outputs = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != name and not p.name.startswith("."):
            rel = p.relative_to(folder).as_posix()
            outputs[rel] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    manifest = {
        "kind": kind,
        "package": "mnistforge",
        "version": package_version(),
        "python": platform.python_version(),
        "inputs": inputs,
        "parameters": parameters,
        "notes": notes or [],
        "outputs": outputs,
    }
    if extra:
        manifest.update(extra)
    with atomic_file(folder / name, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return manifest


def read_manifest(folder, name: str = "manifest.json") -> dict | None:
    """Return the manifest of a build folder, or ``None`` when there is none."""
    p = Path(folder) / name
    if not p.is_file():
        return None
    with open(p) as f:
        return json.load(f)


def utc_now() -> str:
    """ISO timestamp, for logs and reports only (never in reproducible outputs)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
