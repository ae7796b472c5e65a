"""What TW003's fix needs, recorded by the rule: where the reset goes and what it may assume.

The fixer inserts ``<optimizer>.zero_grad(set_to_none=True)`` on the line after the
statement that steps (see :mod:`torchward.analysis.fixes.missing_zero_grad` for why
there and when it is safe). Everything that takes is known while the rule runs on the
``ast`` it already has: the statement's lines and indentation, the stepped optimizer's
expression as written, and the three facts the safety obligations read. So the rule
hands them over as a :class:`ZeroGradReset` and the fixer writes one text insertion,
without parsing the file again with LibCST or looking anything up by name.

The facts of a whole file come from one walk of its statements (:func:`_sites`), made
when the rule first reports in that file, and the scope facts from a walk of the scopes
that ask, once each: a report of a file with thousands of findings stays linear in the
file.

A step whose statement does not stand alone on its lines (``a; opt.step()``,
``if c: opt.step()``, a continuation after it) gets no payload, so no fix: quiet rather
than an insertion in the middle of a line.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import ClassVar

import attrs

from ..effects.table import current
from ..facts.values import Kind
from ..finding import Payload, Span
from ..syntax.names import ImportTable, dotted, qualified_path
from ..syntax.positions import LineIndex

_INDENT = re.compile(r"[ \t]*")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@attrs.frozen
class ZeroGradReset(Payload):
    """TW003: insert the reset after ``after_line``; the facts its safety obligations read."""

    kind: ClassVar[str] = "zero-grad-reset"
    after_line: int  # the last line of the statement that steps
    indent: str  # that statement's indentation, which the reset takes
    optimizer: str  # the stepped optimizer as written: a name or a chain of attributes
    closure: bool  # the optimizer's own ``step`` takes an argument (LBFGS's closure)
    retains_graph: bool  # the innermost loop around the step passes ``retain_graph=True``
    reads_gradients: bool  # the function of the step reads some ``.grad``


@attrs.define
class _Step:
    statement: ast.Expr
    call: ast.Call
    function: ast.AST  # the innermost function around the step, or the module
    loop: ast.AST | None  # the innermost loop whose body holds the step


@attrs.define
class _Sites:
    """One file's step statements by the span of their call, its scaler names, and the
    two scope facts, each found when first asked: a scope whose text never says ``grad``
    (``retain_graph``) cannot read ``.grad`` (pass it), so most scopes are never walked."""

    lines: LineIndex
    steps: dict[Span, _Step] = attrs.field(factory=dict)
    scalers: set[str] = attrs.field(factory=set)  # names bound to a scaler's constructor
    _known: dict[tuple[int, str], bool] = attrs.field(factory=dict)

    def reads_gradients(self, scope: ast.AST) -> bool:
        """Some ``.grad`` is read in ``scope`` (a function, nested ones included, or the module)."""
        return self._mentions(scope, "grad", _reads_grad)

    def retains_graph(self, loop: ast.AST) -> bool:
        """Some call in ``loop`` (its header and ``else`` included) passes ``retain_graph=True``."""
        return self._mentions(loop, "retain_graph", _retains)

    def _mentions(self, node: ast.AST, word: str, holds) -> bool:
        key = (id(node), word)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = word in self._text(node) and any(
                holds(inner) for inner in ast.walk(node)
            )
        return known

    def _text(self, node: ast.AST) -> str:
        if isinstance(node, ast.Module):
            return "\n".join(self.lines.lines)
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])  # type: ignore[attr-defined]
        return "\n".join(self.lines.lines[first - 1 : node.end_lineno])  # type: ignore[attr-defined]


def _reads_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _retains(node: ast.AST) -> bool:
    if not isinstance(node, ast.keyword) or node.arg != "retain_graph":
        return False
    return isinstance(node.value, ast.Constant) and node.value.value is True


@lru_cache(maxsize=4)
def _sites(tree: ast.Module, lines: LineIndex) -> _Sites:
    """The file's step statements and scaler names, in one walk of its statements (not
    of its expressions: a tenth of the nodes)."""
    sites = _Sites(lines)
    imports = ImportTable(tree)
    # (statement, the innermost function around it or the module, the loop whose body holds it)
    stack: list[tuple[ast.stmt, ast.AST, ast.AST | None]] = [
        (statement, tree, None) for statement in reversed(tree.body)
    ]
    while stack:
        node, function, body_loop = stack.pop()
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr == "step":
                span = lines.span(node.value)
                sites.steps[span] = _Step(node, node.value, function, body_loop)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            built = dotted(node.value.func)
            name = qualified_path(built, imports) if built is not None else None
            if name is not None and current().constructed_kind(name) is Kind.SCALER:
                sites.scalers.update(t for t in map(dotted, node.targets) if t is not None)
        inner = node if isinstance(node, _FUNCTIONS) else function
        blocks: list[tuple[list, ast.AST | None]] = [
            (node.body, node)
            if isinstance(node, _LOOPS)
            else (getattr(node, "body", []), body_loop),
            (getattr(node, "orelse", []), body_loop),
            (getattr(node, "finalbody", []), body_loop),
            *((handler.body, body_loop) for handler in getattr(node, "handlers", ())),
            *((case.body, body_loop) for case in getattr(node, "cases", ())),
        ]
        for block, loop in reversed(blocks):
            stack.extend(
                (child, inner, loop) for child in reversed(block) if isinstance(child, ast.stmt)
            )
    return sites


def _argument(call: ast.Call, position: int | None, keyword: str | None) -> ast.expr | None:
    """The expression passed at ``position`` or as ``keyword`` (None behind a ``*args``)."""
    for item in call.keywords:
        if keyword is not None and item.arg == keyword:
            return item.value
    positional = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            break
        positional.append(arg)
    if position is not None and position < len(positional):
        return positional[position]
    return None


def _stepped(call: ast.Call, sites: _Sites) -> ast.expr | None:
    """The optimizer a ``.step(...)`` steps: its receiver, or for a scaler's ``step`` the
    argument the library-effects table names (``scaler.step(opt)``)."""
    receiver = call.func.value  # type: ignore[attr-defined]
    if dotted(receiver) not in sites.scalers:
        return receiver
    entry = current().method("scaler", "step")
    for effect in entry.effects if entry is not None else ():
        if effect.effect == "step" and (effect.argument is not None or effect.keyword):
            return _argument(call, effect.argument, effect.keyword)
    return None


def _alone_on_its_lines(statement: ast.stmt, lines: LineIndex) -> str | None:
    """The statement's indentation when nothing else shares its first or last line but a
    trailing comment; None otherwise."""
    span = lines.span(statement)
    first = lines.line_text(span.line)
    indent = _INDENT.match(first)
    if indent is None or indent.end() != span.column:
        return None
    rest = lines.line_text(span.end_line)[span.end_column :].strip()
    if rest and not rest.startswith("#"):
        return None
    return indent.group()


def zero_grad_reset(tree: ast.Module, lines: LineIndex, span: Span) -> ZeroGradReset | None:
    """The payload of a TW003 finding at the step call ``span``; None when no fix fits."""
    sites = _sites(tree, lines)
    step = sites.steps.get(span)
    if step is None:
        return None  # the loop steps through a helper: no statement of its own to anchor to
    indent = _alone_on_its_lines(step.statement, lines)
    optimizer = _stepped(step.call, sites)
    if indent is None or optimizer is None or dotted(optimizer) is None:
        return None  # ``make_opt().step()``: writing it again would build another optimizer
    where = lines.span(optimizer)
    if where.line != where.end_line:
        return None
    return ZeroGradReset(
        after_line=step.statement.end_lineno or step.statement.lineno,
        indent=indent,
        optimizer=lines.line_text(where.line)[where.column : where.end_column],
        closure=optimizer is step.call.func.value  # type: ignore[attr-defined]
        and bool(step.call.args or step.call.keywords),
        retains_graph=step.loop is not None and sites.retains_graph(step.loop),
        reads_gradients=sites.reads_gradients(step.function),
    )
