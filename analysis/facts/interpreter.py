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

Past 400 lines for now: statement execution, stores and backward proofs read and
write one environment in one pass. The seam for the next change: the store / container
identity logic (``store``, ``emptied``, ``identity_of``) into its own module.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from ..effects.library import backpropagates
from ..finding import Confidence, Evidence
from ..syntax.names import dotted, qualified_path
from . import catalog
from .calls import Calls, literal
from .conditions import PathCondition
from .constants import ConstantFact, Items
from .events import Event, EventKind, Gate, StoreFacts, Trace
from .expressions import Expressions, handler_of
from .launch import LaunchFolding
from .launch_bindings import seen_through, taken_branch, with_constant_elements
from .launch_paths import branch_conditions
from .loops import LoopRunner
from .values import UNKNOWN, Kind, Loc, ModeFact, Value, evolve, join, join_env

if TYPE_CHECKING:
    from .analyzer import FileAnalyzer
    from .semantic import FunctionInfo


def _is_modulo_test(node: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node))


def _reads(node: ast.AST | None, path: str) -> bool:
    """Whether expression ``node`` reads the variable or attribute path ``path``."""
    return node is not None and any(
        isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == path for n in ast.walk(node)
    )


def _scaled_operand(node: ast.Call) -> str | None:
    """``loss`` in ``scaler.scale(loss).backward()``."""
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
        and receiver.args
    ):
        return dotted(receiver.args[0])
    return None


def _may_be_guard(node: ast.Assign) -> bool:
    """A cheap pre-test: the assigned expression names something about grad mode."""
    expression = node.value
    if isinstance(expression, ast.IfExp):
        return _may_be_guard(ast.Assign(targets=[], value=expression.body)) or _may_be_guard(
            ast.Assign(targets=[], value=expression.orelse)
        )
    if isinstance(expression, ast.Call):
        expression = expression.func
    word = (
        expression.attr
        if isinstance(expression, ast.Attribute)
        else expression.id
        if isinstance(expression, ast.Name)
        else ""
    )
    return "grad" in word or "inference" in word


def _join_branches(body: dict[str, Value], orelse: dict[str, Value]) -> dict[str, Value]:
    """The environment after an ``if``: both branches joined, except that a value divided
    on one branch only is *maybe* scaled (None), not unscaled.

    ``if accum > 1: loss = loss / accum`` normalises exactly when accumulation happens;
    the analysis does not correlate the test with the later modulo gate, so it cannot
    call the loss unscaled. (A loop back edge keeps the lattice's must-join: a value
    divided in one iteration only is not divided.)
    """
    merged = join_env(body, orelse)
    for name, left in body.items():
        right = orelse.get(name)
        if (
            right is not None
            and left.scaled is not right.scaled
            and left.scaled is not None
            and right.scaled is not None
            and (left.graph or right.graph)
        ):
            merged[name] = evolve(merged[name], scaled=None)
    return merged


