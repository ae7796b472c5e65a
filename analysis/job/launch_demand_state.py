"""What the launch on demand's collaborators share for one file (:mod:`.launch_demand`):
where statements stand, the memos of each kind of answer, and the guard every question
passes — the questions being answered (a re-entry is a cycle), how many cycles forced a
guess (what met one is not kept for good), and the steps one question has taken against
its budget. Each collaborator (:class:`~.launch_demand_names.Names`,
:class:`~.launch_demand_entry.Entry`, :class:`~.launch_demand_conditions.Conditions`)
receives this state explicitly instead of sharing a ``self`` through mixins."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from .launch_demand_memo import MISSING, Cycle, Memo
from .launch_places import Places

if TYPE_CHECKING:
    from ..facts.analyzer import FileAnalyzer
    from ..facts.constants import ConstantFact
    from ..facts.semantic import FunctionInfo

__all__ = ["DemandState"]


class DemandState:
    """One file's shared state of the launch on demand (see the module docstring)."""

    def __init__(self, analyzer: FileAnalyzer, budget: int) -> None:
        self.analyzer = analyzer
        self.tree = analyzer.tree
        self.places = Places(analyzer)
        self.budget = budget  # bindings, folds and conditions one question may visit
        self.values = Memo()  # bindings' and returns' facts (:meth:`guarded`)
        self.conditions = Memo()  # (statement id, context) -> a statement's condition
        self.entries = Memo()  # (function node id, context) -> a function's entry condition
        self.branches = Memo()  # (``if`` id, context) -> its entry, body and else conditions
        self.stopped = Memo()  # (statement id, context) -> whether a plain launch leaves there
        self.sites: dict[int, list[tuple[ast.Call, ast.stmt, FunctionInfo | None]]] = {}
        self.unused: dict[str, ast.FunctionDef] | None = None  # functions no launch runs
        self.active: set[tuple] = set()
        self.cycles = 0  # how many guesses cycles forced: what met one is not memoised
        self.steps = 0

    def new_question(self) -> None:
        """Start a question: its step count, and no guess of an earlier one kept."""
        self.steps = 0
        for memo in (self.values, self.conditions, self.entries, self.branches, self.stopped):
            memo.forget_guesses()

    def guarded(
        self, key: tuple, compute: Callable[[], ConstantFact | None]
    ) -> ConstantFact | None:
        """``compute()``, memoised under ``key`` in :attr:`values`; a re-entry, or a question
        past its budget, raises :class:`Cycle`."""
        known = self.values.get(key)
        if known is not MISSING:
            return known  # type: ignore[return-value]
        if key in self.active or self.steps > self.budget:
            raise self.cycle()
        self.steps += 1
        self.active.add(key)
        cycles = self.cycles
        try:
            found = compute()
        finally:
            self.active.discard(key)
        self.values.keep(key, found, cycles == self.cycles)
        return found

    def cycle(self) -> Cycle:
        self.cycles += 1
        return Cycle()
