"""Evaluating expressions to abstract values: names, attributes, operators, literals.

Calls, where most of the domain knowledge sits, are in :mod:`torchward.analysis.facts.calls`.
The rules of propagation are few and deliberate:

- arithmetic on a graph-carrying tensor carries the graph on; a comparison does not;
- dividing (or multiplying by something that is not a tensor with a graph) marks the
  value as scaled, which is what gradient-accumulation normalisation looks like;
- reading a container passes on the container's identity (:class:`Loc`), so that
  ``sum(losses).backward()`` can be traced back to ``losses``;
- slicing and indexing keep the activation (``probs[:, 1]`` is still a probability).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..finding import Confidence
from ..syntax.names import dotted
from . import catalog
from .events import EventKind
from .values import SCALAR, UNKNOWN, Kind, Value, combine, evolve

if TYPE_CHECKING:
    from .interpreter import FunctionRun

#: the nodes a comprehension is made of
Comprehension = ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp


def min_confidence(values: tuple[Value, ...]) -> Confidence:
    """The weakest of the values' kind confidences."""
    order = (Confidence.LOW, Confidence.MEDIUM, Confidence.HIGH)
    return min((v.confidence for v in values), key=order.index)


_HANDLERS: dict[tuple[type, str, type], Callable[..., Any] | None] = {}


def handler_of(owner: type, prefix: str, kind: type) -> Callable[..., Any] | None:
    """``owner``'s ``_eval_Name`` / ``_exec_If`` for a node class, looked up once per pair
    (building the name and looking it up for every node cost as much as a small handler)."""
    key = (owner, prefix, kind)
    try:
        return _HANDLERS[key]
    except KeyError:
        found = _HANDLERS[key] = getattr(owner, prefix + kind.__name__, None)
        return found