class FunctionRun:
    """One function body run in one calling context: the state of the run (environment,
    grad mode, enclosing loops and gates, the trace it records) and its statements.

    Expressions, calls and loops are evaluated by collaborators that this run owns and
    that work on its state: :class:`~.expressions.Expressions`, :class:`~.calls.Calls`,
    :class:`~.loops.LoopRunner`. The methods below that hand over to them are the run's
    interface for the frameworks' adapters and the workspace, which receive the run."""

    def __init__(
        self,
        analyzer: FileAnalyzer,
        trace: Trace,
        body: list[ast.stmt],
        *,
        env: dict[str, Value],
        outer: dict[str, Value],
        grad_enabled: bool,
        params: frozenset[str] = frozenset(),
        condition: PathCondition = PathCondition.DEFAULT,
    ) -> None:
        self.analyzer = analyzer
        # launch mode: the path condition of the statement being run (:mod:`.launch`)
        self.condition = condition
        # launch mode: a ``raise`` or a ``return`` ran on the path a plain launch takes
        # (what follows in the function runs only with flags the defaults do not
        # describe: unsure)
        self.stopped = False
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
        # the loops enclosing the statement that last bound each variable of this function
        self.bound_loops: dict[str, tuple[int, ...]] = {}
        # names whose value was detached in place (``hidden[0].detach_()``) since last bound
        self.detached_paths: set[str] = set()
        self._loops_of_body: list[tuple[int, int]] | None = None
        # variables bound to a grad-mode context manager: False disables, True enables
        self.grad_guards: dict[str, bool] = {}
        # which names backward() is called on: proof of a graph, which launch mode (the
        # constants of a plain launch) does not need
        self.backward_targets = analyzer.backward_targets(body) if analyzer.launch is None else {}
        self.expressions = Expressions(self)
        self.calls = Calls(self)
        self.loop_runner = LoopRunner(self)
        self.folding = LaunchFolding(self)

    # --- running --------------------------------------------------------------------
    def run(self) -> None:
        self.execute(self.body)

    def execute(self, body: list[ast.stmt]) -> None:
        launch = self.analyzer.launch
        driver = self.analyzer.launch_driver  # None exactly when ``launch`` is
        # launch mode: what an ``exec(open(PATH).read())`` statement runs (a configurator)
        included = driver.inputs.included if driver is not None else None
        for statement in body:
            if launch is not None:
                launch.note_condition(statement, self.condition)
            handler = handler_of(type(self), "_exec_", type(statement))
            if handler is not None:
                handler(self, statement)
            if included and id(statement) in included:
                self.execute(list(included[id(statement)]))
            if isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                break  # the rest of the block is unreachable

    # --- the collaborators, for the adapters and the workspace ----------------------
    def evaluate(self, node: ast.expr | None) -> Value:
        return self.expressions.evaluate(node)

    def arguments(self, node: ast.Call) -> tuple[list[Value], dict[str, Value]]:
        return self.calls.arguments(node)

    def model_method(
        self, model: Value, method: str, node: ast.Call, path: str | None, confidence: Confidence
    ) -> Value:
        return self.calls.model_method(model, method, node, path, confidence)

    def loop(self, node: ast.stmt | ast.expr, one_iteration: Callable[[], None]) -> None:
        self.loop_runner.loop(node, one_iteration)

    # --- launch mode, for the analyzer, the launch driver and a demand run -----------
    def fold(self, node: ast.expr, value: Value | None = None) -> ConstantFact:
        return self.folding.fold(node, value)

    def test_fact(self, test: ast.expr, folded: ConstantFact | None) -> ConstantFact | None:
        return self.folding.test_fact(test, folded)

    def augmented_constant(self, node: ast.AugAssign, before: Value, after: Value) -> Value:
        return self.folding.augmented_constant(node, before, after)

    def bind_default_constants(
        self, info: FunctionInfo, supplied: int, keywords: dict[str, Value]
    ) -> None:
        self.folding.bindings.bind_default_constants(info, supplied, keywords)

    def _fold(self, node: ast.expr) -> tuple[Hashable, PathCondition]:
        return self.folding.fold_pair(node)

    def _evidence(self, node: ast.AST) -> Evidence:
        return self.folding.evidence_of(node)

    def _changed(
        self, fact: ConstantFact, method: str, node: ast.Call
    ) -> tuple[Hashable, PathCondition]:
        return self.folding.bindings.changed(fact, method, node)

    # A demand run (:class:`~torchward.analysis.job.launch_demand.DemandRun`) overrides
    # these three to answer from the bindings that reach one statement. The folding asks
    # the run for calls, attributes and ``locals()`` (see ``_FOLDERS`` in :mod:`.launch`).
    def _fold_attribute(self, node: ast.Attribute) -> tuple[Hashable, PathCondition]:
        return self.folding.fold_attribute(node)

    def _fold_call(self, node: ast.Call, name: str) -> tuple[Hashable, PathCondition]:
        return self.folding.calls.fold_call(node, name)

    def _locals(self) -> Items:
        return self.folding.calls.locals_items()

    # --- names, evidence and source text ----------------------------------------------
    def lookup(self, name: str) -> Value | None:
        if name in self.env:
            return self.env[name]
        if name in self.outer:
            return self.outer[name]
        module_env = self.analyzer.globals()
        if module_env is not self.env and name in module_env:
            return module_env[name]
        return None

    def qualified(self, node: ast.AST) -> str | None:
        path = dotted(node)
        return None if path is None else self.qualified_dotted(path)

    def qualified_dotted(self, path: str) -> str | None:
        """:meth:`qualified` of an expression already spelt as its dotted ``path``."""
        head = path.partition(".")[0]
        if head in self.env or head in self.params:
            return None  # a local variable shadows an import of the same name
        return qualified_path(path, self.analyzer.index.imports)

    def evidence(self, node: ast.AST, message: str) -> Evidence:
        return Evidence(self.analyzer.lines.span(node), message, self.analyzer.evidence_path)

    def text(self, node: ast.AST, limit: int = 60) -> str:
        """The source text of ``node`` for messages: a slice of its line, never a re-render
        (``ast.unparse`` cost more than the analysis on large files)."""
        return self.analyzer.lines.snippet(node, limit)

    # --- events -------------------------------------------------------------------------
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
        if target is None and framework and node.args:
            target = dotted(node.args[0])
        elif target is None:
            target = _scaled_operand(node)  # ``scaler.scale(loss).backward()`` frees ``loss``
        if target and target in self.env:
            self.env[target] = evolve(
                self.env[target],
                backwarded=self.evidence(node, f"`{self.text(node)}` runs backward"),
            )

    def store(
        self, container: Value, stored: Value, node: ast.AST, path: str | None, value_node: ast.AST
    ) -> None:
        locs = self.identity_of(container, path)
        for loc in locs:
            created = self.loc_loops.get(loc, ())
            self.emit(
                EventKind.STORE,
                node,
                value=stored,
                target=container,
                loc=loc,
                store=StoreFacts(
                    container=path or self._container_text(node),
                    stored_text=self.text(value_node),
                    created_loops=created,
                ),
            )
        if path and (stored.graph or stored.locs):
            # what it holds was all backpropagated only if this value was too
            backwarded = (
                stored.backwarded
                if container.graph is None
                else container.backwarded
                if stored.backwarded is not None or stored.graph is None
                else None
            )
            self.env[path] = evolve(
                container,
                graph=container.graph or stored.graph,
                graph_confidence=stored.graph_confidence
                if stored.graph
                else container.graph_confidence,
                locs=container.locs | stored.locs,
                backwarded=backwarded,
            )

    def _container_text(self, node: ast.AST) -> str:
        """How the source names a container that has no dotted path
        (``self.metrics["loss"]`` in ``self.metrics["loss"].append(x)``)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return self.text(node.func.value)
        if isinstance(node, ast.Subscript):
            return self.text(node.value)
        return "container"

    def detached_in_place(self, receiver: ast.AST) -> None:
        """``state.detach_()``, ``hidden[0].detach_()``: the value bound to the name is cut
        from its graph in place, so rebinding the name from it (``out, hidden =
        model(x, hidden)``, truncated backpropagation through time) keeps no earlier
        iteration's graph alive. An element detached stands for the whole tuple (the
        usual ``(h, c)`` pair detaches both)."""
        target = receiver.value if isinstance(receiver, ast.Subscript) else receiver
        path = dotted(target)
        current = self.lookup(path) if path else None
        if path and current is not None:
            self.env[path] = evolve(current, graph=None)
            self.detached_paths.add(path)

    def emptied(self, path: str, container: Value, node: ast.Call) -> None:
        """``path.clear()``: what is stored afterwards is held only until the next clear,
        as if a fresh container had been bound here (``path = []``)."""
        loc = Loc(self.trace.function, node.lineno, node.col_offset, path)
        self.loc_loops[loc] = tuple(self.loops)
        self.env[path] = evolve(container, graph=None, locs=frozenset({loc}))

    def identity_of(self, container: Value, path: str | None) -> frozenset[Loc]:
        """The storage places a store into ``container`` (reached as ``path``) writes to.

        A container's identity is its own creation site: the ``Loc`` its variable was
        bound to. The other locs a value carries say which containers it was *read
        from* (``losses = loss_fn(**outputs)`` reads ``outputs``), which is not where a
        store into it goes. A variable bound in this function to something that is not a
        container literal (a dict a loss function returned, a loss tensor) is a place of
        its own, created where it was bound: inside the loop when bound in the iteration.
        """
        if path is None:
            return container.locs or frozenset({Loc(self.trace.function, 0, 0, "<container>")})
        own = frozenset(loc for loc in container.locs if loc.name == path)
        if own:
            return own
        if path in self.bound_loops:
            place = Loc(self.trace.function, 0, 0, path)
            self.loc_loops[place] = self.bound_loops[path]
            return frozenset({place})
        return container.locs or frozenset({Loc(self.trace.function, 0, 0, path)})

    def set_mode(self, path: str, fact: ModeFact | None) -> None:
        current = self.lookup(path) or self.resolve_path(path)
        if current is not None and current.kind in (Kind.MODEL, Kind.ENGINE):
            # a DeepSpeed engine switches the module it wraps
            self.env[path] = evolve(current, mode=fact)

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
        return evolve(value, attributes=tuple(sorted(merged.items())))

    def super_self(self) -> Value:
        """``super()`` in a method of a class derived from one of this file: ``self``,
        looked up from that base (``super().__init__(model, loader)`` builds on ``self``
        what the base's ``__init__`` builds)."""
        index = self.analyzer.index
        info = index.functions.get(self.trace.function)
        current = index.classes.get(info.class_name) if info and info.class_name else None
        receiver = self.lookup("self")
        if current is None or not current.local_bases or receiver is None:
            return UNKNOWN
        receiver = self.with_path_attributes("self", receiver)
        return evolve(receiver, class_name=current.local_bases[0])

    def super_path(self, node: ast.expr) -> str | None:
        """``self`` for a ``super()`` receiver: what the base's method assigns is on it."""
        is_super = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "super"
            and not node.args
        )
        return "self" if is_super and "self" in self.env else None

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
            if self.analyzer.launch is not None:
                value = with_constant_elements(value, len(target.elts))
            elements = value.elements
            for i, element in enumerate(target.elts):
                if isinstance(elements, tuple) and len(elements) == len(target.elts):
                    part = elements[i]
                elif value.kind is Kind.OPTIMIZER:
                    part = value  # ``opt_g, opt_d = self.optimizers()``: each one an optimizer
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
            if self.analyzer.launch is not None:
                self.folding.bindings.item_assigned(target, value)
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
        self.bound_loops[path] = tuple(self.loops)
        value = self.with_backward_proof(path, value, statement)
        if value.kind in (Kind.CONTAINER, Kind.SCALAR) or (
            value.kind is Kind.TENSOR and not value.graph
        ):
            line = getattr(statement, "lineno", 0)  # a comprehension's clause has none
            loc = Loc(self.trace.function, line, getattr(statement, "col_offset", 0), path)
            self.loc_loops[loc] = tuple(self.loops)
            value = evolve(value, locs=value.locs | {loc})
        previous = self.lookup(path)
        if (
            isinstance(statement, (ast.Assign, ast.AnnAssign))
            and previous is not None
            and previous.locs
            and value.graph
            and (previous.locs & value.locs)
            and _reads(statement.value, path)
            and path not in self.detached_paths
        ):
            # ``total = total + loss``: an accumulator, like ``total += loss``
            self.store(previous, value, statement, path, statement.value or target)
        if self.analyzer.launch is not None:
            value = self.folding.bound_constant(value)
        self.env[path] = value
        self.detached_paths.discard(path)

    def with_backward_proof(self, path: str, value: Value, statement: ast.AST) -> Value:
        """A value that ``backward()`` is later called on carries a graph: that is proof.

        Only for a ``backward()`` this binding can reach: one after it, and inside every
        loop that encloses the backward (a loop around the backward rebinds the name on
        each pass). The same name bound in another pass of a script — an evaluation loop
        before the training loop — is a different variable and proves nothing.
        """
        calls = self.backward_targets.get(path)
        if not calls or not self.grad_enabled or value.kind not in (None, Kind.TENSOR):
            return value
        line = getattr(statement, "lineno", 0)
        call = next(
            (c for c in calls if self._reaches(line, c.lineno) and backpropagates(self, c, path)),
            None,
        )
        if call is None:
            return value
        if value.graph is not None and value.graph_confidence is Confidence.HIGH:
            return value
        proof = Evidence(
            self.analyzer.lines.span(call),
            # a ``return`` a framework backpropagates (effects/driver.py)
            f"`{self.text(call)}`: the framework runs backward on what it returns, so `{path}` carries a graph"
            if isinstance(call, ast.Return)
            else f"`{self.text(call)}` is called on `{path}`, so it carries a graph",
        )
        return evolve(value, kind=Kind.TENSOR, graph=proof, graph_confidence=Confidence.HIGH)

    def _reaches(self, line: int, call_line: int) -> bool:
        """Whether a binding at ``line`` can still be the value read at ``call_line``."""
        if call_line < line:
            return False
        if self._loops_of_body is None:
            self._loops_of_body = self.analyzer.loop_lines(self.body)
        return all(
            start <= line <= end for start, end in self._loops_of_body if start <= call_line <= end
        )

    # --- statements -----------------------------------------------------------------
    def _exec_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.loop_runner.run_for(node)

    _exec_AsyncFor = _exec_For

    def _exec_While(self, node: ast.While) -> None:
        self.loop_runner.run_while(node)

    def _exec_Expr(self, node: ast.Expr) -> None:
        call = node.value
        if (
            isinstance(call, ast.Call)
            and self.qualified(call.func) == catalog.GRAD_SETTING
            and call.args
            and isinstance(literal(call.args[0]), bool)
        ):
            # ``torch.set_grad_enabled(False)`` as a statement: in force from here on
            self.grad_enabled = bool(literal(call.args[0]))
        self.evaluate(call)

    def _exec_Assign(self, node: ast.Assign) -> None:
        value = self.evaluate(node.value)
        guard = self.grad_mode_of(node.value) if self.grad_guards or _may_be_guard(node) else None
        for target in node.targets:
            if (path := dotted(target)) is not None:
                if guard is None:
                    self.grad_guards.pop(path, None)
                else:
                    self.grad_guards[path] = guard
        if (
            value.graph is not None
            and value.elements is None
            and any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets)
            and isinstance(node.value, ast.Call)
            and self.unseen_callee(node.value)
        ):
            # ``loss, loss_items = compute_loss(pred, targets)``: code we cannot see often
            # returns detached statistics next to its loss, so no element is proven to
            # carry the graph (the one that reaches backward() is proven by that call)
            value = evolve(value, kind=None, graph=None)
        for target in node.targets:
            self.assign(target, value, node)

    def unseen_callee(self, call: ast.Call) -> bool:
        """Whether ``call`` goes to code the analysis neither reads nor knows from the
        catalog: an object of an imported class, a callable from another module."""
        func = call.func
        name = self.qualified(func)
        if name is not None:
            return name.split(".")[0] not in ("torch", "builtins")
        if isinstance(func, ast.Name):
            found = self.lookup(func.id)
            if found is None:
                index = self.analyzer.index
                return not (
                    func.id in index.top_functions
                    or func.id in index.classes
                    or hasattr(builtins, func.id)
                )
            return found.kind is None and found.graph is None
        if isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)):
            receiver = self.evaluate(func.value)
            if receiver.kind in (Kind.INSTANCE, Kind.MODEL):
                stored = receiver.attribute(func.attr)  # ``self.compute_loss = LossFn(...)``
                return stored is not None and stored.kind is None and stored.graph is None
            if receiver.graph is not None or receiver.kind is not None:
                return False  # a tensor method, or a method of a value whose kind is known
            return self.evaluate(func).kind is None
        return False

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
        if isinstance(node.op, (ast.Div, ast.Mult)) and path.endswith((".grad", ".grad.data")):
            self.emit(EventKind.GRAD_SCALE, node)
        left = self.lookup(path) or UNKNOWN
        new = evolve(
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
        if self.analyzer.launch is not None:
            new = self.folding.bound_constant(self.folding.augmented_constant(node, left, new))
        self.env[path] = new

    def _exec_Return(self, node: ast.Return) -> None:
        value = self.evaluate(node.value) if node.value is not None else UNKNOWN
        self.returns.append(value)
        self.trace.returned_locs |= value.locs
        self.trace.returns_graph = self.trace.returns_graph or value.graph is not None
        self._stop()

    def _stop(self) -> None:
        """Launch mode: a plain launch leaves the function here (a ``raise``, an early
        ``return`` — ``if not (args.checkpoint_dir or args.resume): return``); what
        follows runs only with flags the defaults do not describe."""
        if self.analyzer.launch is not None and self.condition is PathCondition.DEFAULT:
            self.stopped = True
            self.condition = PathCondition.UNSURE  # dead code after it, in this block

    def _exec_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            path = dotted(target)
            if path:
                self.env.pop(path, None)

    def _exec_Raise(self, node: ast.Raise) -> None:
        self.evaluate(node.exc)
        self._stop()

    def _exec_Assert(self, node: ast.Assert) -> None:
        self.evaluate(node.test)

    def _exec_FunctionDef(self, node: ast.FunctionDef) -> None:
        info = self.analyzer.index.by_node.get(id(node))
        if info is not None:
            self.env[node.name] = Value(kind=Kind.FUNCTION, class_name=info.qualname)
            self.analyzer.note_closure(info.qualname, self.env)

    _exec_AsyncFunctionDef = _exec_FunctionDef

    def _exec_If(self, node: ast.If) -> None:
        test = self.evaluate(node.test)
        entry = self.condition
        body_condition = else_condition = entry
        if self.analyzer.launch is not None:
            body_condition, else_condition = (
                entry.worst(c)
                for c in branch_conditions(
                    node.test, self.folding.test_fact(node.test, test.constant)
                )
            )
        gate = Gate(
            self.analyzer.lines.head_span(node),
            self._is_modulo_test(node.test),
            self.loops[-1] if self.loops else None,
            body_condition if self.analyzer.launch is not None else None,
        )
        before = dict(self.env)
        self.gates.append(gate)
        stopped_before, self.stopped = self.stopped, False
        self.condition = body_condition
        self.execute(node.body)
        body_stopped, self.stopped = self.stopped, False
        after_body = self.env
        self.env = dict(before)
        self.condition = else_condition
        self.execute(node.orelse)
        self.condition = entry
        self.gates.pop()
        if self.analyzer.launch is not None:
            # the arm a plain launch takes stopped (``else: raise ValueError("give
            # --model")``, an early ``return``): the rest of this block runs only with flags
            self.stopped = stopped_before or body_stopped or self.stopped
            if self.stopped and not stopped_before:
                self.condition = entry.worst(PathCondition.UNSURE)
            taken = taken_branch(entry, (body_condition, after_body), (else_condition, self.env))
            if taken is not None:
                self.env = taken
                return
            self.folding.bindings.complete_attribute_bindings(before, after_body, self.env)
            # what flows through a branch holds only when the branch runs: a value set
            # before ``if use_cuda: device = "cuda"`` reaches the join through the ``else``
            after_body, self.env = (
                seen_through(after_body, body_condition, self.env),
                seen_through(self.env, else_condition, after_body),
            )
        self.env = _join_branches(after_body, self.env)

    def _is_modulo_test(self, test: ast.expr) -> bool:
        tests = self.analyzer.modulo_tests
        known = tests.get(id(test))
        if known is None:
            known = tests[id(test)] = _is_modulo_test(test)
        return known

    def _exec_Try(self, node: ast.Try) -> None:
        before = dict(self.env)
        stopped_before, condition_before = self.stopped, self.condition
        self.execute(node.body)
        self.execute(node.orelse)
        merged = self.env
        for handler in node.handlers:
            self.env = dict(before)
            self.execute(handler.body)
            merged = join_env(merged, self.env)
        self.env = merged
        if node.handlers:  # launch mode: a handler may catch what the body raised
            self.stopped, self.condition = stopped_before, condition_before
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
        saved_condition = self.condition
        for item in node.items:
            context = item.context_expr
            grad_mode = self.grad_mode_of(context)
            if grad_mode is not None:
                self.grad_enabled = grad_mode
            if grad_mode is False:  # launch mode: what runs here evaluates
                self.condition = self.condition.worst(PathCondition.VALIDATION)
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
        stopped_before = self.stopped
        self.execute(node.body)
        self.grad_enabled, self.in_accumulate = saved_grad, saved_accumulate
        self.condition = saved_condition
        if self.stopped and not stopped_before:  # launch mode: a raise or return in the block
            self.condition = saved_condition.worst(PathCondition.UNSURE)

    _exec_AsyncWith = _exec_With

    def grad_mode_of(self, context: ast.expr) -> bool | None:
        """The grad mode a context manager expression puts in force: False for
        ``torch.no_grad()`` and friends, True for ``enable_grad``, None for anything else.

        Followed through dataflow: a guard bound to a variable (``guard = torch.no_grad()``
        ... ``with guard:``) is the guard it was bound to, and a conditional guard that may
        disable gradients (``no_grad() if evaluating else nullcontext()``) counts as
        disabling them — when unsure, the rules that need a graph stay quiet.
        """
        if isinstance(context, ast.IfExp):
            arms = (self.grad_mode_of(context.body), self.grad_mode_of(context.orelse))
            return False if False in arms else None
        path = dotted(context)
        if path is not None and path in self.grad_guards:
            return self.grad_guards[path]
        func = context.func if isinstance(context, ast.Call) else context
        name = self.qualified(func) or dotted(func)
        if catalog.is_grad_disabling(name) and not (
            isinstance(context, ast.Call) and context.args and literal(context.args[0]) is False
        ):
            return False
        if name in catalog.GRAD_ENABLING:
            return True
        if name == catalog.GRAD_SETTING and isinstance(context, ast.Call) and context.args:
            flag = literal(context.args[0])
            return flag if isinstance(flag, bool) else None
        return None
