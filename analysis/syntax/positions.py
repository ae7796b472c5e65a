"""The one place where ``ast``'s UTF-8 byte columns become code-point columns.

``ast`` reports ``col_offset`` as a UTF-8 byte offset into the line. Findings use
code-point columns (:mod:`torchward.analysis.finding`); the language server converts
those to UTF-16 units. Lines that are pure ASCII (nearly all of them) cost nothing.
"""

from __future__ import annotations

import ast
import re

from ..finding import Span

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# The last two sources split, by identity, with their lines (never mutated): an editor
# keystroke indexes the new text from reparse, the module index and the analyzer, and
# the old text once more — one split instead of four.
_RECENT: tuple[tuple[str, list[str]], ...] = ()


class LineIndex:
    def __init__(self, source: str) -> None:
        global _RECENT
        recent = _RECENT  # one snapshot: another thread may replace it meanwhile
        for known, lines in recent:
            if known is source:
                self.lines = lines
                return
        # ``ast`` (and LSP) end lines only at \n, \r\n and \r; ``str.splitlines`` also
        # splits at form feeds and \u2028, which would shift every later line.
        self.lines = _LINE_BREAK.split(source)
        _RECENT = ((source, self.lines), *recent[:1])

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def column(self, line: int, byte_offset: int) -> int:
        text = self.line_text(line)
        if text.isascii():
            return byte_offset
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        start = self.column(line, getattr(node, "col_offset", 0))
        end_offset = getattr(node, "end_col_offset", None)
        end = self.column(end_line, end_offset) if end_offset is not None else start
        return Span(line, start, end_line, end)

    def head_span(self, node: ast.AST) -> Span:
        """A one-line span for a statement that may cover many lines (loops, ``with``)."""
        span = self.span(node)
        if span.end_line == span.line:
            return span
        return Span(span.line, span.column, span.line, len(self.line_text(span.line).rstrip()))

    def span_at(self, line: int, byte_offset: int) -> Span:
        """From a statement's start to the end of its first line (for evidence)."""
        start = self.column(line, byte_offset)
        return Span(line, start, line, max(start, len(self.line_text(line).rstrip())))

    def snippet(self, node: ast.AST, limit: int = 60) -> str:
        """The text of ``node`` on its first line, shortened to ``limit`` characters."""
        span = self.span(node)
        line = self.line_text(span.line)
        end = span.end_column if span.end_line == span.line else len(line.rstrip())
        text = line[span.column : end].strip() or "<expression>"
        if span.end_line != span.line:
            text += "…"
        return text if len(text) <= limit else text[: limit - 1] + "…"
