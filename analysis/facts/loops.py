"""Loops: iterate a body to a fixpoint, and notice loops over data loaders.

A loop body runs quietly until the environment at its head stops changing (capped at
:data:`MAX_LOOP_PASSES`), then once more recording events, so the facts at each statement
hold on every path into it, including the back edge. Quiet passes of nested loops run
their body once, which keeps deep nests linear.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..finding import Confidence
from ..syntax.names import dotted
from . import catalog
from .constants import around_the_loop
from .events import EventKind, Loop
from .fallback import kind_from_name
from .values import SCALAR, UNKNOWN, Kind, Value, join_env, with_constant

MAX_LOOP_PASSES = 3


class LoopsMixin:
    """Loop statements for :class:`~torchward.analysis.facts.interpreter.FunctionRun`."""

    if TYPE_CHECKING:  # provided by FunctionRun, which mixes this class in
        analyzer: Any

    def _exec_For(self, node: ast.For) -> None:
        iterable = self.evaluate(node.iter)
        loaders = self.loaders_iterated(node.iter, iterable)

        def one_iteration() -> None:
            for loader in loaders:
                self.emit(EventKind.ITERATE, node.iter, value=loader)
            self.assign(node.target, self.iteration_value(node.iter, iterable), node)
            self.execute(node.body)

        self.loop(node, one_iteration)
        self.execute(node.orelse)

    _exec_AsyncFor = _exec_For

    def _exec_While(self, node: ast.While) -> None:
        def one_iteration() -> None:
            self.evaluate(node.test)
            self.execute(node.body)

        self.evaluate(node.test)
        self.loop(node, one_iteration)
        self.execute(node.orelse)

    def loop(self, node: ast.stmt, one_iteration) -> None:
        loop_id = len(self.trace.loops) + 1
        self.trace.loops[loop_id] = Loop(
            loop_id,
            self.analyzer.lines.head_span(node),
            self.loops[-1] if self.loops else None,
            getattr(node, "end_lineno", node.lineno),
        )
        self.loops.append(loop_id)
        if not self.recording or self.analyzer.launch is not None:
            # A quiet pass (an enclosing loop is still looking for its fixpoint): one
            # iteration joined with the entry is enough, and keeps nested loops linear.
            state = dict(self.env)
            one_iteration()
            self.env = join_env(self._around_the_loop(state, self.env), self.env)
            self.loops.pop()
            return
        saved_recording = self.recording
        self.recording = False
        state = dict(self.env)
        for _ in range(MAX_LOOP_PASSES):
            self.env = dict(state)
            one_iteration()
            widened = join_env(state, self.env)
            if widened == state:
                break
            state = widened
        self.recording = saved_recording
        self.env = dict(state)
        one_iteration()
        self.env = join_env(state, self.env)
        self.loops.pop()

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
            name = self.qualified(node.func) or (
                node.func.id if isinstance(node.func, ast.Name) else None
            )
            if name in catalog.ITERATION_WRAPPERS or (
                isinstance(node.func, ast.Name) and node.func.id in catalog.ITERATION_WRAPPERS
            ):
                return [loader for arg in node.args for loader in self.loaders_iterated(arg)]
            return []
        value = value if value is not None else self.evaluate(node)
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
            inner = self.evaluate(iter_node.args[0]) if iter_node.args else UNKNOWN
            return Value(kind=Kind.CONTAINER, elements=(SCALAR, self.element_of(inner)))
        if iterable.kind in (Kind.LOADER, Kind.DATASET):
            return UNKNOWN
        return self.element_of(iterable)
