"""Command-line interface: ``mnistforge COMMAND ...``.

Each command lives in its own module ``mnistforge/commands/<name>.py`` exposing

* ``NAME`` (the sub-command as typed, e.g. ``"synth-sd19"``),
* ``HELP`` (one line),
* ``add_arguments(parser)`` and
* ``run(args) -> int`` (exit code: 0 ok, 1 failed check, 2 usage error).

Commands are discovered from :data:`COMMAND_MODULES`; a module that is not
present yet is skipped, so areas can land independently.

Conventions shared by all commands: wherever a dataset ``NAME`` is taken, a
folder of idx files is accepted too, and ``NAME:SPLIT`` picks a split (see
:func:`mnistforge.loaders.resolve_target`).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from ._version import __version__
from .errors import MnistforgeError

COMMAND_MODULES = [
    "info", "fetch", "show", "synth_sd19", "sd19", "build", "verify", "export",
    "evaluate", "significance", "tarp", "manitest", "demo",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def load_commands():
    mods = []
    for name in COMMAND_MODULES:
        try:
            mods.append(importlib.import_module(f"mnistforge.commands.{name}"))
        except ModuleNotFoundError as e:
            if e.name != f"mnistforge.commands.{name}":
                raise
    return mods


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnistforge",
        description="Rebuild, load, verify and evaluate the MNIST family of datasets.")
    parser.add_argument("--version", action="version", version=f"mnistforge {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in load_commands():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors, 0 on --help
        return int(e.code or 0)
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `mnistforge info | head`: the reader left; exit quietly like other Unix tools.
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except MnistforgeError as e:
        from .errors import ConfigError, DatasetNotFoundError
        print(f"mnistforge {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, (ConfigError, DatasetNotFoundError)) else EXIT_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
