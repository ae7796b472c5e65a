"""What TW011's fix needs, recorded by the rule: which model, and where ``.train()`` goes.

The fixer inserts ``<model>.train()`` as the first statement of the loop that holds the
switch to eval mode and the training step (see
:mod:`torchward.analysis.fixes.stuck_eval_mode` for the obligations). The rule finds,
on its ``ast``, the model expression (the switch's receiver, or the argument passed for
the parameter a helper of this file switches), the loop, the line where its body's first
statement begins with its leading comments, and the facts the safety obligations read,
and hands them over as a :class:`TrainModeRestore`.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import ClassVar, TypeVar

import attrs

from ..finding import Evidence, Payload, Span
from ..syntax.positions import LineIndex
from .call_arguments import call_at, written_text
from .zero_grad_move import first_leading_line

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@attrs.frozen
class TrainModeRestore(Payload):
    """TW011: insert ``<model>.train()`` at ``indent`` before line ``before_line``."""

    kind: ClassVar[str] = "train-mode-restore"
    model: str  # the model as written
    indent: str  # the loop body's indentation
    before_line: int  # the first line of the body's first statement, its comments included
    loop: str  # the loop as the user knows it: ``for epoch in …`` or ``while …``
    plain: bool  # the model is a name or a chain of attributes
    # the call before the loop that switches the model to train mode or builds it fresh,
    # and its text (a fix asked for on a newer text is safe only while it is still there);
    # None: the model may enter the loop in eval mode
    entry: Span | None
    entry_text: str


_N = TypeVar("_N", bound=ast.AST)


def _in_order(nodes: list[_N]) -> list[_N]:
    """``nodes`` in the order they are written (``ast.walk`` goes breadth first)."""
    return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def loops_holding(
    tree: ast.AST, lines: LineIndex, span: Span
) -> list[ast.For | ast.AsyncFor | ast.While]:
    """The loops whose body (not their header) holds ``span``, in the order of the walk."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, _LOOPS)
        and node.body
        and Span(
            lines.span(node.body[0]).line,
            lines.span(node.body[0]).column,
            lines.span(node.body[-1]).end_line,
            lines.span(node.body[-1]).end_column,
        ).contains(span)
    ]


def _is_literal(node: ast.AST, value: bool) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _single_argument(call: ast.Call) -> ast.AST | None:
    values = [*call.args, *(k.value for k in call.keywords)]
    if len(values) != 1 or isinstance(values[0], ast.Starred):
        return None
    if call.keywords and call.keywords[0].arg is None:
        return None
    return values[0]


def _switched(call: ast.Call) -> ast.expr | None:
    """The receiver of ``x.eval()`` or ``x.train(False)``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "eval" and not call.args and not call.keywords:
        return func.value
    if func.attr == "train" and _is_literal(_single_argument(call), False):  # type: ignore[arg-type]
        return func.value
    return None


def _model_through_helper(tree: ast.Module, call: ast.Call) -> ast.expr | None:
    if not isinstance(call.func, ast.Name):
        return None
    helpers = [f for f in ast.walk(tree) if isinstance(f, _FUNCTIONS) and f.name == call.func.id]
    if not helpers:
        return None
    helper = _in_order(helpers)[0]
    params = [a.arg for a in helper.args.args]
    arguments: list[ast.expr | ast.keyword] = _in_order([*call.args, *call.keywords])
    inner_calls = _in_order([c for c in ast.walk(helper) if isinstance(c, ast.Call)])
    for inner in inner_calls:
        receiver = _switched(inner)
        if isinstance(receiver, ast.Name) and receiver.id in params:
            index = params.index(receiver.id)
            for position, argument in enumerate(arguments):
                if isinstance(argument, ast.keyword):
                    if argument.arg == receiver.id:
                        return argument.value
                elif not isinstance(argument, ast.Starred) and position == index:
                    return argument
    return None


def _plain(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


@lru_cache(maxsize=4)
def parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def scope_of(tree: ast.Module, loop: ast.AST) -> ast.AST:
    """The innermost function around ``loop``, or the module."""
    up = parents(tree)
    node = up.get(loop)
    while node is not None and not isinstance(node, _FUNCTIONS):
        node = up.get(node)
    return node if node is not None else tree


def _trains_on_entry(
    tree: ast.Module, lines: LineIndex, name: str, loop: ast.stmt
) -> ast.Call | None:
    """The call before ``loop``, in its function, that switches ``name`` to train mode or
    builds it fresh (by ``torch.nn`` or a class of this file)."""
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    start = (loop.lineno, loop.col_offset)
    scope = scope_of(tree, loop)
    up = parents(tree)
    for call in _in_order([c for c in ast.walk(scope) if isinstance(c, ast.Call)]):
        if (call.lineno, call.col_offset) >= start:
            continue
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "train"
            and written_text(lines, func.value) == name
        ):
            values = [*call.args, *(k.value for k in call.keywords)]
            if not values or _is_literal(values[0], True):
                return call
        assign = up.get(call)
        if (
            isinstance(assign, ast.Assign)
            and assign.value is call
            and any(written_text(lines, target) == name for target in assign.targets)
        ):
            built = written_text(lines, func)
            if built.startswith(("nn.", "torch.nn.")) or built in classes:
                return call
    return None


def train_mode_restore(
    tree: ast.Module, lines: LineIndex, span: Span, evidence: list[Evidence]
) -> TrainModeRestore | None:
    """The payload of a TW011 finding at the switch (or helper call) ``span``."""
    call = call_at(tree, lines, span)
    if call is None:
        return None
    model = _switched(call) or _model_through_helper(tree, call)
    if model is None:
        return None
    others = [e.span for e in evidence if not e.path and not span.contains(e.span)]
    around = loops_holding(tree, lines, span)
    around.sort(key=lambda node: (node.lineno, node.col_offset), reverse=True)  # innermost first
    loop = next((lp for lp in around if all(lines.span(lp).contains(s) for s in others)), None)
    if loop is None:
        return None
    first = loop.body[0]
    text = lines.line_text(first.lineno)
    indent = text[: len(text) - len(text.lstrip())]
    if len(indent) != lines.span(first).column:
        return None  # the body shares the header's line: no block to insert into
    name = written_text(lines, model)
    if not name:
        return None
    header = (
        f"for {written_text(lines, loop.target)} in …"
        if isinstance(loop, (ast.For, ast.AsyncFor))
        else "while …"
    )
    entry = _trains_on_entry(tree, lines, name, loop)
    return TrainModeRestore(
        model=name,
        indent=indent,
        before_line=first_leading_line(lines, first, loop.lineno, first_in_block=True),
        loop=header,
        plain=_plain(model),
        entry=lines.span(entry) if entry is not None else None,
        entry_text=written_text(lines, entry) if entry is not None else "",
    )
