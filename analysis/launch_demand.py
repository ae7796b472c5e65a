"""Launch facts on demand: the constants and conditions a question needs, and only those.

The forward launch (:mod:`.launch`, driven by :mod:`.launch_driver`) interprets every
statement on a plain launch's path and records a fact for each expression. The script
reader asks about few of them — some five statements' constants per development script,
against 24–370 statements interpreted — and measured over the development scripts a
forward pass, however driven, costs more than the reader's whole read (``docs/design/
analysis.md``, session 7). This module answers the same two questions backwards:

- :meth:`DemandLaunch.constant`: the :class:`~.constants.ConstantFact` of an expression —
  folded by the engine's own folding (:class:`~.launch.LaunchMixin`'s table, its calls,
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
kept only until the question is answered (:class:`_Memo`). Where statements stand and what
they bind is :mod:`.launch_places`.

Past 400 lines: the next seam is the bindings (``value_before`` down to ``_constructs``:
what a name holds where it is read), a mixin of its own as :mod:`.launch_bindings` is for
the forward launch.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Hashable
from functools import partial
from typing import TYPE_CHECKING, cast

from .binding import parameter_defaults
from .conditions import PathCondition
from .constants import UNDECIDED, ConstantFact, Items, is_items, join_constants
from .events import Trace
from .interpreter import FunctionRun
from .launch_arguments import ArgumentDefaults, declare
from .launch_bindings import _MUTATING, _with_item
from .launch_paths import (
    _disables_grad,
    branch_conditions,
    launch_entry_condition,
    periodic,
    uncalled,
)
from .launch_places import FUNCTIONS, LOOPS, WITHS, Places, header_names, own_statements
from .names import dotted
from .values import Value

if TYPE_CHECKING:
    from .analyzer import FileAnalyzer
    from .semantic import FunctionInfo

__all__ = ["DemandLaunch"]

#: the call a function's body is asked about for (None: every call site, joined), and the
#: context that call itself stands in
Context = tuple | None
_MAX_CONTEXT = 4  # calls deep; a deeper question joins every call site instead
_STEPS = 4000  # bindings and folds one question may visit before it answers undecided
_TRACE = Trace(function="<demand>")
_SPAWNERS = ("spawn", "start_processes")  # ``torch.multiprocessing``'s, by their leaf name
_TRY_STAR: tuple[type, ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()


_MISSING = object()


class _Memo:
    """Answers by key: final ones for good; ones that met a cycle's guess (:class:`_Cycle`)
    only until the question being answered is done — kept for good they would depend on
    which question came first, dropped at once a chain of cycles recomputes them
    exponentially (a Megatron modelling file: seconds)."""

    def __init__(self) -> None:
        self._final: dict = {}
        self._guesses: dict = {}

    def get(self, key: Hashable) -> object:
        found = self._final.get(key, _MISSING)
        return self._guesses.get(key, _MISSING) if found is _MISSING else found

    def keep(self, key: Hashable, value: object, final: bool) -> None:
        (self._final if final else self._guesses)[key] = value

    def forget_guesses(self) -> None:
        if self._guesses:
            self._guesses.clear()


class _Cycle(Exception):
    """A question that re-entered itself: its answer is a guess, not to be kept."""


def _depth(context: Context) -> int:
    depth = 0
    while context is not None:
        depth, context = depth + 1, context[2]
    return depth


class _DemandRun(FunctionRun):
    """A run that only folds, at one statement: its names come from the bindings that
    reach the statement (:meth:`DemandLaunch.value_before`)."""

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
        fact = self.demand.value_before(name, self.statement, self.scope, self.context)
        return None if fact is None else Value(constant=fact)

    def _fold_attribute(self, node: ast.Attribute) -> tuple[Hashable, PathCondition]:
        path = dotted(node)
        if path is not None and "." in path:
            fact = self.demand.value_before(path, self.statement, self.scope, self.context)
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
        spec = self.scope.node.args
        parameters = [p.arg for p in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs)]
        facts = [
            (p, self.demand.value_before(p, self.statement, self.scope, self.context))
            for p in parameters
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
        fact = self.demand.returned(info, (node, self.statement, self.context, self.scope))
        return (fact.value, fact.condition) if fact is not None else found


class DemandLaunch:
    """Launch facts of one file, computed when asked (see the module docstring)."""

    def __init__(self, analyzer: FileAnalyzer) -> None:
        self.analyzer = analyzer
        self.tree = analyzer.tree
        self.places = Places(analyzer)
        self._sites: dict[int, list[tuple[ast.Call, ast.stmt, FunctionInfo | None]]] = {}
        self._raised = _Memo()  # (statement id, context) -> :meth:`_raises`
        self._branch_memo = _Memo()  # (``if`` id, context) -> :meth:`_branches`
        self._runs: dict[tuple, _DemandRun] = {}
        self._values = _Memo()  # bindings' and returns' facts (:meth:`_guarded`)
        self._conditions = _Memo()  # (statement id, context) -> :meth:`condition_in`
        self._entries = _Memo()  # (function node id, context) -> :meth:`entry_condition`
        self._memos = (
            self._values,
            self._conditions,
            self._entries,
            self._branch_memo,
            self._raised,
        )
        self._active: set[tuple] = set()
        self._cycles = 0  # how many guesses cycles forced: what met one is not memoised
        self._steps = 0

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
            lambda: self.condition_in(statement, self.places.scope_of(statement), None)
        )
        return found if found is not None else PathCondition.UNSURE

    def _ask(self, question: Callable):
        self._steps = 0
        for memo in self._memos:
            memo.forget_guesses()
        try:
            return question()
        except (_Cycle, RecursionError):
            return None

    # --- folding ------------------------------------------------------------------------
    def fold(
        self, node: ast.expr, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact:
        return self.run_at(statement, scope, context).fold(node)

    def run_at(
        self, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> _DemandRun:
        key = (id(statement), context)
        run = self._runs.get(key)
        if run is None:
            condition = self.condition_in(statement, scope, context)
            run = self._runs[key] = _DemandRun(self, statement, scope, context, condition)
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
            run = _DemandRun(self, statement, scope, context, PathCondition.DEFAULT)
            self._runs[key] = run
        return run.fold(test)

    def returned(self, info: FunctionInfo, context: Context) -> ConstantFact | None:
        """The join of ``info``'s ``return`` facts when called as ``context`` says."""
        if _depth(context) > _MAX_CONTEXT:
            return None
        found: ConstantFact | None = None
        for statement in own_statements(info.node.body):
            if isinstance(statement, ast.Return) and statement.value is not None:
                returned = statement.value
                found = join_constants(
                    found,
                    self._guarded(
                        ("return", id(statement), context),
                        partial(self.fold, returned, statement, info, context),
                    ),
                )
        return found

    # --- names --------------------------------------------------------------------------
    def value_before(
        self, name: str, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact | None:
        """The fact ``name`` holds as ``statement`` starts (None: nothing in the file binds
        it where ``statement`` can see: a builtin, or an unresolved import)."""
        return self._guarded(
            ("name", name, id(statement), context),
            lambda: self._before_level(
                name, self.places.chain(statement, scope), 0, scope, context
            ),
        )

    def _guarded(
        self, key: tuple, compute: Callable[[], ConstantFact | None]
    ) -> ConstantFact | None:
        known = self._values.get(key)
        if known is not _MISSING:
            return known  # type: ignore[return-value]
        if key in self._active or self._steps > _STEPS:
            raise self._cycle()
        self._steps += 1
        self._active.add(key)
        cycles = self._cycles
        try:
            found = compute()
        finally:
            self._active.discard(key)
        self._values.keep(key, found, cycles == self._cycles)
        return found

    def _cycle(self) -> _Cycle:
        self._cycles += 1
        return _Cycle()

    def _before_level(
        self,
        name: str,
        chain: list[tuple[list[ast.stmt], int, ast.AST | None]],
        level: int,
        scope: FunctionInfo | None,
        context: Context,
    ) -> ConstantFact | None:
        if level == len(chain):
            return self._at_entry(name, scope, context)
        block, index, owner = chain[level]

        def earlier() -> ConstantFact | None:
            if owner is not None and name in header_names(owner):
                return self._undecided_at(owner, scope, context)  # the loop's or ``with``'s
            if (
                isinstance(owner, LOOPS)
                and block is owner.body
                and self.places.binding_indices(name, block)
            ):
                # a value the loop changes (``step += 1``): no single value is the job's
                return self._undecided_at(owner, scope, context)
            return self._before_level(name, chain, level + 1, scope, context)

        return self._scan(name, block, index, _once(earlier), scope, context)

    def _scan(
        self,
        name: str,
        block: list[ast.stmt],
        end: int,
        earlier: Callable[[], ConstantFact | None],
        scope: FunctionInfo | None,
        context: Context,
    ) -> ConstantFact | None:
        """What ``name`` holds after ``block[:end]`` ran (``earlier``: before it, the same
        for every question about this block). The value after the last statement that binds
        it is kept by that statement: every later statement of the block reads it."""
        indices = self.places.binding_indices(name, block)
        position = bisect.bisect_left(indices, end) - 1
        if position < 0:
            return earlier()
        index = indices[position]
        statement = block[index]
        key = ("after", name, id(statement), context)
        known = self._values.get(key)
        if known is not _MISSING:
            return known  # type: ignore[return-value]
        cycles = self._cycles
        found = self._after(
            name,
            statement,
            _once(partial(self._scan, name, block, index, earlier, scope, context)),
            scope,
            context,
        )
        self._values.keep(key, found, cycles == self._cycles)
        return found

    def _after(
        self,
        name: str,
        statement: ast.stmt,
        before: Callable[[], ConstantFact | None],
        scope: FunctionInfo | None,
        context: Context,
    ) -> ConstantFact | None:
        """What ``name`` holds after ``statement``, which binds or changes it."""
        if isinstance(statement, ast.If):
            return self._after_if(name, statement, before, scope, context)
        if isinstance(statement, LOOPS):
            entry = before()
            inner = before
            if name in header_names(statement):
                undecided = self._undecided_at(statement, scope, context)
                inner = lambda: undecided  # noqa: E731
            body = self._scan(name, statement.body, len(statement.body), inner, scope, context)
            after = join_constants(entry, body)
            return self._scan(
                name, statement.orelse, len(statement.orelse), lambda: after, scope, context
            )
        if isinstance(statement, WITHS):
            inner = before
            if name in header_names(statement):
                undecided = self._undecided_at(statement, scope, context)
                inner = lambda: undecided  # noqa: E731
            return self._scan(name, statement.body, len(statement.body), inner, scope, context)
        if isinstance(statement, (ast.Try, *_TRY_STAR)):
            statement = cast(ast.Try, statement)  # ``try``/``except*`` share their fields
            body = self._scan(name, statement.body, len(statement.body), before, scope, context)
            merged = self._scan(
                name, statement.orelse, len(statement.orelse), lambda: body, scope, context
            )
            for handler in statement.handlers:
                merged = join_constants(
                    merged,
                    self._scan(name, handler.body, len(handler.body), before, scope, context),
                )
            return self._scan(
                name, statement.finalbody, len(statement.finalbody), lambda: merged, scope, context
            )
        if type(statement).__name__ == "Match":
            merged = before()
            for case in statement.cases:  # type: ignore[attr-defined]
                merged = join_constants(
                    merged, self._scan(name, case.body, len(case.body), before, scope, context)
                )
            return merged
        included = self.places.included(statement)
        if included is not None:  # ``exec(open(PATH).read())``: the configurator's lines
            return self._scan(name, included, len(included), before, scope, context)
        return self._bound_by(name, statement, before, scope, context)

    def _after_if(
        self,
        name: str,
        statement: ast.If,
        before: Callable[[], ConstantFact | None],
        scope: FunctionInfo | None,
        context: Context,
    ) -> ConstantFact | None:
        """The forward launch's ``if``: the branch a plain launch takes, alone; otherwise
        what flows through a branch holds under its condition, joined."""
        entry, body_condition, else_condition = self._branches(statement, scope, context)
        body = self._scan(name, statement.body, len(statement.body), before, scope, context)
        orelse = self._scan(name, statement.orelse, len(statement.orelse), before, scope, context)
        skipped = (PathCondition.OFF, PathCondition.MULTI_GPU)
        if body_condition is entry and else_condition in skipped and else_condition is not entry:
            return body
        if else_condition is entry and body_condition in skipped and body_condition is not entry:
            return orelse
        if body is not orelse:  # what differs holds only where its branch runs
            if body is not None and body_condition is not PathCondition.DEFAULT:
                body = body.under(body_condition)
            if orelse is not None and else_condition is not PathCondition.DEFAULT:
                orelse = orelse.under(else_condition)
        return join_constants(body, orelse)

    def _bound_by(
        self,
        name: str,
        statement: ast.stmt,
        before: Callable[[], ConstantFact | None],
        scope: FunctionInfo | None,
        context: Context,
    ) -> ConstantFact | None:
        """What a simple statement binds ``name`` to, or changes it into."""
        run = self.run_at(statement, scope, context)
        here = run.condition
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in reversed(targets):  # ``a = b = 1``: both; the last store wins
                path = dotted(target)
                if path == name:
                    return run.fold(statement.value).under(here)
                if isinstance(target, (ast.Tuple, ast.List)):
                    written = statement.value
                    if isinstance(written, (ast.Tuple, ast.List)) and len(written.elts) == len(
                        target.elts
                    ):  # ``a, b = x, y``: each from its own expression
                        for element, part in zip(target.elts, written.elts):
                            if dotted(element) == name and not isinstance(part, ast.Starred):
                                return run.fold(part).under(here)
                    return self._unpacked(name, target, run.fold(written), statement, here)
                if isinstance(target, ast.Subscript) and dotted(target.value) == name:
                    return self._item_set(before(), target, run.fold(statement.value), run)
        if isinstance(statement, ast.AugAssign) and dotted(statement.target) == name:
            return run.augmented_constant(statement, Value(constant=before()), Value()).constant
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            return self._changed_by_call(before(), statement.value, run)
        return self._undecided_at(statement, scope, context)

    def _unpacked(
        self,
        name: str,
        target: ast.Tuple | ast.List,
        value: ConstantFact,
        statement: ast.stmt,
        here: PathCondition,
    ) -> ConstantFact:
        items = value.value
        for position, element in enumerate(target.elts):
            if dotted(element) == name:
                if (
                    isinstance(items, tuple)
                    and not is_items(items)
                    and len(items) == len(target.elts)
                ):
                    return ConstantFact(items[position], value.evidence, value.condition).under(
                        here
                    )
        return ConstantFact(UNDECIDED, value.evidence, here)

    def _item_set(
        self, fact: ConstantFact | None, target: ast.Subscript, item: ConstantFact, run: _DemandRun
    ) -> ConstantFact | None:
        if fact is None or not fact.decided:
            return fact
        key, key_condition = run._fold(target.slice)
        changed: Hashable = UNDECIDED
        if key is not UNDECIDED and item.decided:
            changed = _with_item(fact.value, key, item.value)
        condition = run.condition.worst(fact.condition).worst(key_condition).worst(item.condition)
        evidence = run._evidence(target) if changed is not UNDECIDED else fact.evidence
        return ConstantFact(changed, evidence, condition)

    def _changed_by_call(
        self, fact: ConstantFact | None, call: ast.Call, run: _DemandRun
    ) -> ConstantFact | None:
        """``parser.add_argument(...)``, ``config.update(...)``: the forward launch's rules."""
        method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        if fact is None or not fact.decided:
            return fact
        if method in ("add_argument", "set_defaults") and isinstance(fact.value, ArgumentDefaults):
            grown = declare(fact.value, call, lambda e: run._fold(e)[0], UNDECIDED)
            return ConstantFact(grown, fact.evidence, fact.condition)
        if method in _MUTATING:
            changed, condition = run._changed(fact, method, call)
            evidence = run._evidence(call) if changed is not UNDECIDED else fact.evidence
            return ConstantFact(changed, evidence, condition)
        return fact

    def _undecided_at(
        self, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact:
        return ConstantFact(
            UNDECIDED,
            self.run_at(statement, scope, context)._evidence(statement),
            self.condition_in(statement, scope, context),
        )

    def _at_entry(
        self, name: str, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact | None:
        """A name its block does not bind: a parameter, the closure's, the module's."""
        if scope is None:
            return None
        function = scope.node
        parameters = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
        for variadic in (function.args.vararg, function.args.kwarg):
            if variadic is not None and variadic.arg == name:
                return self._undecided_at(function, scope, context)
        if any(p.arg == name for p in parameters):
            return self._parameter(name, scope, context)
        outer = self.places.scope_of(function)
        if outer is not None:  # the closure: what the enclosing function held at the ``def``
            return self.value_before(name, function, outer, None)
        return self._module_value(name, scope, context)

    def _module_value(
        self, name: str, scope: FunctionInfo, context: Context
    ) -> ConstantFact | None:
        """A global as a function sees it: the module's just before the call that started
        the outermost of ``context``, or — a function the module does not call itself (an
        entry point, a callback) — after the whole module ran. A global another function
        rebinds (``global FLASH; FLASH = args.flash`` in ``main``) is that function's value
        where it made the call that leads here; asked of no call, the join over the
        function's call sites."""
        if self.places.rebinders(name):
            found = self._rebound_global(name, scope, context)
            if found is not None:
                return found
        outermost = None
        while context is not None:
            outermost, context = context, context[2]
        if outermost is not None and outermost[3] is None:
            return self.value_before(name, outermost[1], None, None)
        body = self.tree.body
        return self._guarded(
            ("module", name), lambda: self._scan(name, body, len(body), lambda: None, None, None)
        )

    def _rebound_global(
        self, name: str, scope: FunctionInfo, context: Context
    ) -> ConstantFact | None:
        rebinders = self.places.rebinders(name)
        inner = context
        while inner is not None:
            _call, statement, outer, caller = inner
            if caller is None:
                return None  # called from the module's own code: the module's value
            if id(caller.node) in rebinders:
                return self.value_before(name, statement, caller, outer)
            inner = outer
        if context is not None:
            return None
        found: ConstantFact | None = None
        for call, statement, caller in self.call_sites(scope):
            site = (call, statement, None, caller)
            if caller is None or _depth(site) > _MAX_CONTEXT:
                continue
            try:
                found = join_constants(
                    found,
                    self._module_value(name, caller, site)
                    if id(caller.node) not in rebinders
                    else self.value_before(name, statement, caller, None),
                )
            except _Cycle:
                continue
        return found

    def _parameter(self, name: str, scope: FunctionInfo, context: Context) -> ConstantFact | None:
        if context is not None:
            return self._argument(name, scope, context)
        found: ConstantFact | None = None
        sites = list(self.call_sites(scope))
        for call, statement, caller in sites:
            inner = (call, statement, None, caller)
            if _depth(inner) > _MAX_CONTEXT:
                continue
            try:
                found = join_constants(found, self._argument(name, scope, inner))
            except _Cycle:
                continue
        if not sites:
            return self._argument(name, scope, None)
        return found

    def _argument(self, name: str, scope: FunctionInfo, context: Context) -> ConstantFact | None:
        """What the call ``context`` names passes as ``name`` (its default when nothing)."""
        function = scope.node
        entry = self.entry_condition(scope, context)
        if context is not None and _spawned(context[0], function.name):
            call, statement, outer, caller = context
            return self._spawned_argument(name, function, context, entry)
        if context is not None:
            call, statement, outer, caller = context
            positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
            if scope.is_method and (
                isinstance(call.func, ast.Attribute) or self._constructs(call, scope)
            ):
                positional = positional[1:]
            argument = next((k.value for k in call.keywords if k.arg == name), None)
            if argument is None and name in positional:
                index = positional.index(name)
                if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                    return ConstantFact(
                        UNDECIDED, self.run_at(statement, caller, outer)._evidence(call), entry
                    )
                if index < len(call.args):
                    argument = call.args[index]
            if argument is not None:
                return self.fold(argument, statement, caller, outer).under(entry)
            for spread in (k.value for k in call.keywords if k.arg is None):
                # ``f(**config)``: the dict's item, when the launch knows the dict
                items = self.fold(spread, statement, caller, outer)
                if not is_items(items.value):
                    return ConstantFact(UNDECIDED, items.evidence, entry)
                for key, item in items.value:  # type: ignore[misc]
                    if key == name:
                        return ConstantFact(item, items.evidence, items.condition).under(entry)
        defaults = {p.arg: d for p, d in parameter_defaults(function.args)}
        if name in defaults:
            return self.fold(defaults[name], function, self.places.scope_of(function), None).under(
                entry
            )
        return ConstantFact(
            UNDECIDED, self.run_at(function, scope, context)._evidence(function), entry
        )

    def _spawned_argument(
        self,
        name: str,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        context: tuple,
        entry: PathCondition,
    ) -> ConstantFact:
        """A worker ``mp.spawn(worker, args=(a, b))`` starts: ``worker(0, a, b)`` on a plain
        launch's one process (rank 0), as the forward launch runs it."""
        call, statement, outer, caller = context
        run = self.run_at(statement, caller, outer)
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        if name in positional and positional.index(name) == 0:
            return ConstantFact(0, run._evidence(call), entry)
        passed = next((k.value for k in call.keywords if k.arg == "args"), None)
        index = positional.index(name) - 1 if name in positional else -1
        if isinstance(passed, ast.Tuple) and 0 <= index < len(passed.elts):
            return self.fold(passed.elts[index], statement, caller, outer).under(entry)
        return ConstantFact(UNDECIDED, run._evidence(call), entry)

    def _constructs(self, call: ast.Call, scope: FunctionInfo) -> bool:
        return scope.class_name is not None and dotted(call.func) == scope.class_name

    # --- conditions ---------------------------------------------------------------------
    def condition_in(
        self, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> PathCondition:
        key = (id(statement), context)
        known = self._conditions.get(key)
        if known is not _MISSING:
            return known  # type: ignore[return-value]
        if ("condition",) + key in self._active or self._steps > _STEPS:
            raise self._cycle()
        self._steps += 1
        self._active.add(("condition",) + key)
        cycles = self._cycles
        try:
            found = self._condition_of(statement, scope, context)
        finally:
            self._active.discard(("condition",) + key)
        self._conditions.keep(key, found, cycles == self._cycles)
        return found

    def _condition_of(
        self, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> PathCondition:
        """Where ``statement``'s block starts (its scope's entry, or its owner's condition
        and gate), and ``unsure`` past a statement of the block that raises by default."""
        top = scope.node if scope is not None else None
        if statement is top and scope is not None:
            return self.entry_condition(scope, context)
        place = self.places.places.get(id(statement))
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
            self._raises(block[i], scope, context)
            for i in self.places.raising_in(block)
            if i < index
        ):
            return PathCondition.UNSURE  # after a raise a plain launch reaches
        return start

    def _block_start(
        self, owner: ast.AST, block: list[ast.stmt], scope: FunctionInfo | None, context: Context
    ) -> PathCondition:
        """The condition a block of ``owner`` starts under: the owner's, and its gate."""
        if isinstance(owner, ast.If):
            _, body, orelse = self._branches(owner, scope, context)
            return body if block is owner.body else orelse
        condition = self.condition_in(owner, scope, context)
        if isinstance(owner, ast.While) and block is owner.body:
            test = self.test_fact(owner.test, owner, scope, context)
            return condition.worst(branch_conditions(owner.test, test)[0])
        if isinstance(owner, WITHS) and any(_disables_grad(i.context_expr) for i in owner.items):
            return condition.worst(PathCondition.VALIDATION)
        return condition

    def _raises(self, statement: ast.stmt, scope: FunctionInfo | None, context: Context) -> bool:
        """Whether a plain launch raises in ``statement`` (the rest of its block then runs
        only with flags the defaults do not describe)."""
        key = id(statement)
        if not self.places.may_raise(statement):
            return False
        known = self._raised.get((key, context))
        if known is not _MISSING:
            return known  # type: ignore[return-value]
        cycles = self._cycles
        if isinstance(statement, ast.Raise):
            found = self.condition_in(statement, scope, context) is PathCondition.DEFAULT
        elif isinstance(statement, (ast.If, *WITHS, *LOOPS)):
            blocks = [statement.body, getattr(statement, "orelse", [])]
            found = any(self._raises(s, scope, context) for block in blocks for s in block)
        else:
            found = False  # a ``try`` with handlers may catch it
        self._raised.keep((key, context), found, cycles == self._cycles)
        return found

    def _branches(
        self, statement: ast.If, scope: FunctionInfo | None, context: Context
    ) -> tuple[PathCondition, PathCondition, PathCondition]:
        key = (id(statement), context)
        known = self._branch_memo.get(key)
        if known is _MISSING:
            cycles = self._cycles
            entry = self.condition_in(statement, scope, context)
            test = self.test_fact(statement.test, statement, scope, context)
            body, orelse = branch_conditions(statement.test, test)
            if not test.decided and periodic(statement.test) and self._in_a_loop(statement):
                body = orelse = PathCondition.DEFAULT  # opens every N iterations: both run
            known = (entry, entry.worst(body), entry.worst(orelse))
            self._branch_memo.keep(key, known, cycles == self._cycles)
        return known  # type: ignore[return-value]

    def _in_a_loop(self, statement: ast.AST) -> bool:
        """Whether a loop of ``statement``'s own function (or the module) holds it."""
        place = self.places.places.get(id(statement))
        while place is not None:
            owner = place[2]
            if owner is None or isinstance(owner, FUNCTIONS):
                return False
            if isinstance(owner, LOOPS):
                return True
            place = self.places.places.get(id(owner))
        return False

    def entry_condition(self, scope: FunctionInfo, context: Context) -> PathCondition:
        """Where ``scope``'s body starts: its call's condition, or the best of its call
        sites'; a function nothing in the file calls as :func:`uncalled` says."""
        key = (id(scope.node), context)
        known = self._entries.get(key)
        if known is not _MISSING:
            return known  # type: ignore[return-value]
        cycles = self._cycles
        if context is not None:
            _call, statement, outer, caller = context
            found = self.condition_in(statement, caller, outer)
        else:
            conditions = []
            for _call, statement, caller in self.call_sites(scope):
                try:
                    conditions.append(self.condition_in(statement, caller, None))
                except _Cycle:
                    continue
            found = PathCondition.best(conditions) if conditions else uncalled(scope)
        found = launch_entry_condition(scope, True, found)
        self._entries.keep(key, found, cycles == self._cycles)
        return found

    def call_sites(
        self, scope: FunctionInfo
    ) -> list[tuple[ast.Call, ast.stmt, FunctionInfo | None]]:
        """The calls that may run ``scope`` by name: ``name(...)`` / ``x.name(...)``; for a
        class's ``__init__``, ``forward`` and ``__call__``, where the class is built; a
        worker ``mp.spawn`` starts. Found once per function."""
        known = self._sites.get(id(scope.node))
        if known is not None:
            return known
        found: list[tuple[ast.Call, ast.stmt, FunctionInfo | None]] = []
        name = scope.node.name
        names = [name]
        if scope.class_name is not None and name in ("__init__", "forward", "__call__"):
            names = [scope.class_name.rsplit(".", 1)[-1]]
        if scope.class_name is None:  # ``mp.spawn(worker, args=(...))`` runs ``worker``
            for spawner in _SPAWNERS:
                for call, statement in self.places.calls_named(spawner):
                    if call.args and dotted(call.args[0]) == name:
                        found.append((call, statement, self.places.scope_of(statement)))
        for called in names:
            for call, statement in self.places.calls_named(called):
                # a method is called on an object, a function by its name
                if isinstance(call.func, ast.Attribute) is (called == name and scope.is_method):
                    if not self.places.inside(statement, scope.node):
                        found.append((call, statement, self.places.scope_of(statement)))
        self._sites[id(scope.node)] = found
        return found


def _spawned(call: ast.Call, worker: str) -> bool:
    """``call`` spawns processes running ``worker`` (``mp.spawn(worker, ...)``)."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return called in _SPAWNERS and bool(call.args) and dotted(call.args[0]) == worker


def _once(compute: Callable[[], ConstantFact | None]) -> Callable[[], ConstantFact | None]:
    """``compute``, run at most once (both branches of an ``if`` fall back to what came
    before it: without this, a chain of ``if`` statements is exponential)."""
    done: list[ConstantFact | None] = []

    def once() -> ConstantFact | None:
        if not done:
            done.append(compute())
        return done[0]

    return once
