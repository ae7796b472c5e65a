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

from ..effects.table import current
from ..syntax.names import dotted

__all__ = ["backward_receiver", "own_code_index", "walk_own_code"]

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
    """One walk of ``body``'s own code for what a run of it asks: the names it may call
    ``backward`` on (:func:`_note_backward`) and the line ranges of its loops.
    ``backward_lines``: the sorted lines of the file that hold
    ``backward`` (None: look everywhere); only statements spanning one of them are walked
    into for calls, and none when it is empty."""

    def spans_a_backward(statement: ast.AST, lines: Sequence[int]) -> bool:
        start = getattr(statement, "lineno", 0)
        at = bisect.bisect_left(lines, start)
        return at < len(lines) and lines[at] <= getattr(statement, "end_lineno", start)

    table = current()
    backwards = table.backward_methods() | {"backward"}
    returning = table.argument_returning_methods()
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
            _note_backward(node, targets, backwards, returning)
    return targets, loops


def backward_receiver(call: ast.Call, returning: frozenset[str] | None = None) -> ast.expr:
    """What ``call``'s method is called on, seen through a method the library-effects
    table says hands back its argument (``scaler.scale(loss).backward()``: ``loss``);
    ``returning``: those methods' names, when the caller has them already."""
    if returning is None:
        returning = current().argument_returning_methods()
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr in returning
        and receiver.args
    ):
        return receiver.args[0]
    return receiver


def _note_backward(
    node: ast.Call,
    found: dict[str, tuple[ast.Call, ...]],
    backwards: frozenset[str],
    returning: frozenset[str],
) -> None:
    """Adds ``node`` to ``found`` under the name it may backpropagate, when it calls a
    method that runs backward (``backward``, or one the library-effects table lists).

    ``loss.backward()`` backpropagates its receiver; a call with a positional argument
    (``accelerator.backward(loss)``, ``self.manual_backward(loss)``) is recorded under
    the argument, a *candidate* only: ``y.backward(grad_y)`` passes a tensor's output
    gradient, so which it is depends on what the receiver is, known only to the run
    (:func:`torchward.analysis.effects.library.backpropagates`)."""
    if not (isinstance(node.func, ast.Attribute) and node.func.attr in backwards):
        return
    target = dotted(node.args[0]) if node.args else dotted(backward_receiver(node, returning))
    if target:
        found[target] = found.get(target, ()) + (node,)
