"""Command-line interface: ``mnistforge COMMAND ...``.

Each command is a module ``mnistforge/commands/<name>.py`` (listed in :data:`COMMAND_MODULES`;
one not present yet is skipped) with ``NAME``, ``HELP`` (one line), ``add_arguments(parser)``
and ``run(args) -> int`` (an exit code of :data:`mnistforge.errors.EXIT_CODES`). Options
shared by all commands: :mod:`mnistforge.commands.common`.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from ._version import __version__
from .commands.common import (check_outputs, command_settings, flush_streams, output_stream_error,
                              quiet_stdout)
from .errors import (EXIT_CODES, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, MnistforgeError,
                     exit_code)

COMMAND_MODULES = [
    "info", "fetch", "show", "synth_sd19", "sd19", "build", "verify", "export",
    "evaluate", "significance", "tarp", "manitest", "demo", "card", "find_copies", "overlap", "partition",
]

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_USAGE", "EXIT_UNAVAILABLE", "EXIT_INTERRUPTED"]


def exit_codes_text() -> str:
    """The ``--help`` epilog listing :data:`~mnistforge.errors.EXIT_CODES`.

    >>> print(exit_codes_text().splitlines()[1])
      0    success
    """
    return "exit codes:\n" + "\n".join(f"  {k:<4} {v}" for k, v in EXIT_CODES.items())


def load_commands() -> list[ModuleType]:
    found = [n for n in COMMAND_MODULES if importlib.util.find_spec(f"mnistforge.commands.{n}") is not None]
    return [importlib.import_module(f"mnistforge.commands.{n}") for n in found]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnistforge", epilog=exit_codes_text(), formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Rebuild, load, verify and evaluate the MNIST family of datasets.")
    parser.add_argument("--version", action="version", version=f"mnistforge {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in load_commands():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP, epilog=exit_codes_text(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors, 0 on --help
        return int(e.code or 0)
    except KeyboardInterrupt:  # output paths are checked while parsing: Ctrl-C may land there
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    # `--json -`: the JSON owns standard output, the text report goes to standard error
    json_stdout = getattr(args, "json", None) == "-"
    if json_stdout:
        args._json_stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr) if json_stdout else contextlib.nullcontext(), \
                command_settings(args):
            check_outputs(args)
            code = int(args._run(args) or 0)
        flush_streams(args)  # a full or closed standard output shows here, not at exit
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `mnistforge info | head`: the reader left; exit quietly like other Unix tools.
        quiet_stdout()
        return EXIT_OK
    except MnistforgeError as e:
        print(f"mnistforge {args.command}: error: {e}", file=sys.stderr)
        return exit_code(e)
    except ModuleNotFoundError as e:  # an optional dependency imported without errors.require
        print(f"mnistforge {args.command}: error: {e.name or e} is not installed: "
              "see `pip install 'mnistforge[...]'` in docs/usage.md", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except OSError as e:
        named = output_stream_error(e)   # `mnistforge info > /dev/full`: one line, not a traceback
        if named is None:
            raise
        print(f"mnistforge {args.command}: error: {named}", file=sys.stderr)
        quiet_stdout()
        return exit_code(named)


if __name__ == "__main__":
    raise SystemExit(main())
