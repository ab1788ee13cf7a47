"""Numeric command-line values checked at parse time (usage error, exit 2, naming the option and
the range). Not a command.

>>> int_in(1, 10)("3"), float_in(0, 1, low_open=True)("0.5")
(3, 0.5)
>>> int_in(1, 10)("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: 0 is out of range: expected an integer in 1..10
"""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable

#: Seeds: what NumPy's legacy and new generators both accept.
SEED_MAX = 2**32 - 1
#: Worker processes/threads.
WORKERS_MAX = 1024


def int_in(low: int | None, high: int | None, what: str = "an integer") -> Callable[[str], int]:
    """An argparse ``type`` accepting integers in ``low..high`` (None: unbounded)."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if (low is not None and value < low) or (high is not None and value > high):
            lo = "" if low is None else f"{low}"
            hi = "" if high is None else f"{high}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: expected {what} in {lo}..{hi}")
        return value
    parse.__name__ = "integer"
    return parse


def float_in(low: float | None, high: float | None, *, low_open: bool = False,
             high_open: bool = False) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite numbers in the range (open ends when asked)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        bad = not math.isfinite(value)
        if low is not None:
            bad |= value <= low if low_open else value < low
        if high is not None:
            bad |= value >= high if high_open else value > high
        if bad:
            lo = "-inf" if low is None else f"{low:g}"
            hi = "inf" if high is None else f"{high:g}"
            rng = f"{'(' if low_open else '['}{lo}, {hi}{')' if high_open else ']'}"
            raise argparse.ArgumentTypeError(f"{text} is out of range: expected a finite number "
                                             f"in {rng}")
        return value
    parse.__name__ = "number"
    return parse


seed = int_in(0, SEED_MAX, "a seed")
workers = int_in(1, WORKERS_MAX, "a number of workers")
positive_seconds = float_in(0, 86400, low_open=True)
fraction = float_in(0, 1, low_open=True)                      # (0, 1]
confidence = float_in(0, 1, low_open=True, high_open=True)    # (0, 1)


class OutputFile(str):
    """A file output named on the command line: its kind is checked when parsed (exit 2), all
    of it (a folder that cannot be written too) again before the command's work
    (:func:`mnistforge.commands.common.check_outputs`)."""


class OutputFolder(str):
    """A folder output named on the command line (see :class:`OutputFile`)."""


def output_file(text: str) -> str:
    """An argparse ``type`` for a file output: a regular file or a new name, never a symlink,
    FIFO, device or folder (``-``: standard output); see :func:`mnistforge.io.outputs.check_output_file`.

    >>> output_file("-"), output_file("new-file.json")
    ('-', 'new-file.json')
    >>> output_file("/dev/null")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: /dev/null: the output path is a character device: ...
    """
    from ..io.outputs import check_output_file

    return OutputFile(_checked(check_output_file, text))


def output_folder(text: str) -> str:
    """An argparse ``type`` for a folder output: a folder or a new name, never a symlink or a file
    (:func:`mnistforge.io.outputs.check_output_path`; what ``--overwrite`` may replace is
    decided by the command, before its work)."""
    from ..io.outputs import check_output_path

    return OutputFolder(_checked(check_output_path, text))


def _checked(check: Callable[..., object], text: str) -> str:
    from ..errors import ConfigError

    try:
        check(text, writable=False)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


output_file.__name__ = "output file"
output_folder.__name__ = "output folder"
