"""Path conditions on demand (:mod:`.launch_demand`): where a statement's block starts —
its function's entry, the best of its call sites' conditions (a function nothing calls as
:func:`~.launch_paths.uncalled` says), or its owner's condition and gate — and ``unsure``
past a statement of the block that raises or returns on a plain launch. A test is folded apart from
whether its statement runs, so a branch the defaults skip is off even under an undecided
gate; a periodic ``step % N`` gate in a loop opens.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..facts.conditions import PathCondition
from ..facts.launch_paths import (
    _disables_grad,
    branch_conditions,
    launch_entry_condition,
    periodic,
    uncalled,
)
from ..syntax.names import dotted
from .launch_demand_entry import SPAWNERS
from .launch_demand_memo import MISSING, Context, Cycle
from .launch_places import FUNCTIONS, LOOPS, WITHS
from .launch_unused import unused_functions

if TYPE_CHECKING:
    from ..facts.semantic import FunctionInfo
    from .launch_demand import DemandLaunch
    from .launch_demand_state import DemandState

__all__ = ["Conditions"]


class Conditions:
    """Statements' conditions for :class:`~.launch_demand.DemandLaunch`."""

    def __init__(self, state: DemandState, launch: DemandLaunch) -> None:
        self.state = state
        self.launch = launch  # the questions, and the other collaborators it holds

    def condition_in(
        self, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> PathCondition:
        key = (id(statement), context)
        known = self.state.conditions.get(key)
        if known is not MISSING:
            return known  # type: ignore[return-value]
        if ("condition",) + key in self.state.active or self.state.steps > self.state.budget:
            raise self.state.cycle()
        self.state.steps += 1
        self.state.active.add(("condition",) + key)
        cycles = self.state.cycles
        try:
            found = self._condition_of(statement, scope, context)
        finally:
            self.state.active.discard(("condition",) + key)
        self.state.conditions.keep(key, found, cycles == self.state.cycles)
        return found

    def _condition_of(
        self, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> PathCondition:
        """Where ``statement``'s block starts (its scope's entry, or its owner's condition
        and gate), and ``unsure`` past a statement of the block that raises or returns by default."""
        top = scope.node if scope is not None else None
        if statement is top and scope is not None:
            return self.entry_condition(scope, context)
        place = self.state.places.places.get(id(statement))
        if place is None:
            return PathCondition.DEFAULT if scope is None else self.entry_condition(scope, context)
        block, index, owner = place
        if owner is top or owner is None:
            start = (
                self.entry_condition(scope, context) if scope is not None else PathCondition.DEFAULT
            )
        else:
            start = self._block_start(owner, block, scope, context)
        if start is PathCondition.DEFAULT and any(
            self._stops(block[i], scope, context)
            for i in self.state.places.stopping_in(block)
            if i < index
        ):
            return PathCondition.UNSURE  # after a raise or return a plain launch reaches
        return start

    def _block_start(
        self,
        owner: ast.AST,
        block: list[ast.stmt],
        scope: FunctionInfo | None,
        context: Context,
    ) -> PathCondition:
        """The condition a block of ``owner`` starts under: the owner's, and its gate."""
        if isinstance(owner, ast.If):
            _, body, orelse = self.branches(owner, scope, context)
            return body if block is owner.body else orelse
        condition = self.condition_in(owner, scope, context)
        if isinstance(owner, ast.While) and block is owner.body:
            test = self.launch.test_fact(owner.test, owner, scope, context)
            return condition.worst(branch_conditions(owner.test, test)[0])
        if isinstance(owner, WITHS) and any(_disables_grad(i.context_expr) for i in owner.items):
            return condition.worst(PathCondition.VALIDATION)
        return condition

    def _stops(self, statement: ast.stmt, scope: FunctionInfo | None, context: Context) -> bool:
        """Whether a plain launch leaves the function in ``statement`` — a ``raise``, an
        early ``return`` (the rest of its block then runs only with flags the defaults do
        not describe)."""
        key = id(statement)
        if not self.state.places.may_stop(statement):
            return False
        known = self.state.stopped.get((key, context))
        if known is not MISSING:
            return known  # type: ignore[return-value]
        cycles = self.state.cycles
        if isinstance(statement, (ast.Raise, ast.Return)):
            found = self.condition_in(statement, scope, context) is PathCondition.DEFAULT
        elif isinstance(statement, (ast.If, *WITHS, *LOOPS)):
            blocks = [statement.body, getattr(statement, "orelse", [])]
            found = any(self._stops(s, scope, context) for block in blocks for s in block)
        else:
            found = False  # a ``try`` with handlers may catch it
        self.state.stopped.keep((key, context), found, cycles == self.state.cycles)
        return found

    def branches(
        self, statement: ast.If, scope: FunctionInfo | None, context: Context
    ) -> tuple[PathCondition, PathCondition, PathCondition]:
        key = (id(statement), context)
        known = self.state.branches.get(key)
        if known is MISSING:
            cycles = self.state.cycles
            entry = self.condition_in(statement, scope, context)
            test = self.launch.test_fact(statement.test, statement, scope, context)
            body, orelse = branch_conditions(statement.test, test)
            if not test.decided and periodic(statement.test) and self._in_a_loop(statement):
                body = orelse = PathCondition.DEFAULT  # opens every N iterations: both run
            known = (entry, entry.worst(body), entry.worst(orelse))
            self.state.branches.keep(key, known, cycles == self.state.cycles)
        return known  # type: ignore[return-value]

    def _in_a_loop(self, statement: ast.AST) -> bool:
        """Whether a loop of ``statement``'s own function (or the module) holds it."""
        place = self.state.places.places.get(id(statement))
        while place is not None:
            owner = place[2]
            if owner is None or isinstance(owner, FUNCTIONS):
                return False
            if isinstance(owner, LOOPS):
                return True
            place = self.state.places.places.get(id(owner))
        return False

    def entry_condition(self, scope: FunctionInfo, context: Context) -> PathCondition:
        """Where ``scope``'s body starts: its call's condition, or the best of its call
        sites'; a function nothing in the file calls as :func:`uncalled` says."""
        key = (id(scope.node), context)
        known = self.state.entries.get(key)
        if known is not MISSING:
            return known  # type: ignore[return-value]
        cycles = self.state.cycles
        if context is not None:
            _call, statement, outer, caller = context
            found = self.condition_in(statement, caller, outer)
        else:
            conditions = []
            for _call, statement, caller in self.call_sites(scope):
                try:
                    conditions.append(self.condition_in(statement, caller, None))
                except Cycle:
                    continue
            found = (
                PathCondition.best(conditions)
                if conditions
                else uncalled(scope, self._never_named(scope))
            )
        found = launch_entry_condition(scope, True, found)
        self.state.entries.keep(key, found, cycles == self.state.cycles)
        return found

    def _never_named(self, scope: FunctionInfo) -> bool:
        """Whether ``scope`` is a top-level function the launched script never names
        (:func:`unused_functions`, found once per file)."""
        if self.state.unused is None:
            self.state.unused = unused_functions(
                self.state.analyzer.tree, self.state.analyzer.source
            )
        return self.state.unused.get(scope.node.name) is scope.node

    def call_sites(
        self, scope: FunctionInfo
    ) -> list[tuple[ast.Call, ast.stmt, FunctionInfo | None]]:
        """The calls that may run ``scope`` by name: ``name(...)`` / ``x.name(...)``; for a
        class's ``__init__``, ``forward`` and ``__call__``, where the class is built; a
        worker ``mp.spawn`` starts. Found once per function."""
        known = self.state.sites.get(id(scope.node))
        if known is not None:
            return known
        found: list[tuple[ast.Call, ast.stmt, FunctionInfo | None]] = []
        name = scope.node.name
        names = [name]
        if scope.class_name is not None and name in ("__init__", "forward", "__call__"):
            names = [scope.class_name.rsplit(".", 1)[-1]]
        if scope.class_name is None:  # ``mp.spawn(worker, args=(...))`` runs ``worker``
            for spawner in SPAWNERS:
                for call, statement in self.state.places.calls_named(spawner):
                    if call.args and dotted(call.args[0]) == name:
                        found.append((call, statement, self.state.places.scope_of(statement)))
        for called in names:
            for call, statement in self.state.places.calls_named(called):
                # a method is called on an object, a function by its name
                if isinstance(call.func, ast.Attribute) is (called == name and scope.is_method):
                    if not self.state.places.inside(statement, scope.node):
                        found.append((call, statement, self.state.places.scope_of(statement)))
        self.state.sites[id(scope.node)] = found
        return found
