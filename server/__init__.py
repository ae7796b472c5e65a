"""The language server: thin pygls glue over :mod:`torchward.analysis`.

Public names: :func:`main` (``torchward lsp [--tcp HOST:PORT]``) and
:func:`create_server`. One module per LSP concern: :mod:`.textsync` (documents),
:mod:`.reporting` (push / pull), :mod:`.diagnostics` (the only bridge from findings to
diagnostics), :mod:`.codeactions`, :mod:`.hover`, :mod:`.commands` (explain, GPU
selection, estimates), :mod:`.lifecycle` (initialisation and settings); state lives in
:mod:`.server`. Importing this package is cheap: pygls is imported when a server is made.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from .launcher import main as run

    return run(argv)


def create_server(*args, **kwargs):
    from .server import create_server as make

    return make(*args, **kwargs)


__all__ = ["create_server", "main"]
