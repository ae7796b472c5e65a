"""``torchward lsp``: start the language server on stdio (or TCP, for debugging)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="torchward lsp", description="Run the torchward language server.")
    transport = result.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="speak LSP over stdin/stdout (the default)")
    transport.add_argument("--tcp", metavar="HOST:PORT", help="listen on HOST:PORT instead (for debugging)")
    result.add_argument("--log-file", metavar="PATH", help="write the server's log to PATH (default: stderr)")
    result.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")
    return result


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SystemExit(f"torchward lsp: --tcp expects HOST:PORT, got {value!r}")
    return host, int(port)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until the client says ``exit``; returns the exit status."""
    options = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(options.verbose, 2)]
    handler: logging.Handler = logging.FileHandler(options.log_file) if options.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(level=level, handlers=[handler], format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from .server import create_server

    server = create_server()
    if options.tcp:
        host, port = _address(options.tcp)
        server.start_tcp(host, port)
    else:
        server.start_io()
    return 0
