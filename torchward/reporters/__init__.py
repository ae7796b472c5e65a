"""Output formats of ``torchward check``: one module per format, each a ``write`` function.

A reporter receives the finished :class:`~torchward.runner.RunResult` and writes it;
it decides nothing about exit codes. Adding a format is one module plus one line in
:data:`FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from . import github, grouped, json, junit, sarif, terminal

Writer = Callable[..., None]
FORMATS: dict[str, Writer] = {
    "terminal": terminal.write,
    "json": json.write,
    "github": github.write,
    "sarif": sarif.write,
    "junit": junit.write,
    "grouped": grouped.write,
}

__all__ = ["FORMATS", "TextIO", "Writer"]
