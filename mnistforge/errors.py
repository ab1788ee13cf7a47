"""One hierarchy of errors for the whole package.

Every error subclasses :class:`MnistforgeError` *and* the matching built-in, so
callers can catch either ``mnistforge.errors.IdxFormatError`` or plain
``ValueError``.  Messages name the path, what was expected, what was found and
what to do; :func:`describe` builds such a message consistently.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import IO, Union

#: what a message may name as its path
PathArg = Union[str, "os.PathLike[str]"]
#: a path, or an open binary file (named by its ``name``, as ``read_array`` may be given one)
Where = Union[PathArg, IO[bytes]]


def _named(path: Where) -> str:
    """``path`` as a message names it: the path itself, or an open file's name."""
    if isinstance(path, (str, bytes, os.PathLike)):
        return os.fspath(path)
    return str(getattr(path, "name", "<open file>"))


def describe(path: Where | None = None, expected: object = None, found: object = None,
             hint: str | None = None, what: str | None = None) -> str:
    """Build a uniform error message.

    >>> describe("a.gz", "magic 2051", "magic 7", "re-download the file")
    'a.gz: expected magic 2051, found magic 7. re-download the file'
    """
    parts = []
    head = _named(path) if path is not None else ""
    if what:
        head = f"{head}: {what}" if head else what
    body = []
    if expected is not None:
        body.append(f"expected {expected}")
    if found is not None:
        body.append(f"found {found}")
    msg = head
    if body:
        msg = f"{msg}: {', '.join(body)}" if msg else ", ".join(body)
    if hint:
        msg = f"{msg}. {hint}" if msg else hint
    parts.append(msg)
    return "".join(parts)


class MnistforgeError(Exception):
    """Base class of every error raised on purpose by mnistforge."""

    def __init__(self, message: str = "", *, path: Where | None = None, expected: object = None,
                 found: object = None, hint: str | None = None) -> None:
        if path is not None or expected is not None or found is not None or hint is not None:
            message = describe(path, expected, found, hint, what=message or None)
        super().__init__(message)
        self.path = _named(path) if path is not None else None
        self.expected = expected
        self.found = found
        self.hint = hint


class FormatError(MnistforgeError, ValueError):
    """A file does not follow the format it claims."""


class IdxFormatError(FormatError):
    """Malformed idx file (bad magic, unknown type, wrong length, ...)."""


class SD19FormatError(FormatError):
    """Malformed SD19 file (IHEAD header, raster, .cls/.mit, PNG)."""


class UnsafeFormatError(FormatError):
    """A file whose reading could run code (a pickle: torch ``.pt``, ``.pkl``, object arrays): refused."""


class IntegrityError(MnistforgeError, ValueError):
    """Content does not match its pinned hash or declared size."""


class HashMismatchError(IntegrityError):
    """A downloaded or cached file has the wrong hash."""


class DataMismatchError(IntegrityError):
    """Files under a dataset's official names hold other data (another dataset, or unknown content)."""


class InconsistentSourceError(IntegrityError):
    """An SD19 source disagrees with itself or with what it should hold: a repeated character
    index or zip member, duplicated characters or writer folders, more characters than published."""


class UnsafeArchiveError(MnistforgeError, ValueError):
    """An archive member would escape its target folder or claims an absurd size."""


