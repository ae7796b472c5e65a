"""What TW019's fix needs, recorded by the rule: the reset statement's lines and where it goes.

The fixer moves the reset (``opt.zero_grad()``) from before the step to just after it
(see :mod:`torchward.analysis.fixes.zero_grad_before_step` for the obligations). All
of it is known on the ``ast`` the rule already has: whether each call is alone on its
statement line, whether both statements sit in one block in that order, what the
statements between them call. So the rule hands over a :class:`ResetMove` and the fixer
writes two text edits (delete the reset's lines, insert them after the step) without
parsing the file again.

The lines that go with the reset are its own and the blank and comment lines right
above it, as LibCST counts a statement's leading lines: a comment indented deeper than
the reset, after a nested block, belongs to that block and stays.
"""

from __future__ import annotations

import ast
import re
from typing import ClassVar

import attrs

from ..finding import Payload, Span
from ..syntax.positions import LineIndex
from .call_arguments import call_at

_GRADIENT_CALLS = {"backward", "step", "zero_grad", "grad"}
_TRAINING_CALL = re.compile(r"backward|step|^train|^fit", re.IGNORECASE)
_BLOCKS = ("body", "orelse", "finalbody")


@attrs.frozen
class ResetMove(Payload):
    """TW019: delete the whole lines ``first_line``..``last_line`` (the reset with its
    leading blank and comment lines), insert the reset's own lines after ``after_line``."""

    kind: ClassVar[str] = "reset-move"
    first_line: int  # the first leading blank or comment line of the reset, or its own
    reset_line: int  # the reset statement's first line
    last_line: int  # the reset statement's last line
    after_line: int  # the step statement's last line
    step: Span  # the step call, named in the fix's title
    unseen: bool  # a call between them is named like a training step or a loss


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _alone(statement: ast.stmt, lines: LineIndex) -> bool:
    """Nothing but indentation before the statement, nothing but a comment after it."""
    span = lines.span(statement)
    if lines.line_text(span.line)[: span.column].strip():
        return False
    rest = lines.line_text(span.end_line)[span.end_column :].strip()
    return not rest or rest.startswith("#")


def _statement_of(tree: ast.Module, call: ast.Call) -> tuple[list[ast.stmt], int] | None:
    """The block holding the expression statement whose value is ``call``, and its index."""
    for node in ast.walk(tree):
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for index, statement in enumerate(block):
                if isinstance(statement, ast.Expr) and statement.value is call:
                    return block, index
    return None


def first_leading_line(
    lines: LineIndex, statement: ast.stmt, floor: int, first_in_block: bool = False
) -> int:
    """The first of the blank and comment lines right above ``statement`` (after line
    ``floor``) that LibCST counts as its leading lines, or its own first line: a comment
    indented deeper than it ends the previous block and is not among them, unless the
    statement is the first of its block (then every such line above it is its own)."""
    indent = len(lines.line_text(statement.lineno)) - len(
        lines.line_text(statement.lineno).lstrip()
    )
    line = statement.lineno
    while line - 1 > floor:
        text = lines.line_text(line - 1)
        stripped = text.lstrip()
        deeper = len(text) - len(stripped) > indent and not first_in_block
        if stripped and not (stripped.startswith("#") and not deeper):
            break
        line -= 1
    return line


def reset_move(tree: ast.Module, lines: LineIndex, reset: Span, step: Span) -> ResetMove | None:
    """The payload of a TW019 finding at the reset call ``reset``; None when no fix fits."""
    reset_call, step_call = call_at(tree, lines, reset), call_at(tree, lines, step)
    if reset_call is None or step_call is None:
        return None
    found = _statement_of(tree, reset_call)
    if found is None:
        return None
    block, first = found
    last = next(
        (i for i, s in enumerate(block) if isinstance(s, ast.Expr) and s.value is step_call),
        None,
    )
    if last is None or first >= last:
        return None  # not one block, or the step comes first
    if not (_alone(block[first], lines) and _alone(block[last], lines)):
        return None
    between = [
        call
        for statement in block[first + 1 : last]
        for call in ast.walk(statement)
        if isinstance(call, ast.Call)
    ]
    if any(_callee(call) in _GRADIENT_CALLS for call in between):
        return None
    statement = block[first]
    floor = (block[first - 1].end_lineno or 0) if first else 0
    return ResetMove(
        first_line=first_leading_line(lines, statement, floor),
        reset_line=statement.lineno,
        last_line=statement.end_lineno or statement.lineno,
        after_line=block[last].end_lineno or block[last].lineno,
        step=step,
        unseen=any(
            _TRAINING_CALL.search(_callee(call)) or "loss" in _callee(call).lower()
            for call in between
        ),
    )
