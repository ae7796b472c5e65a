"""What TW021's fix needs, recorded by the rule: the loader, the epoch counter and where
``<loader>.sampler.set_epoch(<epoch>)`` goes.

The fixer inserts the call as the first statement of the epoch loop (see
:mod:`torchward.analysis.fixes.sampler_set_epoch_missing` for the obligations). The rule
checks obligations 1 and 2 on its ``ast`` (no payload, no fix), records whether the
sampler is distributed on every path (obligation 4: safe or unsafe) and hands it all
over as an :class:`EpochReseed`.
"""

from __future__ import annotations

import ast
from typing import ClassVar

import attrs

from ..finding import Evidence, Payload, Span
from ..syntax.positions import LineIndex
from .call_arguments import call_at, written_text
from .mode_switch import bound_names
from .train_mode_restore import loops_holding, parents, scope_of
from .zero_grad_move import first_leading_line

_WRAPPERS = {"enumerate", "tqdm", "iter"}
_COUNTERS = {"range", "trange"}


@attrs.frozen
class EpochReseed(Payload):
    """TW021: insert ``<loader>.sampler.set_epoch(<epoch>)`` at ``indent`` before line
    ``before_line``."""

    kind: ClassVar[str] = "epoch-reseed"
    loader: str  # the iterated loader as written: a name or an attribute
    epoch: str  # the epoch loop's counter
    indent: str  # the epoch loop body's indentation
    before_line: int  # the body's first statement's first line, its comments included
    distributed: bool  # the sampler is a DistributedSampler on every path


def _callee(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _unwrapped(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Call):
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        if _callee(node) not in _WRAPPERS or not positional:
            return node
        node = positional[0]
    return node


def _counts(loop: ast.For | ast.AsyncFor) -> bool:
    """Obligation 1: ``for NAME in range(...)`` (also inside ``tqdm``/``trange``)."""
    iterable = loop.iter
    if not isinstance(iterable, ast.Call) or not isinstance(
        iterable.func, (ast.Name, ast.Attribute)
    ):
        return False
    name = _callee(iterable)
    if name in _COUNTERS:
        return True
    values = [*iterable.args, *(k.value for k in iterable.keywords)]
    if name == "tqdm" and values:
        first = min(values, key=lambda v: (v.lineno, v.col_offset))
        inner = first.value if isinstance(first, ast.Starred) else first
        return (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id == "range"
        )
    return False


def _always_distributed(tree: ast.Module, lines: LineIndex, evidence: list[Evidence]) -> bool:
    """Obligation 4: the ``DistributedSampler(...)`` in the evidence is passed straight as
    ``sampler=``, or bound to a name that is assigned nowhere else in its function."""
    up = parents(tree)
    for item in evidence:
        call = call_at(tree, lines, item.span) if not item.path else None
        if call is None or not written_text(lines, call.func).endswith("DistributedSampler"):
            continue
        parent = up.get(call)
        if isinstance(parent, ast.keyword):
            return parent.arg == "sampler"
        if isinstance(parent, ast.Call) and call is not parent.func:
            return False  # passed by position
        if not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
            return False
        target = parent.targets[0]
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return False
        bound = written_text(lines, target)
        scope = scope_of(tree, parent)
        return not any(
            isinstance(node, ast.Assign)
            and node is not parent
            and any(written_text(lines, t) == bound for t in node.targets)
            for node in ast.walk(scope)
        )
    return False


def epoch_reseed(
    tree: ast.Module, lines: LineIndex, span: Span, evidence: list[Evidence]
) -> EpochReseed | None:
    """The payload of a TW021 finding at the iterated expression ``span``."""
    if len(evidence) < 2:
        return None
    header = evidence[1].span
    epoch = next(
        (node for node in loops_holding(tree, lines, span) if node.lineno == header.line), None
    )
    if not isinstance(epoch, (ast.For, ast.AsyncFor)) or not isinstance(epoch.target, ast.Name):
        return None
    first = epoch.body[0]
    text = lines.line_text(first.lineno)
    indent = text[: len(text) - len(text.lstrip())]
    if not _counts(epoch) or len(indent) != lines.span(first).column:
        return None  # obligation 1, or a body on the header's line
    iterated = next(
        (
            node.iter
            for node in ast.walk(epoch)
            if isinstance(node, ast.For) and lines.span(node.iter) == span
        ),
        None,
    )
    loader = _unwrapped(iterated) if iterated is not None else None
    if not isinstance(loader, (ast.Name, ast.Attribute)):
        return None  # obligation 2
    name = written_text(lines, loader)
    if not name or any(name in bound_names(lines, statement) for statement in epoch.body):
        return None  # obligation 2: rebound in the epoch loop
    return EpochReseed(
        loader=name,
        epoch=epoch.target.id,
        indent=indent,
        before_line=first_leading_line(lines, first, epoch.lineno, first_in_block=True),
        distributed=_always_distributed(tree, lines, evidence),
    )