class Expressions:
    """Expression evaluation for one :class:`~torchward.analysis.facts.interpreter.FunctionRun`.

    A collaborator of the run, not a part of it: it reads and writes the run's state
    (its environment, its analyzer) through ``run`` and asks the run's other
    collaborators (:class:`~torchward.analysis.facts.calls.Calls` for calls,
    :class:`~torchward.analysis.facts.loops.LoopRunner` for comprehensions over loaders)."""

    def __init__(self, run: FunctionRun) -> None:
        self.run = run
        self.analyzer = run.analyzer

    def evaluate(self, node: ast.expr | None) -> Value:
        if node is None:
            return UNKNOWN
        method = handler_of(Expressions, "_eval_", type(node))
        if method is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.evaluate(child)
            value = UNKNOWN
        else:
            value = method(self, node)
        if self.analyzer.launch is not None:
            return self.run.folding.attach_constant(node, value)
        return value

    # --- names and attributes -------------------------------------------------------
    def _eval_Call(self, node: ast.Call) -> Value:
        return self.run.calls.call(node)

    def _eval_Name(self, node: ast.Name) -> Value:
        found = self.run.lookup(node.id)
        if found is not None:
            return found
        index = self.analyzer.index
        if node.id in index.top_functions:
            return Value(kind=Kind.FUNCTION, class_name=index.top_functions[node.id].qualname)
        return UNKNOWN

    def _eval_Attribute(self, node: ast.Attribute) -> Value:
        path = dotted(node)
        if path is not None and path in self.run.env:
            return self.run.env[path]
        base = self.evaluate(node.value)
        if base.kind is Kind.INSTANCE or base.kind is Kind.MODEL:
            found = base.attribute(node.attr)
            if found is not None:
                return found
            if base.class_name and self.analyzer.index.find_method(base.class_name, node.attr):
                return UNKNOWN
            if node.attr == "module" and base.kind is Kind.MODEL:
                return base  # DDP(model).module is the model
            return UNKNOWN
        if base.graph is not None:
            if node.attr in catalog.DETACHING_ATTRIBUTES:
                return SCALAR if node.attr != "data" else Value(kind=Kind.TENSOR)
            if node.attr == "grad":
                return Value(kind=Kind.TENSOR)
            return Value(
                kind=Kind.TENSOR,
                graph=base.graph,
                graph_confidence=base.graph_confidence,
                locs=base.locs,
                scaled=base.scaled,
                backwarded=base.backwarded,
                eval_forward=base.eval_forward,
            )
        if base.kind is Kind.CONTAINER and base.locs:
            return evolve(base, kind=None)
        return UNKNOWN

    def _eval_Subscript(self, node: ast.Subscript) -> Value:
        base = self.evaluate(node.value)
        self.evaluate(node.slice)
        if base.kind is Kind.CONTAINER:
            elements = base.elements
            if (
                isinstance(elements, tuple)
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, int)
            ):
                if -len(elements) <= node.slice.value < len(elements):
                    return elements[node.slice.value]
            return Value(
                kind=Kind.TENSOR if base.graph else None,
                graph=base.graph,
                graph_confidence=base.graph_confidence,
                locs=base.locs,
                scaled=base.scaled,
                backwarded=base.backwarded if base.graph else None,
            )
        if base.kind in (Kind.TENSOR, None):
            return (
                evolve(base, mode=None, origin=base.origin if base.activation else None)
                if base.graph or base.activation
                else (Value(locs=base.locs) if base.locs else UNKNOWN)
            )
        return UNKNOWN

    # --- operators ----------------------------------------------------------------
    def _eval_BinOp(self, node: ast.BinOp) -> Value:
        left, right = self.evaluate(node.left), self.evaluate(node.right)
        # arithmetic with a tensor on either side yields a tensor (numbers broadcast)
        result = evolve(
            combine((left, right)), proven_tensor=left.proven_tensor or right.proven_tensor
        )
        if isinstance(node.op, (ast.Div, ast.FloorDiv)) and left.graph and not right.graph:
            return evolve(result, scaled=True)
        if isinstance(node.op, ast.Mult) and (left.graph or right.graph):
            graph_side, other = (left, right) if left.graph else (right, left)
            if not other.graph and not (
                isinstance(node.right, ast.Constant) and isinstance(node.left, ast.Constant)
            ):
                return evolve(result, scaled=True)
            return evolve(result, scaled=graph_side.scaled)
        if left.graph or right.graph:
            sides = [v for v in (left, right) if v.graph]
            scaled = (
                all(v.scaled for v in sides) if all(v.scaled is not None for v in sides) else None
            )
            return evolve(result, scaled=scaled)
        return result

    def _eval_UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.evaluate(node.operand)
        if isinstance(node.op, ast.Not):
            return SCALAR
        return evolve(
            combine((operand,)), scaled=operand.scaled, proven_tensor=operand.proven_tensor
        )

    def _eval_Compare(self, node: ast.Compare) -> Value:
        self.evaluate(node.left)
        for comparator in node.comparators:
            self.evaluate(comparator)
        return SCALAR  # comparisons produce booleans, which carry no graph

    def _eval_BoolOp(self, node: ast.BoolOp) -> Value:
        values = [self.evaluate(v) for v in node.values]
        return combine(values) if any(v.graph for v in values) else UNKNOWN

    def _eval_IfExp(self, node: ast.IfExp) -> Value:
        from .values import join

        test = self.evaluate(node.test)
        body, orelse = self.evaluate(node.body), self.evaluate(node.orelse)
        taken = self.run.folding.bindings.taken_arm(test, body, orelse)
        return taken if taken is not None else join(body, orelse)

    def _eval_Constant(self, node: ast.Constant) -> Value:
        return SCALAR if isinstance(node.value, (int, float, complex, bool)) else UNKNOWN

    def _eval_JoinedStr(self, node: ast.JoinedStr) -> Value:
        for value in node.values:
            self.evaluate(value)
        return UNKNOWN

    def _eval_FormattedValue(self, node: ast.FormattedValue) -> Value:
        self.evaluate(node.value)
        return UNKNOWN

    def _eval_Starred(self, node: ast.Starred) -> Value:
        return self.evaluate(node.value)

    def _eval_NamedExpr(self, node: ast.NamedExpr) -> Value:
        value = self.evaluate(node.value)
        self.run.assign(node.target, value, node)
        return value

    def _eval_Lambda(self, node: ast.Lambda) -> Value:
        return UNKNOWN

    def _eval_Await(self, node: ast.Await) -> Value:
        return self.evaluate(node.value)

    # --- literals and comprehensions ------------------------------------------------
    def _container(self, elements: list[Value], keep_elements: bool) -> Value:
        joined = combine(elements)
        value = Value(
            kind=Kind.CONTAINER,
            graph=joined.graph,
            graph_confidence=joined.graph_confidence,
            locs=joined.locs,
            eval_forward=joined.eval_forward,
            backwarded=joined.backwarded,
        )
        if keep_elements or (elements and all(e.kind is Kind.MODEL for e in elements)):
            # a list of layers stays a list of models: iterating it calls models
            value = evolve(value, elements=tuple(elements))
        return value

    def _eval_Tuple(self, node: ast.Tuple) -> Value:
        return self._container([self.evaluate(e) for e in node.elts], keep_elements=True)

    def _eval_List(self, node: ast.List) -> Value:
        return self._container([self.evaluate(e) for e in node.elts], keep_elements=False)

    def _eval_Set(self, node: ast.Set) -> Value:
        return self._container([self.evaluate(e) for e in node.elts], keep_elements=False)

    def _eval_Dict(self, node: ast.Dict) -> Value:
        values = [self.evaluate(v) for v in node.values]
        for key in node.keys:
            self.evaluate(key)
        return self._container(values, keep_elements=False)

    def _comprehension(self, node: Comprehension, elements: list[ast.expr]) -> Value:
        saved = dict(self.run.env)
        values: list[Value] = []
        self._generators(node, list(node.generators), elements, values)
        self.run.env = saved
        return self._container(values, keep_elements=False)

    def _generators(
        self,
        node: Comprehension,
        generators: list[ast.comprehension],
        elements: list[ast.expr],
        values: list[Value],
    ) -> None:
        """A comprehension's ``for`` clauses, outermost first. One that iterates a data
        loader is a loop over batches as a ``for`` statement is (``sum(model(x) for x in
        loader)`` runs the model once per batch): it is recorded as a loop, with the
        loader's ITERATE event, so rules reading loops see it."""
        if not generators:
            values[:] = [self.evaluate(e) for e in elements]
            return
        generator, rest = generators[0], generators[1:]
        iterable = self.evaluate(generator.iter)
        loaders = self.run.loop_runner.loaders_iterated(generator.iter, iterable)

        def one_iteration() -> None:
            for loader in loaders:
                self.run.emit(EventKind.ITERATE, generator.iter, value=loader)
            self.run.assign(generator.target, element_of(iterable), generator)
            for condition in generator.ifs:
                self.evaluate(condition)
            self._generators(node, rest, elements, values)

        if loaders:
            self.run.loop_runner.loop(node, one_iteration)
        else:
            one_iteration()

    def _eval_ListComp(self, node: ast.ListComp) -> Value:
        return self._comprehension(node, [node.elt])

    def _eval_SetComp(self, node: ast.SetComp) -> Value:
        return self._comprehension(node, [node.elt])

    def _eval_GeneratorExp(self, node: ast.GeneratorExp) -> Value:
        return self._comprehension(node, [node.elt])

    def _eval_DictComp(self, node: ast.DictComp) -> Value:
        return self._comprehension(node, [node.key, node.value])


def element_of(iterable: Value) -> Value:
    """The value of one element when iterating ``iterable``."""
    layers = iterable.elements
    if layers and all(e.kind is Kind.MODEL for e in layers):
        # ``for layer in [nn.Linear(..), nn.ReLU(), ...]``: each element is a model
        return Value(kind=Kind.MODEL, confidence=min_confidence(layers))
    if iterable.kind is Kind.MODEL and iterable.confidence is Confidence.HIGH:
        # ``for block in self.blocks`` over an nn.ModuleList / nn.Sequential
        return Value(kind=Kind.MODEL)
    if iterable.kind is Kind.CONTAINER or iterable.graph:
        return Value(
            kind=Kind.TENSOR if iterable.graph else None,
            graph=iterable.graph,
            graph_confidence=iterable.graph_confidence,
            locs=iterable.locs,
            backwarded=iterable.backwarded if iterable.graph else None,
        )
    if iterable.locs:
        # ``zip(self.saved_log_probs, returns)``: the elements still come out of those
        # containers, so what is computed from them is traced back to where they were stored
        return Value(locs=iterable.locs)
    return UNKNOWN
