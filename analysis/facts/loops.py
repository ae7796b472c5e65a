"""Loops: iterate a body to a fixpoint, and notice loops over data loaders.

A loop body runs quietly until the environment at its head stops changing (capped at
:data:`MAX_LOOP_PASSES`), then once more recording events, so the facts at each statement
hold on every path into it, including the back edge. Quiet passes of nested loops run
their body once, which keeps deep nests linear.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..finding import Confidence
from ..syntax.names import dotted
from . import catalog
from .constants import around_the_loop
from .events import EventKind, Loop
from .expressions import element_of
from .fallback import kind_from_name
from .values import SCALAR, UNKNOWN, Kind, Value, join_env, with_constant

if TYPE_CHECKING:
    from .interpreter import FunctionRun

MAX_LOOP_PASSES = 3


class LoopRunner:
    """Loop statements for one :class:`~torchward.analysis.facts.interpreter.FunctionRun`:
    a collaborator that drives the run's body to a fixpoint through ``run`` (its
    environment, its stack of enclosing loops, whether it records events)."""

    def __init__(self, run: FunctionRun) -> None:
        self.run = run
        self.analyzer = run.analyzer

    def run_for(self, node: ast.For | ast.AsyncFor) -> None:
        run = self.run
        iterable = run.evaluate(node.iter)
        loaders = self.loaders_iterated(node.iter, iterable)

        def one_iteration() -> None:
            for loader in loaders:
                run.emit(EventKind.ITERATE, node.iter, value=loader)
            run.assign(node.target, self.iteration_value(node.iter, iterable), node)
            run.execute(node.body)

        self.loop(node, one_iteration)
        run.execute(node.orelse)

    def run_while(self, node: ast.While) -> None:
        run = self.run

        def one_iteration() -> None:
            run.evaluate(node.test)
            run.execute(node.body)

        run.evaluate(node.test)
        self.loop(node, one_iteration)
        run.execute(node.orelse)

    def loop(self, node: ast.stmt | ast.expr, one_iteration: Callable[[], None]) -> None:
        run = self.run
        loop_id = len(run.trace.loops) + 1
        run.trace.loops[loop_id] = Loop(
            loop_id,
            self.analyzer.lines.head_span(node),
            run.loops[-1] if run.loops else None,
            getattr(node, "end_lineno", node.lineno),
        )
        run.loops.append(loop_id)
        if not run.recording or self.analyzer.launch is not None:
            # A quiet pass (an enclosing loop is still looking for its fixpoint): one
            # iteration joined with the entry is enough, and keeps nested loops linear.
            state = dict(run.env)
            one_iteration()
            run.env = join_env(self._around_the_loop(state, run.env), run.env)
            run.loops.pop()
            return
        saved_recording = run.recording
        run.recording = False
        state = dict(run.env)
        for _ in range(MAX_LOOP_PASSES):
            run.env = dict(state)
            one_iteration()
            widened = join_env(state, run.env)
            if widened == state:
                break
            state = widened
        run.recording = saved_recording
        run.env = dict(state)
        one_iteration()
        run.env = join_env(state, run.env)
        run.loops.pop()

    def _around_the_loop(
        self, entry: dict[str, Value], after: dict[str, Value]
    ) -> dict[str, Value]:
        """Launch mode: the entry's values as they reach the join after the loop — a
        constant one pass changes under a worse condition holds only under that condition
        (:func:`~torchward.analysis.facts.constants.around_the_loop`)."""
        if self.analyzer.launch is None:
            return entry
        adjusted: dict[str, Value] | None = None
        for name, value in after.items():
            before = entry.get(name)
            if before is None or before is value or before.constant is None:
                continue
            if value.constant is None:
                continue
            fact = around_the_loop(before.constant, value.constant)
            if fact is not before.constant:
                adjusted = dict(entry) if adjusted is None else adjusted
                adjusted[name] = with_constant(before, fact)
        return entry if adjusted is None else adjusted

    def loaders_iterated(self, node: ast.expr, value: Value | None = None) -> list[Value]:
        """The loaders a ``for`` iterates, through ``enumerate``/``tqdm``/``zip`` wrappers."""
        if value is not None and value.kind is Kind.LOADER:
            return [value]
        if isinstance(node, ast.Call):
            name = self.run.qualified(node.func) or (
                node.func.id if isinstance(node.func, ast.Name) else None
            )
            if name in catalog.ITERATION_WRAPPERS or (
                isinstance(node.func, ast.Name) and node.func.id in catalog.ITERATION_WRAPPERS
            ):
                return [loader for arg in node.args for loader in self.loaders_iterated(arg)]
            return []
        value = value if value is not None else self.run.evaluate(node)
        if value.kind is Kind.LOADER:
            return [value]
        if value.kind is None and (path := dotted(node)):
            if kind_from_name(path) is Kind.LOADER:
                return [Value(kind=Kind.LOADER, confidence=Confidence.LOW)]
        return []

    def iteration_value(self, iter_node: ast.expr, iterable: Value) -> Value:
        if (
            isinstance(iter_node, ast.Call)
            and isinstance(iter_node.func, ast.Name)
            and iter_node.func.id == "enumerate"
        ):
            inner = self.run.evaluate(iter_node.args[0]) if iter_node.args else UNKNOWN
            return Value(kind=Kind.CONTAINER, elements=(SCALAR, element_of(inner)))
        if iterable.kind in (Kind.LOADER, Kind.DATASET):
            return UNKNOWN
        return element_of(iterable)
