"""Launch facts on demand: the constants and conditions a question needs, and only those.

The forward launch (:mod:`.launch`, driven by :mod:`.launch_driver`) interprets every
statement on a plain launch's path and records a fact for each expression. The script
reader asks about few of them — some five statements' constants per development script,
against 24–370 statements interpreted — and measured over the development scripts a
forward pass, however driven, costs more than the reader's whole read (``docs/design/
analysis.md``, session 7). This module answers the same two questions backwards:

- :meth:`DemandLaunch.constant`: the :class:`~.constants.ConstantFact` of an expression —
  folded by the engine's own folding (:class:`~torchward.analysis.facts.launch.LaunchFolding`'s table, its calls,
  parsers and dataclasses) in a run whose names are looked up on demand: the bindings
  that reach the expression through the blocks around it, each folded where it stands,
  under its own condition, and joined as the forward launch joins them (the branch a
  plain launch takes alone; otherwise what flows through a branch holds under its
  condition; one pass of a loop joined with its entry);
- :meth:`DemandLaunch.condition`: the :class:`~.conditions.PathCondition` of a
  statement — where its function's body starts (the best of its call sites; a function
  nothing calls as :func:`~.launch_paths.uncalled` says), worsened by the gates around it
  (:func:`~.launch_paths.branch_conditions` of each test's fact), a grad-disabling
  ``with``, and a ``raise`` the plain launch reaches before it.

A parameter holds what its call sites pass (each call a context of its own, joined), or
its default; a name a function does not bind is its closure's, then the module's as the
call sees it. A project function's result is the join of its ``return`` facts in the
call's context. In-place changes (``parser.add_argument``, ``config.update``,
``d[k] = v``) apply between a binding and the use, with the forward launch's own rules
(:mod:`.launch_bindings`, :mod:`.launch_arguments`).

Every answer is memoised by node and context; a question re-entering itself (a
recursive helper, ``x = f(x)`` cycles) gets an undecided fact, and what met that guess is
kept only until the question is answered (:class:`~.launch_demand_memo.Memo`). Where statements stand and what
they bind is :mod:`.launch_places`.

The parts, one concept each, composed (each collaborator receives the file's shared
state, :mod:`.launch_demand_state`, explicitly): what a name holds where it is read
(:mod:`.launch_demand_names`), at a function's entry (:mod:`.launch_demand_entry`), a
statement's condition (:mod:`.launch_demand_conditions`), how answers are kept
(:mod:`.launch_demand_memo`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Hashable
from functools import partial
from typing import TYPE_CHECKING

from ..facts.conditions import PathCondition
from ..facts.constants import UNDECIDED, ConstantFact, Items, join_constants
from ..facts.events import Trace
from ..facts.interpreter import FunctionRun
from ..facts.values import Value
from ..syntax.names import dotted
from .launch_demand_conditions import Conditions
from .launch_demand_entry import Entry
from .launch_demand_memo import MAX_CONTEXT, STEPS, CallSite, Context, Cycle, depth
from .launch_demand_names import Names
from .launch_demand_state import DemandState
from .launch_places import own_statements

if TYPE_CHECKING:
    from ..facts.analyzer import FileAnalyzer
    from ..facts.semantic import FunctionInfo

__all__ = ["DemandLaunch"]

_TRACE = Trace(function="<demand>")


class DemandRun(FunctionRun):
    """A run that only folds, at one statement: its names come from the bindings that
    reach the statement (:meth:`~.launch_demand_names.Names.value_before`)."""

    def __init__(
        self,
        demand: DemandLaunch,
        statement: ast.AST,
        scope: FunctionInfo | None,
        context: Context,
        condition: PathCondition,
    ) -> None:
        super().__init__(
            demand.analyzer, _TRACE, [], env={}, outer={}, grad_enabled=True, condition=condition
        )
        self.demand, self.statement, self.scope, self.context = demand, statement, scope, context
        self._locals_found: Items | None = None

    def lookup(self, name: str) -> Value | None:
        fact = self.demand.names.value_before(name, self.statement, self.scope, self.context)
        return None if fact is None else Value(constant=fact)

    def _fold_attribute(self, node: ast.Attribute) -> tuple[Hashable, PathCondition]:
        path = dotted(node)
        if path is not None and "." in path:
            fact = self.demand.names.value_before(path, self.statement, self.scope, self.context)
            if fact is not None:  # ``args.batch_size = 8`` rebinds the attribute
                return fact.value, fact.condition
        return super()._fold_attribute(node)

    def _locals(self) -> Items:
        """``locals()``: the function's parameters as they stand here (what ``dict(locals())``
        at an entry point's top packages for its workers)."""
        if self.scope is None:
            return Items(())
        if self._locals_found is not None:
            return self._locals_found
        facts = [
            (p, self.demand.names.value_before(p, self.statement, self.scope, self.context))
            for p in self.demand.places.parameters(self.scope.node).names
        ]
        self._locals_found = Items((p, f.value if f is not None else UNDECIDED) for p, f in facts)
        return self._locals_found

    def _fold_call(self, node: ast.Call, name: str) -> tuple[Hashable, PathCondition]:
        found = super()._fold_call(node, name)
        if found[0] is not UNDECIDED or not isinstance(node.func, ast.Name):
            return found
        info = self.analyzer.index.top_functions.get(node.func.id)
        if info is None:
            return found
        site = CallSite(node, self.statement, self.context, self.scope)
        fact = self.demand.returned(info, site)
        return (fact.value, fact.condition) if fact is not None else found


