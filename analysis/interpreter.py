"""Flow-sensitive dataflow over one function body, in one calling context.

Statements run in order over an environment of abstract values; ``if`` branches run on
copies that merge afterwards; a loop body runs until the environment at its head stops
changing (a fixpoint, capped), quietly, and then once more recording events — so the
facts a rule sees at a statement are those that hold on every path that reaches it,
including the path around the loop's back edge ("``model.eval()`` at the end of the
epoch is still in force at the next training step").

Grad mode is part of the context: ``with torch.no_grad()``, ``inference_mode``,
``set_grad_enabled(False)`` and ``@torch.no_grad()`` functions turn it off, and a model
called while it is off yields no graph.
"""

from __future__ import annotations

import ast

import attrs

from . import catalog
from .calls import CallsMixin, literal
from .events import Event, EventKind, Gate, StoreFacts, Trace
from .expressions import ExpressionsMixin
from .finding import Confidence, Evidence
from .loops import LoopsMixin
from .names import dotted
from .values import UNKNOWN, Kind, Loc, ModeFact, Value, join, join_env


def _is_modulo_test(node: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node))


_FRAMEWORK_BACKWARD_OWNERS = ("accelerator", "fabric", "engine", "model_engine", "deepspeed_engine")


def _reads(node: ast.AST | None, path: str) -> bool:
    """Whether expression ``node`` reads the variable or attribute path ``path``."""
    return node is not None and any(
        isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == path for n in ast.walk(node)
    )


