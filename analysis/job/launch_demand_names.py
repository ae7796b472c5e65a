"""What a name holds where it is read, for the launch on demand (:mod:`.launch_demand`).

The bindings that reach a read through the blocks around it, each folded where it stands
under its own condition and joined as the forward launch joins them: the branch a plain
launch takes alone; otherwise what flows through a branch holds under that branch's
condition; one pass of a loop joined with its entry, and a name the loop changes
undecided inside it. In-place changes (``parser.add_argument``, ``config.update``,
``d[k] = v``) apply between a binding and the read with the forward launch's own rules
(:mod:`.launch_bindings`, :mod:`.launch_arguments`). A name its function does not bind
is :mod:`.launch_demand_entry`'s.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Hashable
from functools import partial
from typing import TYPE_CHECKING, cast

from ..facts.conditions import PathCondition
from ..facts.constants import UNDECIDED, ConstantFact, around_the_loop, is_items, join_constants
from ..facts.launch_arguments import ArgumentDefaults, declare
from ..facts.launch_bindings import _MUTATING, _with_item
from ..facts.values import Value
from ..syntax.names import dotted
from .launch_demand_memo import MISSING, Context, once
from .launch_places import LOOPS, WITHS, header_names

if TYPE_CHECKING:
    from ..facts.semantic import FunctionInfo
    from .launch_demand import DemandLaunch, DemandRun
    from .launch_demand_state import DemandState

__all__ = ["Names"]

_TRY_STAR: tuple[type, ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()


class Names:
    """Bindings in blocks for :class:`~.launch_demand.DemandLaunch`."""

    def __init__(self, state: DemandState, launch: DemandLaunch) -> None:
        self.state = state
        self.launch = launch  # the questions, and the other collaborators it holds

    def value_before(
        self,
        name: str,
        statement: ast.AST,
        scope: FunctionInfo | None,
        context: Context,
    ) -> ConstantFact | None:
        """The fact ``name`` holds as ``statement`` starts (None: nothing in the file binds
        it where ``statement`` can see: a builtin, or an unresolved import)."""
        return self.state.guarded(
            ("name", name, id(statement), context),
            lambda: self._before_level(
                name, self.state.places.chain(statement, scope), 0, scope, context
            ),
        )

    def _before_level(
        self,
        name: str,
        chain: list[tuple[list[ast.stmt], int, ast.AST | None]],
        level: int,
        scope: FunctionInfo | None,
        context: Context,
    ) -> ConstantFact | None:
        if level == len(chain):
            return self.launch.entry.at_entry(name, scope, context)
        block, index, owner = chain[level]

        def earlier() -> ConstantFact | None:
            if owner is not None and name in header_names(owner):
                return self.undecided_at(owner, scope, context)  # the loop's or ``with``'s
            if (
                isinstance(owner, LOOPS)
                and block is owner.body
                and self.state.places.binding_indices(name, block)
            ):
                # a value the loop changes (``step += 1``): no single value is the job's
                return self.undecided_at(owner, scope, context)
            return self._before_level(name, chain, level + 1, scope, context)

        return self.scan(name, block, index, once(earlier), scope, context)

    def scan(
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
        indices = self.state.places.binding_indices(name, block)
        position = bisect.bisect_left(indices, end) - 1
        if position < 0:
            return earlier()
        index = indices[position]
        statement = block[index]
        key = ("after", name, id(statement), context)
        known = self.state.values.get(key)
        if known is not MISSING:
            return known  # type: ignore[return-value]
        cycles = self.state.cycles
        found = self._after(
            name,
            statement,
            once(partial(self.scan, name, block, index, earlier, scope, context)),
            scope,
            context,
        )
        self.state.values.keep(key, found, cycles == self.state.cycles)
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
                undecided = self.undecided_at(statement, scope, context)
                inner = lambda: undecided  # noqa: E731
            body = self.scan(name, statement.body, len(statement.body), inner, scope, context)
            if entry is not None and body is not None:
                entry = around_the_loop(entry, body)
            after = join_constants(entry, body)
            return self.scan(
                name, statement.orelse, len(statement.orelse), lambda: after, scope, context
            )
        if isinstance(statement, WITHS):
            inner = before
            if name in header_names(statement):
                undecided = self.undecided_at(statement, scope, context)
                inner = lambda: undecided  # noqa: E731
            return self.scan(name, statement.body, len(statement.body), inner, scope, context)
        if isinstance(statement, (ast.Try, *_TRY_STAR)):
            statement = cast(ast.Try, statement)  # ``try``/``except*`` share their fields
            body = self.scan(name, statement.body, len(statement.body), before, scope, context)
            merged = self.scan(
                name, statement.orelse, len(statement.orelse), lambda: body, scope, context
            )
            for handler in statement.handlers:
                merged = join_constants(
                    merged,
                    self.scan(name, handler.body, len(handler.body), before, scope, context),
                )
            return self.scan(
                name, statement.finalbody, len(statement.finalbody), lambda: merged, scope, context
            )
        if type(statement).__name__ == "Match":
            merged = before()
            for case in statement.cases:  # type: ignore[attr-defined]
                merged = join_constants(
                    merged, self.scan(name, case.body, len(case.body), before, scope, context)
                )
            return merged
        included = self.state.places.included(statement)
        if included is not None:  # ``exec(open(PATH).read())``: the configurator's lines
            return self.scan(name, included, len(included), before, scope, context)
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
        entry, body_condition, else_condition = self.launch.conditions.branches(
            statement, scope, context
        )
        body = self.scan(name, statement.body, len(statement.body), before, scope, context)
        orelse = self.scan(name, statement.orelse, len(statement.orelse), before, scope, context)
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
        run = self.launch.run_at(statement, scope, context)
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
        return self.undecided_at(statement, scope, context)

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
        self,
        fact: ConstantFact | None,
        target: ast.Subscript,
        item: ConstantFact,
        run: DemandRun,
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
        self, fact: ConstantFact | None, call: ast.Call, run: DemandRun
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

    def undecided_at(
        self, statement: ast.AST, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact:
        return ConstantFact(
            UNDECIDED,
            self.launch.run_at(statement, scope, context)._evidence(statement),
            self.launch.conditions.condition_in(statement, scope, context),
        )
