"""``torchward lsp [--tcp HOST:PORT]``: run the language server (stdio by default)."""

from __future__ import annotations

import argparse

NAME = "lsp"
HELP = "Run the language server for editors (LSP over stdio, or --tcp HOST:PORT)."
ORDER = 40


def configure(parser: argparse.ArgumentParser) -> None:
    from ..server.launcher import add_arguments

    add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..server.launcher import serve

    return serve(args)
