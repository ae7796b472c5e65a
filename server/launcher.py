"""``torchward lsp``: start the language server on stdio (or TCP, for debugging).

Only the standard library is imported here: the CLI builds its parser from
:func:`add_arguments` without paying for pygls; :func:`serve` imports the server.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument(
        "--stdio", action="store_true", help="speak LSP over stdin/stdout (the default)"
    )
    transport.add_argument(
        "--tcp", metavar="HOST:PORT", help="listen on HOST:PORT instead (for debugging)"
    )
    parser.add_argument(
        "--log-file", metavar="PATH", help="write the server's log to PATH (default: stderr)"
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)"
    )


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        from torchward.errors import UsageError

        raise UsageError(f"--tcp expects HOST:PORT, got {value!r}")
    return host, int(port)


# An editor that reads the server's stderr stamps each line itself (VS Code's log output
# channel, Neovim's lsp.log): a second timestamp is noise. A log file gets its own.
EDITOR_FORMAT = "%(levelname)s %(name)s: %(message)s"
FILE_FORMAT = "%(asctime)s " + EDITOR_FORMAT


class BenignRaces(logging.Filter):
    """Drops pygls' warning about a ``$/cancelRequest`` for a request already answered:
    VS Code cancels pulls and hovers on every keystroke, and the answer often wins the
    race — nothing is wrong, but the warning filled the output channel."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.levelno == logging.WARNING
            and str(record.msg).startswith("Cancel notification for unknown message id")
        )


# young, middle, old (CPython's default: 700, 10, 10). A younger generation of 20,000
# halves the collection time again but holds ~20 MB more between collections with 50
# documents open (each analysis leaves a cycle behind: bench_lsp.py's RSS figure), and
# full collections must stay as frequent as the default for the same reason.
GC_THRESHOLDS = (2_000, 10, 10)


def serve(options: argparse.Namespace) -> int:
    """Run the server until the client says ``exit``; returns the exit status."""
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(options.verbose, 2)]
    handler: logging.Handler = (
        logging.FileHandler(options.log_file)
        if options.log_file
        else logging.StreamHandler(sys.stderr)
    )
    handler.addFilter(BenignRaces())
    logging.basicConfig(
        level=level,
        handlers=[handler],
        format=FILE_FORMAT if options.log_file else EDITOR_FORMAT,
    )
    address = _address(options.tcp) if options.tcp else None
    # An analysis allocates a few hundred thousand short-lived objects per keystroke; with
    # CPython's default young generation (700) they set off ~3 collections per keystroke
    # and, every few dozen keystrokes, a full one over the session's trees and caches
    # (~150 ms at 1,000 lines: the p95 of an edit). A larger young generation lets more of
    # them die by reference counting first (bench/bench_lsp.py --edit-kinds-only).
    gc.set_threshold(*GC_THRESHOLDS)

    from .server import create_server

    server = create_server()
    # Everything imported so far (lsprotocol's thousands of classes, converters, the rule
    # catalogue) lives as long as the process: frozen, full collections no longer walk it.
    gc.freeze()
    if address is not None:
        server.start_tcp(*address)
    else:
        server.start_io()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``torchward lsp [--stdio | --tcp HOST:PORT] [--log-file PATH] [-v]``; ``argv`` excludes the program."""
    parser = argparse.ArgumentParser(
        prog="torchward lsp", description="Run the torchward language server."
    )
    add_arguments(parser)
    from torchward.errors import UsageError

    try:
        return serve(parser.parse_args(list(sys.argv[1:] if argv is None else argv)))
    except UsageError as error:
        print(f"torchward lsp: error: {error}", file=sys.stderr)
        return 2
