"""Where a call's arguments are in the text, for the payloads of fixes that add or drop one.

A fixer that writes its edits from a payload (see
:class:`~torchward.analysis.finding.Payload`) needs the exact ranges: which characters
to delete to drop an argument with its comma, where to append one and with which
separator. The rule has the ``ast`` call and its :class:`LineIndex`, so it measures them
here, once, and the fixer never parses or scans the text.

``ast`` leaves a positional argument's parentheses out of its range (``f((ds), x)``:
``ds``), so an argument's *written* end is found by stepping over the closing
parentheses that follow it, up to the comma or the call's own closing parenthesis.
Anything else on the way (a comment) makes the layout unknown: ``None``, and no fix.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from ..finding import Span
from ..syntax.positions import LineIndex


@lru_cache(maxsize=8)
def _nodes_by_span(tree: ast.Module, lines: LineIndex) -> dict[Span, list[ast.AST]]:
    found: dict[Span, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if hasattr(node, "lineno") and hasattr(node, "end_col_offset"):
            found.setdefault(lines.span(node), []).append(node)
    return found


def call_at(tree: ast.Module, lines: LineIndex, span: Span) -> ast.Call | None:
    """The call whose range is exactly ``span`` (a finding's span), if there is one."""
    return next(
        (node for node in _nodes_by_span(tree, lines).get(span, ()) if isinstance(node, ast.Call)),
        None,
    )


def written_text(lines: LineIndex, node: ast.AST) -> str:
    """The text of ``node`` as written when it fits on one line ('' otherwise)."""
    span = lines.span(node)
    if span.line != span.end_line:
        return ""
    return lines.line_text(span.line)[span.column : span.end_column]


def in_order(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """The call's arguments as written: ``ast`` keeps positional and keyword ones apart."""
    return sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _after(lines: LineIndex, line: int, column: int) -> tuple[int, int, str]:
    """The position of the first character at or after (``line``, ``column``) that is not
    a space or a line break, and that character ('' at the end of the text)."""
    while line <= len(lines.lines):
        text = lines.line_text(line)
        rest = text[column:]
        stripped = rest.lstrip(" \t\f")
        if stripped:
            return line, len(text) - len(stripped), stripped[0]
        line, column = line + 1, 0
    return line, 0, ""


def written_end(lines: LineIndex, call: ast.Call, argument: ast.AST) -> tuple[int, int] | None:
    """Where ``argument`` ends as written, its closing parentheses included: the position
    before the comma after it, or before the call's closing parenthesis."""
    span = lines.span(argument)
    close = lines.span(call)
    end = (span.end_line, span.end_column)
    line, column = end
    while True:
        line, column, char = _after(lines, line, column)
        if (line, column) == (close.end_line, close.end_column - 1) or char == ",":
            return end
        if char != ")":
            return None  # a comment or a line continuation: not a layout this knows
        column += 1
        end = (line, column)


def removal(lines: LineIndex, call: ast.Call, argument: ast.AST) -> Span | None:
    """The range to delete so that ``argument`` is gone with its comma and the layout of
    the others stays as written: up to the next argument; for the last one, from the
    comma before it (the argument before takes over its trailing comma, if any, or else
    the call's closing parenthesis follows it at once); for the only one, up to the
    call's closing parenthesis."""
    arguments = in_order(call)
    index = arguments.index(argument)  # type: ignore[arg-type]
    start = lines.span(argument)
    if index + 1 < len(arguments):
        following = lines.span(arguments[index + 1])
        return Span(start.line, start.column, following.line, following.column)
    own_end = written_end(lines, call, argument)
    if own_end is None:
        return None
    if index == 0:
        close = lines.span(call)
        return Span(start.line, start.column, close.end_line, close.end_column - 1)
    before = written_end(lines, call, arguments[index - 1])
    if before is None:
        return None
    comma_line, comma_column, char = _after(lines, *before)
    if char != ",":
        return None
    if _after(lines, *own_end)[2] != ",":  # its line break before ``)`` goes with it
        close = lines.span(call)
        return Span(comma_line, comma_column, close.end_line, close.end_column - 1)
    return Span(comma_line, comma_column, *own_end)


def append_point(lines: LineIndex, call: ast.Call) -> tuple[Span, Span | None] | None:
    """Where a new last argument goes (an empty range at the end of the last one as
    written) and the range of the separator between the last two arguments as written
    (``,\\n    `` in a call laid out one argument a line), which the new one copies; None
    for a call of one argument (the new one is separated by ``, ``)."""
    arguments = in_order(call)
    if not arguments:
        return None
    end = written_end(lines, call, arguments[-1])
    if end is None:
        return None
    if len(arguments) == 1:
        return Span(*end, *end), None
    before = written_end(lines, call, arguments[-2])
    if before is None:
        return None
    last = lines.span(arguments[-1])
    return Span(*end, *end), Span(*before, last.line, last.column)
