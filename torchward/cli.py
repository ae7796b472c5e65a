"""The ``torchward`` command line: builds the parser from the command modules and runs one.

Exit statuses, for every subcommand: 0 success, 1 findings at or above ``--fail-on``
(``check``), 2 usage, configuration or internal error. A
:class:`~torchward.errors.UsageError` becomes a one-line message; any other exception is
an internal error, printed with its traceback so that it can be reported.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from . import __version__, commands
from .errors import UsageError

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def command_modules() -> list[ModuleType]:
    """Every module of :mod:`torchward.commands`, in help order."""
    modules = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    ]
    return sorted(modules, key=lambda module: (getattr(module, "ORDER", 100), module.NAME))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchward",
        description="Catches the silent, expensive bugs of PyTorch training code.",
    )
    parser.add_argument("--version", action="version", version=f"torchward {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in command_modules():
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.configure(sub)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help / --version exit 0, usage errors exit 2
        return int(exit_.code or 0)
    try:
        return int(args.handler(args))
    except UsageError as error:
        print(f"torchward: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("torchward: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `torchward check | head`: the reader left; not our error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the exit-time flush does not raise again
        return EXIT_OK
    except Exception:  # an internal error: say so, with what is needed to report it
        print(f"torchward {__version__}: internal error, please report it:", file=sys.stderr)
        traceback.print_exc()
        return EXIT_ERROR
