"""Which items of a returned tuple a function's text detaches, read without analysing it.

A call into another project module is followed (analysed in the caller's context) only
within a budget (:data:`.linking.MAX_ENTRIES` calls per analysis). Past it the call is
unknown, and an unknown call hands on the graph of its arguments to what it returns. For a
loss helper that returns ``loss, torch.cat(parts).detach()`` that is wrong for the second
item: the text says it carries no graph, and a running mean of it is not a retained graph
(yolov5's ``ComputeLoss``, ``segment/train.py``). This module reads that fact from the
``return`` statements alone, so it costs no analysis and holds in any calling context.

The answer errs towards "may carry a graph": an item counts as detached only when every
``return`` of the function gives a tuple of the same length whose item at that position
ends in a detaching operation (``.detach()``, ``.item()``, ``float(...)``, ``x.shape``...),
possibly followed by operations that cannot bring a graph back (``.cpu()``, ``.mean()``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..facts import catalog
from ..syntax.names import dotted

# Tensor methods whose result carries a graph only if their receiver does: their
# arguments are devices, dtypes, dimensions or shapes, never tensors that join the graph.
_RECEIVER_ONLY_METHODS = frozenset(
    {
        "bfloat16",
        "clone",
        "contiguous",
        "cpu",
        "cuda",
        "double",
        "flatten",
        "float",
        "half",
        "mean",
        "reshape",
        "squeeze",
        "sum",
        "to",
        "unsqueeze",
        "view",
    }
)


def detached_items(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[bool, ...] | None:
    """For a function whose every ``return`` gives a tuple literal of one length, whether
    each position is detached on every path; None when the returns do not have that shape
    (no return, a bare ``return``, a non-tuple, a starred item, lengths that differ)."""
    shape: list[bool] | None = None
    for returned in _returns(function):
        value = returned.value
        if not isinstance(value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in value.elts):
            return None
        items = [is_detached(e) for e in value.elts]
        if shape is None:
            shape = items
        elif len(shape) != len(items):
            return None
        else:
            shape = [a and b for a, b in zip(shape, items)]
    return tuple(shape) if shape is not None else None


def is_detached(node: ast.expr) -> bool:
    """Whether the expression's value is proven to carry no autograd graph by its text."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr in catalog.DETACHING_ATTRIBUTES
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr in catalog.DETACHING_METHODS:
            return True
        if func.attr in _RECEIVER_ONLY_METHODS:
            return is_detached(func.value)
        return dotted(func) in catalog.DETACHING_TORCH_FUNCTIONS
    return isinstance(func, ast.Name) and func.id in catalog.DETACHING_BUILTINS


def _returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Return]:
    """The function's own ``return`` statements (not those of functions nested in it)."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))
