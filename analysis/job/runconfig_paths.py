"""Which path of a script a value was read on, for the VRAM estimator's run configuration.

A value only describes the job when the code that holds it runs by default: with no
command-line flags, launched as ``python SCRIPT``. Each node the reader looks at gets a
:class:`~torchward.analysis.facts.conditions.PathCondition` (the engine's vocabulary for it, and
the confidence it allows). The analysis engine decides it, asked on demand
(:mod:`.launch_demand`, with the conditions of :mod:`.launch_paths`): the condition of the
statement holding the node on a plain launch — its ``if`` / ``while`` tests decided by the
launch's facts (argparse defaults, module constants, environment variables a plain launch
does not set; a test naming a distributed set-up is ``multi-gpu``, one the facts cannot
decide ``unsure``), grad turned off around it, an evaluating function around it
(``validation``), a ``raise`` or an early ``return`` a plain launch reaches before it
(``unsure``), and the conditions of the calls that reach its function. This module only
indexes the tree for the reader (parents, calls by name, nodes by class), narrows a
statement's condition to an arm of a conditional expression, and finds where a launch
without flags gives up, for the reader's note.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, TypeVar

from ..facts.analyzer import FileAnalyzer
from ..facts.conditions import PathCondition
from ..facts.constants import UNDECIDED
from ..facts.launch_driver import LaunchInputs
from .launch_demand import DemandLaunch

if TYPE_CHECKING:
    from .runconfig_declarations import Values

__all__ = ["UNDECIDED", "PathConditions"]

# shared singletons (``ast.Load()``...) and operators: no parent, nothing below them
_Node = TypeVar("_Node", bound=ast.AST)
_SKIPPED = frozenset(
    kind
    for base in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
    for kind in base.__subclasses__()
)  # by exact class: one set lookup per child instead of an isinstance over five bases


class PathConditions:
    """Path states of the nodes of one module (parents and call sites indexed once)."""

    def __init__(self, tree: ast.Module, values: Values) -> None:
        self.values = values
        self.parents: dict[int, ast.AST] = {}
        self.calls_by_name: dict[str, list[ast.Call]] = {}
        # every node in ast.walk's (breadth-first) order, each child indexed as it is queued:
        # one pass over the tree per script
        self.nodes: list[ast.AST] = [tree]
        # the same nodes by their class, each list in walk order (:meth:`of_type`): the
        # reader's passes read a few kinds of node, and one test per node per pass was a
        # tenth of a read
        self._by_type: dict[type, list[ast.AST]] = {}
        parents, nodes, by_type = self.parents, self.nodes, self._by_type
        for node in nodes:  # grows as it goes: a breadth-first queue
            kind = type(node)
            of_kind = by_type.get(kind)
            if of_kind is None:
                of_kind = by_type[kind] = []
            of_kind.append(node)
            for field in node._fields:
                child = getattr(node, field, None)
                if type(child) is list:
                    for item in child:
                        if isinstance(item, ast.AST) and type(item) not in _SKIPPED:
                            parents[id(item)] = node
                            nodes.append(item)
                elif isinstance(child, ast.AST) and type(child) not in _SKIPPED:
                    parents[id(child)] = node
                    nodes.append(child)
            if kind is ast.Call:
                assert isinstance(node, ast.Call)
                func = node.func
                name = (
                    func.id
                    if isinstance(func, ast.Name)
                    else func.attr
                    if isinstance(func, ast.Attribute)
                    else None
                )
                if name:
                    self.calls_by_name.setdefault(name, []).append(node)
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Name):  # a function passed as a callback (spawn)
                        self.calls_by_name.setdefault(arg.id, []).append(node)
        self.tree = tree
        self._states: dict[int, PathCondition] = {}
        self._functions: dict[int, ast.AST | None] = {}
        self._demand: DemandLaunch | None = None

    def of_type(self, *kinds: type[_Node]) -> list[_Node]:
        """The nodes of exactly these classes, in :attr:`nodes`' order."""
        if len(kinds) == 1:
            return self._by_type.get(kinds[0], [])  # type: ignore[return-value]
        wanted = set(kinds)
        return [node for node in self.nodes if type(node) in wanted]  # type: ignore[misc]

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        key = id(node)
        if key not in self._functions:
            current = self.parent(node)
            while current is not None and not isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                current = self.parent(current)
            self._functions[key] = current
        return self._functions[key]  # type: ignore[return-value]

    @property
    def demand(self) -> DemandLaunch:
        """The engine's launch of this tree, asked on demand (built when first asked: the
        files the script executes and loads are known by then)."""
        if self._demand is None:
            values = self.values
            inputs = LaunchInputs(
                included=values.included,
                load=values.load_constant,
                returns=values.returns,
                dataclasses=values.imported_dataclasses,
            )
            analyzer = FileAnalyzer(self.tree, values.source_text or "", values.path, launch=inputs)
            self._demand = DemandLaunch(analyzer)
        return self._demand

    def state(self, node: ast.AST, depth: int = 0) -> PathCondition:
        """The path condition of ``node``: the engine's (see the module docstring)."""
        key = id(node)
        known = self._states.get(key)
        if known is None:
            known = self._states[key] = self._state(node)
        return known

    def _state(self, node: ast.AST) -> PathCondition:
        statement, arms = node, PathCondition.DEFAULT
        while not isinstance(statement, ast.stmt):
            parent = self.parent(statement)
            if parent is None:
                return PathCondition.DEFAULT  # the module itself
            if isinstance(parent, ast.IfExp) and statement is not parent.test:
                arms = arms.worst(self._arm(parent, statement is parent.body))
            statement = parent
        if id(statement) not in self.demand.places.places and self._in_class(statement):
            return arms
        condition = self.demand.condition(statement)
        return (condition or PathCondition.UNSURE).worst(arms)

    def early_stops(self) -> list[ast.Raise | ast.Return]:
        """Where a plain launch gives up with code of the job still to come: a ``raise``,
        or a bare ``return`` in the function the module itself launches (``if
        checkpoint_dir is None and load_checkpoint_dir is None: return`` in the ``train``
        that ``fire.Fire(train)`` runs). Past them the job runs only with flags the
        defaults leave unset, which the reader says in a note. A helper returning early
        (``if torch.cuda.is_available(): return torch.device("cuda")``) is its control
        flow, not the launch giving up: not noted, though the engine reads what follows
        as unsure all the same. In line order."""
        places = self.demand.places
        stops: list[ast.Raise | ast.Return] = [*self.of_type(ast.Raise), *self.of_type(ast.Return)]
        found = [
            statement
            for statement in stops
            if (isinstance(statement, ast.Raise) or self._gives_up(statement))
            and self._gated_by_flags(statement)
            and places.leaves_code_behind(statement)
            and self.state(statement) is PathCondition.DEFAULT
        ]
        return sorted(found, key=lambda s: (s.lineno, s.col_offset))

    def _gated_by_flags(self, stop: ast.stmt) -> bool:
        """Whether the ``if`` around ``stop`` tests only the launch's flags: parameters of
        its function, names bound to ``parse_args()``. A test on what the script computes
        (``if not check_if_running("ollama")``, ``if vram["total"] == 0``) the engine
        decides from the default path's values only, a guess too weak to tell the user
        that the launch gives up."""
        gate = self.parent(stop)
        while gate is not None and not isinstance(gate, ast.If):
            if isinstance(gate, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                return False  # no test gates it: always reached, not a matter of flags
            gate = self.parent(gate)
        if gate is None:
            return False
        function = self.enclosing_function(stop)
        parameters = self.demand.places.parameters(function).names if function else ()
        names = [n.id for n in ast.walk(gate.test) if isinstance(n, ast.Name)]
        return bool(names) and all(
            n in parameters or self._parsed_flags(n, function) for n in names
        )

    def _parsed_flags(self, name: str, function: ast.AST | None) -> bool:
        """``name`` is bound in ``function`` (None: the module's code) only to a parser's
        result (``args = parser.parse_args()``)."""
        bound = [
            (value, statement)
            for value, statement in self.values.assignments.get(name, [])
            if self.enclosing_function(statement) is function
        ]
        return bool(bound) and all(
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr.startswith("parse_")
            for value, _ in bound
        )

    def _gives_up(self, stop: ast.Return) -> bool:
        """A bare ``return`` in a function the module's own code calls or hands over."""
        if stop.value is not None and not (
            isinstance(stop.value, ast.Constant) and stop.value.value is None
        ):
            return False
        function = self.enclosing_function(stop)
        return function is not None and any(
            self.enclosing_function(call) is None
            for call in self.calls_by_name.get(function.name, ())
        )

    def _arm(self, choice: ast.IfExp, in_body: bool) -> PathCondition:
        """An arm of ``a if test else b``: the engine's fact of the test decides it."""
        fact = self.demand.constant(choice.test)
        if fact is None or not fact.decided:
            return PathCondition.UNSURE
        return fact.condition if bool(fact.value) == in_body else PathCondition.OFF

    def _in_class(self, statement: ast.AST) -> bool:
        """A class body's statement (a dataclass field's default): the class's definition
        runs when the module does."""
        parent = self.parent(statement)
        while parent is not None and not isinstance(parent, ast.Module):
            if isinstance(parent, ast.ClassDef):
                return True
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return False
            parent = self.parent(parent)
        return False