def _walk_own_code(body: list[ast.stmt]):
    """Every node of ``body`` except those of nested functions and classes, which are
    analysed in their own right."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def backward_targets_of(body: list[ast.stmt]) -> dict[str, ast.Call]:
    """Names on which the function calls ``backward``: directly, through a grad scaler
    (``scaler.scale(loss).backward()``) or through a framework (``accelerator.backward(loss)``)."""
    found: dict[str, ast.Call] = {}
    for node in _walk_own_code(body):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "backward"
        ):
            continue
        receiver = node.func.value
        if (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Attribute)
            and receiver.func.attr == "scale"
            and receiver.args
        ):
            receiver = receiver.args[0]
        owner = dotted(receiver)
        if (
            owner
            and owner.rsplit(".", 1)[-1].lower().endswith(_FRAMEWORK_BACKWARD_OWNERS)
            and node.args
        ):
            target = dotted(node.args[0])
        else:
            target = owner
        if target:
            found.setdefault(target, node)
    return found


class FunctionRun(ExpressionsMixin, CallsMixin, LoopsMixin):
    def __init__(
        self,
        analyzer,
        trace: Trace,
        body: list[ast.stmt],
        *,
        env: dict[str, Value],
        outer: dict[str, Value],
        grad_enabled: bool,
        params: frozenset[str] = frozenset(),
    ) -> None:
        self.analyzer = analyzer
        self.trace = trace
        self.body = body
        self.env = dict(env)
        self.outer = outer
        self.params = params
        self.grad_enabled = grad_enabled
        self.in_accumulate = False
        self.loops: list[int] = []
        self.gates: list[Gate] = []
        self.recording = True
        self.returns: list[Value] = []
        self.loc_loops: dict[Loc, tuple[int, ...]] = {}
        self.backward_targets = analyzer.backward_targets(body)

    # --- running --------------------------------------------------------------------
    def run(self) -> None:
        self.execute(self.body)

    def execute(self, body: list[ast.stmt]) -> None:
        for statement in body:
            handler = getattr(self, "_exec_" + type(statement).__name__, None)
            if handler is not None:
                handler(statement)
            if isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                break  # the rest of the block is unreachable

    def emit(self, kind: EventKind, node: ast.AST, **fields) -> None:
        if not self.recording:
            return
        self.trace.events.append(
            Event(
                kind=kind,
                span=self.analyzer.lines.span(node),
                loops=tuple(self.loops),
                gates=tuple(self.gates),
                grad_enabled=self.grad_enabled,
                in_accumulate=self.in_accumulate,
                **fields,
            )
        )

    # --- events with effects on the environment -------------------------------------
    def backward(
        self,
        value: Value,
        node: ast.Call,
        *,
        framework: str | None,
        retain_graph: bool = False,
        path: str | None = None,
    ) -> None:
        self.analyzer.note_backwarded(value.locs)
        self.emit(
            EventKind.BACKWARD,
            node,
            value=value,
            framework=framework,
            retain_graph=retain_graph,
        )
        target = path
        if framework and node.args:
            target = dotted(node.args[0])
        if target and target in self.env:
            self.env[target] = attrs.evolve(
                self.env[target],
                backwarded=self.evidence(node, f"`{self.text(node)}` runs backward"),
            )

    def store(
        self, container: Value, stored: Value, node: ast.AST, path: str | None, value_node: ast.AST
    ) -> None:
        locs = container.locs or frozenset({Loc(self.trace.function, 0, 0, path or "<container>")})
        for loc in locs:
            created = self.loc_loops.get(loc, ())
            self.emit(
                EventKind.STORE,
                node,
                value=stored,
                target=container,
                loc=loc,
                store=StoreFacts(
                    container=path or "container",
                    stored_text=self.text(value_node),
                    created_loops=created,
                ),
            )
        if path and (stored.graph or stored.locs):
            self.env[path] = attrs.evolve(
                container,
                graph=container.graph or stored.graph,
                graph_confidence=stored.graph_confidence
                if stored.graph
                else container.graph_confidence,
                locs=container.locs | stored.locs,
            )

    def set_mode(self, path: str, fact: ModeFact | None) -> None:
        current = self.lookup(path) or self.resolve_path(path)
        if current is not None and current.kind is Kind.MODEL:
            self.env[path] = attrs.evolve(current, mode=fact)

    def resolve_path(self, path: str) -> Value | None:
        """The value at ``self.model``-style paths that live inside an instance value."""
        head, *rest = path.split(".")
        value = self.lookup(head)
        for name in rest:
            value = value.attribute(name) if value is not None else None
        return value

    def with_path_attributes(self, path: str, value: Value) -> Value:
        """``value`` with the facts this function learnt about ``path.attr`` folded in,
        so a method called on ``self`` sees ``self.model.eval()`` done by a sibling."""
        prefix = path + "."
        updates = {
            k[len(prefix) :]: v
            for k, v in self.env.items()
            if k.startswith(prefix) and "." not in k[len(prefix) :]
        }
        if not updates:
            return value
        merged = dict(value.attributes)
        merged.update(updates)
        return attrs.evolve(value, attributes=tuple(sorted(merged.items())))

    def call_local(
        self,
        info,
        args,
        kwargs,
        node: ast.Call,
        self_value: Value | None = None,
        receiver_path: str | None = None,
    ) -> Value:
        if self_value is not None and receiver_path:
            self_value = self.with_path_attributes(receiver_path, self_value)
        return self.analyzer.call_function(
            self, info, args, kwargs, node, self_value, receiver_path
        )

    # --- assignment -----------------------------------------------------------------
    def assign(self, target: ast.AST, value: Value, statement: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            elements = value.elements
            for i, element in enumerate(target.elts):
                if isinstance(elements, tuple) and len(elements) == len(target.elts):
                    part = elements[i]
                elif value.graph or value.locs:
                    part = Value(
                        kind=None,
                        graph=value.graph,
                        graph_confidence=value.graph_confidence,
                        locs=value.locs,
                    )
                else:
                    part = UNKNOWN
                self.assign(element, part, statement)
            return
        if isinstance(target, ast.Starred):
            self.assign(target.value, value, statement)
            return
        if isinstance(target, ast.Subscript):
            container = self.evaluate(target.value)
            self.evaluate(target.slice)
            if value.graph:
                self.store(
                    container,
                    value,
                    target,
                    dotted(target.value),
                    statement.value if hasattr(statement, "value") else target,
                )
            return
        path = dotted(target)
        if path is None:
            return
        if (
            path.endswith(".grad")
            and literal(getattr(statement, "value", None)) is None
            and isinstance(getattr(statement, "value", None), ast.Constant)
        ):
            self.emit(EventKind.ZERO_GRAD, statement)
        value = self.with_backward_proof(path, value)
        if value.kind in (Kind.CONTAINER, Kind.SCALAR) or (
            value.kind is Kind.TENSOR and not value.graph
        ):
            loc = Loc(self.trace.function, statement.lineno, statement.col_offset, path)
            self.loc_loops[loc] = tuple(self.loops)
            value = attrs.evolve(value, locs=value.locs | {loc})
        previous = self.lookup(path)
        if (
            isinstance(statement, (ast.Assign, ast.AnnAssign))
            and previous is not None
            and previous.locs
            and value.graph
            and (previous.locs & value.locs)
            and _reads(statement.value, path)
        ):
            # ``total = total + loss``: an accumulator, like ``total += loss``
            self.store(
                previous,
                value,
                statement,
                path,
                statement.value if hasattr(statement, "value") else target,
            )
        self.env[path] = value

    def with_backward_proof(self, path: str, value: Value) -> Value:
        """A value that ``backward()`` is later called on carries a graph: that is proof."""
        call = self.backward_targets.get(path)
        if call is None or not self.grad_enabled or value.kind not in (None, Kind.TENSOR):
            return value
        if value.graph is not None and value.graph_confidence is Confidence.HIGH:
            return value
        proof = Evidence(
            self.analyzer.lines.span(call),
            f"`{self.text(call)}` is called on `{path}`, so it carries a graph",
        )
        return attrs.evolve(value, kind=Kind.TENSOR, graph=proof, graph_confidence=Confidence.HIGH)

    # --- statements -----------------------------------------------------------------
    def _exec_Expr(self, node: ast.Expr) -> None:
        self.evaluate(node.value)

    def _exec_Assign(self, node: ast.Assign) -> None:
        value = self.evaluate(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def _exec_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.evaluate(node.value), node)

    def _exec_AugAssign(self, node: ast.AugAssign) -> None:
        right = self.evaluate(node.value)
        path = dotted(node.target)
        if isinstance(node.target, ast.Subscript):
            container = self.evaluate(node.target.value)
            if right.graph:
                self.store(container, right, node, dotted(node.target.value), node.value)
            return
        if path is None:
            return
        left = self.lookup(path) or UNKNOWN
        new = attrs.evolve(
            join(left, right)
            if left.kind is Kind.CONTAINER
            else Value(
                kind=Kind.TENSOR if (left.graph or right.graph) else left.kind or right.kind,
                graph=left.graph or right.graph,
                graph_confidence=right.graph_confidence if right.graph else left.graph_confidence,
                locs=left.locs | right.locs,
                eval_forward=left.eval_forward or right.eval_forward,
            ),
            scaled=True
            if isinstance(node.op, (ast.Div, ast.Mult, ast.FloorDiv)) and left.graph
            else (right.scaled if right.graph else left.scaled),
        )
        if right.graph:
            self.store(left, right, node, path, node.value)
        self.env[path] = new

    def _exec_Return(self, node: ast.Return) -> None:
        value = self.evaluate(node.value) if node.value is not None else UNKNOWN
        self.returns.append(value)
        self.trace.returned_locs |= value.locs
        self.trace.returns_graph = self.trace.returns_graph or value.graph is not None

    def _exec_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            path = dotted(target)
            if path:
                self.env.pop(path, None)

    def _exec_Raise(self, node: ast.Raise) -> None:
        self.evaluate(node.exc)

    def _exec_Assert(self, node: ast.Assert) -> None:
        self.evaluate(node.test)

    def _exec_FunctionDef(self, node: ast.FunctionDef) -> None:
        info = self.analyzer.index.by_node.get(id(node))
        if info is not None:
            self.env[node.name] = Value(kind=Kind.FUNCTION, class_name=info.qualname)
            self.analyzer.note_closure(info.qualname, self.env)

    _exec_AsyncFunctionDef = _exec_FunctionDef

    def _exec_If(self, node: ast.If) -> None:
        self.evaluate(node.test)
        gate = Gate(
            self.analyzer.lines.head_span(node),
            _is_modulo_test(node.test),
            self.loops[-1] if self.loops else None,
        )
        before = dict(self.env)
        self.gates.append(gate)
        self.execute(node.body)
        after_body = self.env
        self.env = dict(before)
        self.execute(node.orelse)
        self.gates.pop()
        self.env = join_env(after_body, self.env)

    def _exec_Try(self, node: ast.Try) -> None:
        before = dict(self.env)
        self.execute(node.body)
        self.execute(node.orelse)
        merged = self.env
        for handler in node.handlers:
            self.env = dict(before)
            self.execute(handler.body)
            merged = join_env(merged, self.env)
        self.env = merged
        self.execute(node.finalbody)

    _exec_TryStar = _exec_Try

    def _exec_Match(self, node) -> None:
        self.evaluate(node.subject)
        before = dict(self.env)
        merged = dict(before)
        for case in node.cases:
            self.env = dict(before)
            self.execute(case.body)
            merged = join_env(merged, self.env)
        self.env = merged

    def _exec_With(self, node: ast.With) -> None:
        saved_grad, saved_accumulate = self.grad_enabled, self.in_accumulate
        for item in node.items:
            context = item.context_expr
            func = context.func if isinstance(context, ast.Call) else context
            name = self.qualified(func) or dotted(func)
            if catalog.is_grad_disabling(name) and not (
                isinstance(context, ast.Call) and context.args and literal(context.args[0]) is False
            ):
                self.grad_enabled = False
            elif name in catalog.GRAD_ENABLING:
                self.grad_enabled = True
            elif name == catalog.GRAD_SETTING and isinstance(context, ast.Call) and context.args:
                flag = literal(context.args[0])
                if flag is False:
                    self.grad_enabled = False
                elif flag is True:
                    self.grad_enabled = True
            elif (
                isinstance(context, ast.Call)
                and isinstance(context.func, ast.Attribute)
                and context.func.attr == "accumulate"
            ):
                self.in_accumulate = True
            value = self.evaluate(context)
            if item.optional_vars is not None:
                self.assign(
                    item.optional_vars, value if value.kind else UNKNOWN, item.optional_vars
                )
        self.execute(node.body)
        self.grad_enabled, self.in_accumulate = saved_grad, saved_accumulate

    _exec_AsyncWith = _exec_With
