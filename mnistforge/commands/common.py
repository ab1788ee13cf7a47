"""What every command shares (not a command itself): options, JSON output, exit codes, width."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from typing import Any

from .. import settings
from ..errors import DiskFullError
from ..errors import (EXIT_CODES as EXIT_CODES, EXIT_FAILED as EXIT_FAILED,  # noqa: F401 - re-exported
                      EXIT_INTERRUPTED as EXIT_INTERRUPTED, EXIT_OK as EXIT_OK,
                      EXIT_UNAVAILABLE as EXIT_UNAVAILABLE, EXIT_USAGE as EXIT_USAGE, exit_code as exit_code)
from ..io.types import StrPath


# --------------------------------------------------------------------------- options

def add_json(p: argparse.ArgumentParser, what: str = "the results") -> None:
    """``--json PATH`` (``-`` or no value: standard output)."""
    from .argtypes import output_file

    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH", type=output_file,
                   help=f"write {what} as JSON to PATH; '-' (or no PATH): to standard output, "
                        "the text report then goes to standard error")


def add_offline(p: argparse.ArgumentParser, what: str = "official files") -> None:
    """``--offline`` / ``--no-download``: one option, ``args.offline`` (True or None)."""
    p.add_argument("--offline", "--no-download", dest="offline", action="store_true", default=None,
                   help=f"never open a connection: use {what} already in the cache "
                        "(as MNISTFORGE_OFFLINE=1)")


def download_flag(args: argparse.Namespace) -> bool | None:
    """``load(download=)`` for ``--offline``: False, or None (the environment decides)."""
    return False if getattr(args, "offline", None) else None


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="cache folder (default $MNISTFORGE_HOME or the platform cache)")


@contextlib.contextmanager
def command_settings(args: argparse.Namespace) -> Iterator[None]:
    """``--cache``, ``--offline`` and ``--no-progress`` for every library call of the command
    (:func:`mnistforge.settings.using`: the environment is not written).

    >>> import argparse, os
    >>> before = dict(os.environ)
    >>> with command_settings(argparse.Namespace(no_progress=True, offline=True)):
    ...     settings.current().bars, settings.current().offline
    (False, True)
    >>> dict(os.environ) == before
    True
    """
    with settings.using(cache=getattr(args, "cache", None) or None,
                        offline=True if getattr(args, "offline", None) else None,
                        progress=False if getattr(args, "no_progress", False) else None):
        yield


def require_existing_path(path: StrPath, what: str, expected: str) -> None:
    """A path typed on the command line that is not there: a usage error (exit 2), in every command."""
    from pathlib import Path

    from ..errors import TargetNotFoundError

    if not (Path(path).exists() or Path(path).is_symlink()):
        raise TargetNotFoundError(f"{what} not found", path=path, expected=expected,
                                  found="nothing there")


def refuse_existing_output(out: StrPath, overwrite: bool) -> None:
    """An existing ``--out`` folder without ``--overwrite``: a usage error (exit 2) before any work.

    >>> import tempfile
    >>> refuse_existing_output(tempfile.mkdtemp(), overwrite=True)
    >>> refuse_existing_output(tempfile.mkdtemp(), overwrite=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mnistforge.errors.OutputExistsError: ...: output folder already exists: expected a new folder, ...
    """
    from pathlib import Path

    from ..errors import OutputExistsError

    p = Path(out)
    if not overwrite and p.is_dir():
        raise OutputExistsError("output folder already exists", path=p, expected="a new folder",
                                found="an existing one", hint="choose another --out or pass --overwrite")


def add_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars (as MNISTFORGE_PROGRESS=0)")


# --------------------------------------------------------------------------- output

def write_json(args: argparse.Namespace, doc: Any, *,
               default: Callable[[Any], Any] | None = None) -> str | None:
    """Write ``doc`` where ``--json`` says; returns the path written (None for stdout)."""
    path = getattr(args, "json", None)
    if path is None:
        return None
    text = json.dumps(doc, indent=2, default=default) + "\n"
    if path == "-":
        out = getattr(args, "_json_stdout", None) or sys.stdout
        out.write(text)
        out.flush()
        return None
    from ..io.atomic import atomic_file

    with atomic_file(path, "w") as f:
        f.write(text)
    return str(path)


def add_inputs(p: argparse.ArgumentParser, *dests: str) -> None:
    """The arguments (``dest``) that are inputs: no output may be, hold or lie in one."""
    p.set_defaults(_inputs=dests)


def input_paths(args: argparse.Namespace) -> list[str]:
    """The inputs (:func:`add_inputs`), or folders of ``FOLDER:SPLIT``, that exist on disk."""
    paths = []
    for dest in getattr(args, "_inputs", ()):
        value = getattr(args, dest, None)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str) and item:   # FOLDER, FOLDER:SPLIT, CONFIG=FOLDER, SPLIT=FILE
                forms = [f for b in (item, item.split("=", 1)[-1])
                         for f in (b, b.rsplit(":", 1)[0], b.split(":", 1)[0])]
                path = next((f for f in forms if f and os.path.lexists(f)), None)
                if path is not None:
                    paths.append(path)
    return paths


def check_outputs(args: argparse.Namespace) -> None:
    """Before a command's work: every output on its command line checked in full (writable too)
    and apart from every input of the command (:func:`add_inputs`)."""
    from ..io.outputs import check_apart, check_output_file, check_output_path
    from .argtypes import OutputFile, OutputFolder

    inputs = input_paths(args)
    for value in vars(args).values():
        if isinstance(value, OutputFile):
            check_output_file(value)
            check_apart(value, inputs)
        elif isinstance(value, OutputFolder):
            check_output_path(value, inputs)


def flush_streams(args: argparse.Namespace) -> None:
    """Flush standard output (and the ``--json -`` stream) while errors can still be reported."""
    for stream in {id(s): s for s in (getattr(args, "_json_stdout", None), sys.stdout)
                   if s is not None}.values():
        stream.flush()


def output_stream_error(e: OSError) -> DiskFullError | None:
    """A failed write to standard output as one named error; None for another OSError (a bug)."""
    import errno

    if e.filename is not None or e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO,
                                                 errno.EFBIG):
        return None
    return DiskFullError("cannot write to standard output", path="<stdout>",
                         expected="room for the output", found=os.strerror(e.errno),
                         hint="send the output to a device with free space, or use --json PATH")


def quiet_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush cannot fail."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def terminal_width(default: int = 100) -> int:
    """Columns of the terminal (``COLUMNS`` wins; ``default`` when not a terminal)."""
    return max(40, shutil.get_terminal_size((default, 24)).columns)


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` wrapped to ``width`` columns, never cut (long words stay whole)."""
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def lazy_import(name: str) -> types.ModuleType:
    """Module ``name``, executed on first use: ``--help`` imports every command, not NumPy."""
    import importlib.util

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