class DatasetNotFoundError(MnistforgeError, KeyError):
    """Unknown dataset or split name."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0]) if self.args else ""


class MissingFileError(MnistforgeError, FileNotFoundError):
    """A file the operation needs is absent (e.g. offline and not cached)."""


class MissingSourceError(MissingFileError):
    """Part of SD19 (a hierarchy, partition or file) is missing."""


class DownloadError(MnistforgeError, ConnectionError):
    """Every mirror failed (HTTP error, timeout, cut connection)."""


class OfflineError(DownloadError):
    """Network access was needed while MNISTFORGE_OFFLINE=1."""


class BuildError(MnistforgeError, RuntimeError):
    """A build could not complete; nothing half-written is left behind."""


class OutputInUseError(BuildError):
    """Another run is writing the same output folder right now (its lock is held)."""


class NotWritableError(MnistforgeError, PermissionError):
    """A folder the package must write to (the cache, an output) is read-only."""


class DiskFullError(MnistforgeError, OSError):
    """A write failed because the file system is full (or over quota); nothing half-written is kept."""


class WorkerError(MnistforgeError, RuntimeError):
    """A worker process died (killed, out of memory) before finishing its task."""


class JoinError(BuildError):
    """Characters could not be joined across SD19 hierarchies."""


class NotOwnedError(BuildError):
    """``--overwrite`` of a folder holding anything its own record (manifest) does not list: refused,
    nothing removed; the message names what is foreign."""


class ConfigError(MnistforgeError, ValueError):
    """Invalid parameter or specification string (CLI or API)."""


class TargetNotFoundError(MissingFileError, ConfigError):
    """A path given as a target (command-line argument or ``root=``) does not exist: a usage error."""


class OutputPathError(ConfigError):
    """An output path (or ``<out>.lock`` beside it) the package may not write: it exists and is not
    a regular file (a symlink, FIFO, device, folder), lies under a file, or its name is too long."""


class IndexRangeError(ConfigError, IndexError):
    """A row index, or a bound of a split slice, outside the valid range (the message names it)."""


class IndexKindError(ConfigError, TypeError):
    """A dataset indexed by something that is not a row index (a bool, a float, a string)."""


class ArgumentKindError(ConfigError, TypeError):
    """An argument of the wrong kind: a root that is no path, a transform that cannot be called,
    a flag that is no bool, an unknown keyword (the message says what was expected)."""


class EmptySelectionError(ConfigError):
    """A slice that selects no rows (reversed or empty), a step of 0, or an empty group of work."""


class InsufficientMemoryError(ConfigError, MemoryError):
    """The arrays a request needs would not fit in memory; refused before allocating them."""


class ClassifierOutputError(ConfigError):
    """A user's classifier returned something other than one label per image."""


class TestSetMismatchError(ConfigError):
    """A test set given to compare predictions with is not the one they were made on."""

    __test__ = False  # not a pytest test class, despite the name


class MissingDependencyError(MnistforgeError, ImportError):
    """An optional dependency (an extra such as ``[torch]`` or ``[plot]``) is not installed."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import optional ``module`` or raise :class:`MissingDependencyError` naming the extra.

    >>> require("json", "none", "a test").__name__
    'json'
    >>> require("no_such_module_xyz", "plot", "pictures")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    mnistforge.errors.MissingDependencyError: no_such_module_xyz is needed for pictures: ...
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"{module} is needed for {purpose}", expected=f"the optional dependency {module}",
            found="not installed", hint=f"pip install 'mnistforge[{extra}]'") from None


class CheckFailed(MnistforgeError, AssertionError):
    """A verification check failed."""


class UploadError(MnistforgeError, ConnectionError):
    """An upload (Hugging Face Hub push) failed or could not start: no token, offline, HTTP error."""


class NoSuchPathError(TargetNotFoundError, DatasetNotFoundError):
    """A name that is no dataset and looks like a path (``/data/x.mat``) that does not exist: said
    as such (exit 2), still a :class:`DatasetNotFoundError` for callers that try names first."""

    __str__ = DatasetNotFoundError.__str__


class OutputExistsError(BuildError, ConfigError):
    """The output folder already exists and ``--overwrite`` was not given: a usage error (exit 2),
    found before any work; still a :class:`BuildError` for callers that catch that."""


# --- exit codes of the command line -------------------------------------------

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

#: exit code -> meaning, as ``mnistforge --help`` and docs/usage.md show them
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_FAILED: "the data failed a check (verify, hashes, wrong or damaged files)",
    EXIT_USAGE: "usage error (bad flags or values, unknown dataset or split names, no such path)",
    EXIT_UNAVAILABLE: "a needed resource is unavailable (offline, download or upload failed, "
                      "missing file, missing optional dependency)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


def exit_code(error: BaseException) -> int:
    """The exit code of an error that ended a command (see :data:`EXIT_CODES`).

    >>> exit_code(ConfigError("x")), exit_code(OfflineError("y")), exit_code(HashMismatchError("z"))
    (2, 3, 1)
    """
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(error, (ConfigError, DatasetNotFoundError)):
        return EXIT_USAGE
    if isinstance(error, (DownloadError, UploadError, MissingDependencyError, MissingFileError,
                          ModuleNotFoundError)):
        return EXIT_UNAVAILABLE
    return EXIT_FAILED
