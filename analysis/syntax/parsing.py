"""``ast.parse``, one thread at a time.

CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, so
two threads converting parse trees at once (the server analyses in a worker thread while
the scan or an estimate parses another file) can fail with ``SystemError: AST
constructor recursion depth mismatch`` on perfectly valid source (python/cpython#106905).
Every parse in the engine, the estimator and the server goes through :func:`parse_module`,
which serialises them; a parse is C-fast, so the lock costs nothing a user could see.
"""

from __future__ import annotations

import ast
import threading

_PARSING = threading.Lock()


def parse_module(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)`` under the process-wide parse lock."""
    with _PARSING:
        return ast.parse(source, filename=filename)


def parse_expression(source: str) -> ast.expr:
    """The expression ``source`` (``mode="eval"``) under the process-wide parse lock."""
    with _PARSING:
        return ast.parse(source, mode="eval").body
