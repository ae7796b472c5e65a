"""The values a script's expressions hold on a default launch, as the engine computes them.

The reader does not evaluate expressions itself: the analysis engine's launch, asked on
demand (:mod:`.launch_demand`, folding as :mod:`.launch` does), gives each expression the
reader asks about a
:class:`~torchward.analysis.facts.constants.ConstantFact` — the value a plain ``python SCRIPT``
launch computes, and the path condition it holds under — following bindings, calls and
parameters, argparse defaults, config dataclasses, dicts changed in place, environment
variables a plain launch leaves unset, config files the script loads and the files it
executes (:mod:`.runconfig_includes` supplies those). :class:`LaunchValues` answers the
reader's question about a node from those facts, in the reader's Python spelling (a dict
for the engine's item tuples and namespaces), with the confidence the reader reports:
``high`` for a literal written at the use, ``medium`` for anything followed (a launch can
override it). A value held only on a path that does not run on a plain launch is no
value of the job.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ..facts.constants import TORCH_DTYPES, UNDECIDED, ConstantFact, is_items
from ..facts.launch_arguments import ArgumentDefaults, DataclassParser, Namespace
from ..syntax.names import dotted

if TYPE_CHECKING:
    from .runconfig_paths import PathConditions

__all__ = ["LaunchValues", "literal", "python_value"]

_LITERAL_NODES = (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp)


def literal(node: ast.AST) -> Any:
    """The value of a literal expression (``12``, ``(224, 224)``, ``{"a": 1}``), else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if not isinstance(node, _LITERAL_NODES):
        return None  # a name, call, attribute...: never a literal (and raising costs)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def written(node: ast.AST) -> Any:
    """A value written at the use: a literal, or a dtype named in place (``torch.bfloat16``,
    spelt as a run configuration spells it); None otherwise."""
    found = literal(node)
    if found is None and isinstance(node, ast.Attribute):
        text = dotted(node) or ""
        if text.startswith("torch.") and text.rsplit(".", 1)[-1] in TORCH_DTYPES:
            return "torch." + text.rsplit(".", 1)[-1]
    return found


def python_value(value: Hashable) -> Any:
    """A launch constant in the reader's spelling: dicts for the engine's item tuples and
    namespaces (a parsed ``args``, a config dataclass), tuples for lists. Raises
    ``TypeError`` for what has no value of its own (a parser, an undecided part)."""
    if value is UNDECIDED or isinstance(value, (ArgumentDefaults, DataclassParser)):
        raise TypeError(f"no value: {value!r}")
    if isinstance(value, Namespace):
        return {name: _part(item) for name, item in value.values if item is not UNDECIDED}
    if isinstance(value, tuple) and value and is_items(value):
        # a key whose value the launch does not decide is left out, as the reader left out
        # a key stored under a condition nobody decides
        return {key: _part(item) for key, item in value if item is not UNDECIDED}
    if isinstance(value, tuple):
        return tuple(_part(item) for item in value)
    if isinstance(value, frozenset):
        return set(value)
    return value


def _part(value: Hashable) -> Any:
    """An item of a container: an undecided item of a list stays in it, as the marker (its
    place counts); a dict leaves undecided keys out (:func:`python_value`)."""
    return value if value is UNDECIDED else python_value(value)


class LaunchValues:
    """(value, confidence) of the script's expressions, from the engine's launch facts."""

    paths: PathConditions

    def get(self, node: ast.AST | None) -> tuple[Any, str] | None:
        """(value, confidence) of an expression, or ``None`` when the launch does not decide
        it on a path that runs."""
        if node is None:
            return None
        found = written(node)
        if found is not None:
            return found, "high"
        fact = self.fact(node)
        if fact is None or not fact.decided or not fact.condition.runs:
            return None
        try:
            return python_value(fact.value), "medium"
        except TypeError:
            return None

    def decide(self, test: ast.expr) -> Any:
        """The value of a branch condition on a default launch, or ``UNDECIDED``."""
        found = self.get(test)
        return UNDECIDED if found is None else found[0]

    def fact(self, node: ast.AST) -> ConstantFact | None:
        """The engine's fact of ``node``, asked on demand (:mod:`.launch_demand`)."""
        return self.paths.demand.constant(node)

    def assigned(self, node: ast.Name) -> ast.expr | None:
        """The expression the nearest assignment that runs by default binds to ``node``'s
        name (its function, before it; then enclosing functions and the module); None
        when there is none, or it runs under a condition nobody can decide."""
        candidates = self.assignments.get(node.id, [])  # type: ignore[attr-defined]
        scope: ast.AST | None = self.paths.enclosing_function(node)
        while True:
            for value, stmt in reversed(candidates):
                if self.paths.enclosing_function(stmt) is not scope:
                    continue
                if scope is not None and stmt.lineno > node.lineno:
                    continue
                state = self.paths.state(stmt)
                if state.runs:
                    return None if state == "unsure" else value
            if scope is None:
                return None
            scope = self.paths.enclosing_function(scope)
