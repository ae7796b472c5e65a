"""A function body's index of its own code: where it calls ``backward``, on what, and
the line ranges of its loops (nested functions and classes are analysed in their own
right and left out).

Built once per body per analysis (:meth:`~.analyzer.FileAnalyzer.backward_targets`,
``loop_lines``), and so on every keystroke for the module's body — a script's whole
``__main__`` block: one walk that reads fields directly and enters the expressions of only
the statements spanning a line that holds ``backward``.
"""

from __future__ import annotations

import ast
import bisect
import functools
from collections.abc import Callable, Iterator, Sequence

from .names import dotted

__all__ = ["own_code_index", "walk_own_code"]

_FRAMEWORK_BACKWARD_OWNERS = ("accelerator", "fabric", "engine", "model_engine", "deepspeed_engine")

_NESTED_CODE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# what holds statements: the blocks :func:`walk_own_code` walks into without expressions
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def walk_own_code(
    body: list[ast.stmt], expressions_of: Callable[[ast.AST], bool] | None = None
) -> Iterator[ast.AST]:
    """Every node of ``body`` except those of nested functions and classes, which are
    analysed in their own right (and the ``Load`` / ``Store`` markers). The children in
    ``ast.iter_child_nodes``' order, read field by field without its generators: a
    module's ``__main__`` block is walked on every keystroke. ``expressions_of``: whether
    a statement's expressions are wanted (its statements always are); dropping subtrees
    keeps the order of the rest."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _NESTED_CODE):
            continue
        if expressions_of is not None and isinstance(node, _BLOCKS) and not expressions_of(node):
            for field in node._fields:
                child = getattr(node, field, None)
                if isinstance(child, list):
                    stack.extend(item for item in child if isinstance(item, _BLOCKS))
            continue
        for field in node._fields:
            child = getattr(node, field, None)
            if isinstance(child, list):
                stack.extend(item for item in child if isinstance(item, ast.AST))
            elif isinstance(child, ast.AST) and not isinstance(child, ast.expr_context):
                stack.append(child)


def own_code_index(
    body: list[ast.stmt], backward_lines: Sequence[int] | None = None
) -> tuple[dict[str, tuple[ast.Call, ...]], list[tuple[int, int]]]:
    """One walk of ``body``'s own code for what a run of it asks: the names it calls
    ``backward`` on (:func:`_note_backward`) and the line ranges of its loops. ``backward_lines``: the sorted lines of the file that hold
    ``backward`` (None: look everywhere); only statements spanning one of them are walked
    into for calls, and none when it is empty."""

    def spans_a_backward(statement: ast.AST, lines: Sequence[int]) -> bool:
        start = getattr(statement, "lineno", 0)
        at = bisect.bisect_left(lines, start)
        return at < len(lines) and lines[at] <= getattr(statement, "end_lineno", start)

    targets: dict[str, tuple[ast.Call, ...]] = {}
    loops: list[tuple[int, int]] = []
    walk = walk_own_code(
        body,
        None
        if backward_lines is None
        else functools.partial(spans_a_backward, lines=backward_lines),
    )
    for node in walk:
        if isinstance(node, _LOOPS):
            loops.append((node.lineno, getattr(node, "end_lineno", node.lineno)))
        elif isinstance(node, ast.Call):
            _note_backward(node, targets)
    return targets, loops


def _note_backward(node: ast.Call, found: dict[str, tuple[ast.Call, ...]]) -> None:
    """Adds ``node`` to ``found`` under the name it backpropagates, when it is a backward."""
    if not (
        isinstance(node.func, ast.Attribute) and node.func.attr in ("backward", "manual_backward")
    ):
        return
    receiver = node.func.value
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
        and receiver.args
    ):
        receiver = receiver.args[0]
    owner = dotted(receiver)
    if node.args and (
        node.func.attr == "manual_backward"  # Lightning: ``self.manual_backward(loss)``
        or (owner and owner.rsplit(".", 1)[-1].lower().endswith(_FRAMEWORK_BACKWARD_OWNERS))
    ):
        target = dotted(node.args[0])
    elif node.args:
        return
    else:
        target = owner
    if target:
        found[target] = found.get(target, ()) + (node,)