class DemandLaunch:
    """Launch facts of one file, computed when asked (see the module docstring): the two
    questions, folding, and the collaborators that answer the rest — each given the
    file's :class:`~.launch_demand_state.DemandState` explicitly."""

    budget = STEPS  # bindings, folds and conditions one question may visit

    def __init__(self, analyzer: FileAnalyzer) -> None:
        self.analyzer = analyzer
        self.state = DemandState(analyzer, self.budget)
        self.places = self.state.places
        self.names = Names(self.state, self)
        self.entry = Entry(self.state, self)
        self.conditions = Conditions(self.state, self)
        self._runs: dict[tuple, DemandRun] = {}

    def scope_of(self, statement: ast.AST) -> FunctionInfo | None:
        """The function ``statement`` is in (None: the module's code)."""
        return self.places.scope_of(statement)

    # --- the two questions --------------------------------------------------------------
    def constant(self, node: ast.AST) -> ConstantFact | None:
        """The fact of expression ``node`` on a plain launch, over every context its
        function runs in (None: not an expression of this tree)."""
        if not isinstance(node, ast.expr):
            return None
        statement = self.places.statement_of(node)
        if statement is None:
            return None
        return self._ask(lambda: self.fold(node, statement, self.places.scope_of(statement), None))

    def condition(self, statement: ast.AST) -> PathCondition | None:
        """The condition statement ``statement`` runs under on a plain launch."""
        if not isinstance(statement, ast.stmt):
            return None
        found = self._ask(
            lambda: self.conditions.condition_in(statement, self.places.scope_of(statement), None)
        )
        return found if found is not None else PathCondition.UNSURE

    def _ask(self, question: Callable):
        self.state.new_question()
        try:
            return question()
        except (Cycle, RecursionError):
            return None

    # --- folding ------------------------------------------------------------------------
    def fold(
        self, node: ast.expr, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact:
        return self.run_at(statement, scope, context).fold(node)

    def run_at(self, statement: ast.AST, scope: FunctionInfo | None, context: Context) -> DemandRun:
        key = (id(statement), context)
        run = self._runs.get(key)
        if run is None:
            condition = self.conditions.condition_in(statement, scope, context)
            run = self._runs[key] = DemandRun(self, statement, scope, context, condition)
        return run

    def test_fact(
        self, test: ast.expr, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact:
        """The fact of an ``if`` / ``while`` test as its operands hold it, apart from
        whether the statement itself runs: a test the defaults decide takes its branch even
        where the ``if`` stands under an undecided gate (the branch it skips is off, not
        unsure). Folded in a run of its own, at the default condition."""
        key = (id(statement), context, "test")
        run = self._runs.get(key)
        if run is None:
            run = DemandRun(self, statement, scope, context, PathCondition.DEFAULT)
            self._runs[key] = run
        folded = run.fold(test)
        return run.test_fact(test, folded) or folded

    def returned(self, info: FunctionInfo, context: Context) -> ConstantFact | None:
        """The join of ``info``'s ``return`` facts when called as ``context`` says."""
        if depth(context) > MAX_CONTEXT:
            return None
        found: ConstantFact | None = None
        for statement in own_statements(info.node.body):
            if isinstance(statement, ast.Return) and statement.value is not None:
                returned = statement.value
                found = join_constants(
                    found,
                    self.state.guarded(
                        ("return", id(statement), context),
                        partial(self.fold, returned, statement, info, context),
                    ),
                )
        return found
