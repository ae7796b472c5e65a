"""How the launch on demand (:mod:`.launch_demand`) keeps its answers and guards its
questions: the context a function's body is asked in, the memo that keeps final answers
for good and guesses only for the question being answered, the exception a question that
re-enters itself raises, and a fallback computed at most once."""

from __future__ import annotations

import ast
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..facts.constants import ConstantFact
    from ..facts.semantic import FunctionInfo

__all__ = [
    "MAX_CONTEXT",
    "MISSING",
    "STEPS",
    "CallSite",
    "Context",
    "Cycle",
    "Memo",
    "depth",
    "once",
]


class CallSite(NamedTuple):
    """The call a function's body is asked about for, where it stands, and the context that
    call itself is asked in (a key of the memo: hashed and compared as a tuple)."""

    call: ast.Call
    statement: ast.AST  # the statement holding the call
    outer: CallSite | None
    caller: FunctionInfo | None  # the function holding the call (None: the module's code)


#: a question's call site (None: every call site of the function, joined)
Context = CallSite | None
MAX_CONTEXT = 4  # calls deep; a deeper question joins every call site instead
STEPS = 4000  # bindings and folds one question may visit before it answers undecided
MISSING = object()


class Memo:
    """Answers by key: final ones for good; ones that met a cycle's guess (:class:`Cycle`)
    only until the question being answered is done — kept for good they would depend on
    which question came first, dropped at once a chain of cycles recomputes them
    exponentially (a Megatron modelling file: seconds)."""

    def __init__(self) -> None:
        self._final: dict = {}
        self._guesses: dict = {}

    def get(self, key: Hashable) -> object:
        found = self._final.get(key, MISSING)
        return self._guesses.get(key, MISSING) if found is MISSING else found

    def keep(self, key: Hashable, value: object, final: bool) -> None:
        (self._final if final else self._guesses)[key] = value

    def forget_guesses(self) -> None:
        if self._guesses:
            self._guesses.clear()


class Cycle(Exception):
    """A question that re-entered itself: its answer is a guess, not to be kept."""


def depth(context: Context) -> int:
    """How many calls deep ``context`` is."""
    found = 0
    while context is not None:
        found, context = found + 1, context.outer
    return found


def once(compute: Callable[[], ConstantFact | None]) -> Callable[[], ConstantFact | None]:
    """``compute``, run at most once (both branches of an ``if`` fall back to what came
    before it: without this, a chain of ``if`` statements is exponential)."""
    done: list[ConstantFact | None] = []

    def once() -> ConstantFact | None:
        if not done:
            done.append(compute())
        return done[0]

    return once
