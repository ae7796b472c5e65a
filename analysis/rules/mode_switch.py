"""What TW024's fix needs, recorded by the rule: where ``model.eval()`` and ``model.train()`` go.

The fixer writes ``<model>.eval()`` above the evaluation loop and ``<model>.train()``
below it (see :mod:`torchward.analysis.fixes.validation_in_train_mode` for the
obligations). The rule checks them on its ``ast`` and hands over an
:class:`EvalModeSwitch`: the model as written, the loop's indentation, the line above
which the first call goes (above the loop's leading blank and comment lines, as LibCST
inserts a statement) and the line after which the second goes (after the loop and the
comments indented into its body that LibCST counts as the body's footer).
"""

from __future__ import annotations

import ast
from typing import ClassVar

import attrs

from ..finding import Payload, Span
from ..syntax.positions import LineIndex
from .call_arguments import call_at, written_text
from .train_mode_restore import parents
from .zero_grad_move import first_leading_line

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_LEAVING = (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom)


@attrs.frozen
class EvalModeSwitch(Payload):
    """TW024: ``<model>.eval()`` before line ``before_line``, ``<model>.train()`` after
    line ``after_line``, both at ``indent``."""

    kind: ClassVar[str] = "eval-mode-switch"
    model: str  # the called model as written: a name or an attribute
    indent: str  # the loop's indentation
    before_line: int  # the loop's first leading blank or comment line, or its header's
    after_line: int  # the loop's last line, its body's trailing comments included
    switches_others: bool  # some ``.eval()``/``.train()`` in the file has another receiver


def bound_names(lines: LineIndex, scope: ast.AST) -> set[str]:
    """Every name (or dotted path) bound inside ``scope``, as written."""
    found: set[str] = set()

    def targets(node: ast.AST | None) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            found.add(written_text(lines, node))
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                targets(element)
        elif isinstance(node, (ast.Starred, ast.Subscript)):
            targets(node.value)

    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                targets(target)
        elif isinstance(
            node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)
        ):
            targets(node.target)
        elif isinstance(node, ast.withitem):
            targets(node.optional_vars)
        elif isinstance(node, ast.NamedExpr):
            targets(node.target)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                targets(target)
        elif isinstance(node, ast.alias) and node.asname:
            found.add(node.asname)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
    return found


def _leaves_early(loop: ast.AST) -> bool:
    """A ``return``, ``raise`` or ``yield`` of the loop's own function inside it."""
    stack = list(ast.iter_child_nodes(loop))
    while stack:
        node = stack.pop()
        if isinstance(node, _LEAVING):
            return True
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _last_footer_line(lines: LineIndex, loop: ast.stmt, indent: int) -> int:
    """The loop's last line, or the last comment after it indented deeper than the loop
    (LibCST's footer of the block it ends; blank lines after that comment are not)."""
    last = line = loop.end_lineno or loop.lineno
    while line < len(lines.lines):
        line += 1
        text = lines.line_text(line)
        stripped = text.lstrip()
        if not stripped:
            continue
        if stripped.startswith("#") and len(text) - len(stripped) > indent:
            last = line
            continue
        break
    return last


def _first_in_block(tree: ast.Module, statement: ast.stmt) -> bool:
    parent = parents(tree).get(statement)
    return any(
        getattr(parent, field, None) and getattr(parent, field)[0] is statement
        for field in ("body", "orelse", "finalbody")
    )


def eval_mode_switch(
    tree: ast.Module, lines: LineIndex, header: Span, forward: Span
) -> EvalModeSwitch | None:
    """The payload of a TW024 finding at the loop header ``header`` whose forward call
    is ``forward``; None when an obligation fails."""
    loop = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, _LOOPS)
            and (lines.span(node).line, lines.span(node).column) == (header.line, header.column)
        ),
        None,
    )
    call = call_at(tree, lines, forward)
    if loop is None or call is None or not isinstance(call.func, (ast.Name, ast.Attribute)):
        return None  # obligation 1
    model = written_text(lines, call.func)
    if not model or model in bound_names(lines, loop):
        return None  # obligation 1: rebound in the loop
    if _leaves_early(loop):
        return None  # obligation 2
    first = lines.line_text(loop.lineno)
    indent = first[: len(first) - len(first.lstrip())]
    if len(indent) != lines.span(loop).column:
        return None  # the loop shares its line with something else
    switches_others = any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("eval", "train")
        and written_text(lines, node.func.value) != model
        for node in ast.walk(tree)
    )
    return EvalModeSwitch(
        model=model,
        indent=indent,
        before_line=first_leading_line(lines, loop, 0, _first_in_block(tree, loop)),
        after_line=_last_footer_line(lines, loop, len(indent)),
        switches_others=switches_others,
    )
