"""Which path of a script a value was read on, for the VRAM estimator's run configuration.

A value only describes the job when the code that holds it runs by default: with no
command-line flags, launched as ``python SCRIPT``. Each node the reader looks at gets a
:class:`~torchward.analysis.conditions.PathCondition` (the engine's vocabulary for it, and
the confidence it allows): its enclosing ``if`` / ``while`` tests decided by the defaults
(argparse defaults, module constants, environment variables a plain launch does not set;
a test naming a distributed set-up that does not hold is ``multi-gpu``, one the defaults
cannot decide ``unsure``), grad turned off around it (``with torch.no_grad()`` — recognised
by the engine's catalog, as the dataflow recognises it) or an evaluating function around
it (``validation``).

A function's condition is the best among its call sites in the file (a function nobody in
the file calls — a callback, an entry point — counts as default), followed three calls
deep. A class's ``__init__``, ``forward`` and ``__call__`` are not called by their names:
they take the condition of the places the class is built. In a loop, a ``step % N == 0``
test on a value the loop changes is a gate that opens during a launch.

A statement after one where a plain launch raises — ``if args.model is None: raise
ValueError(...)`` with the flag unset, a bare ``raise`` — never runs without flags: the
script needs them, and what it reads past that point holds for a launch with flags the
defaults do not describe (the branch the missing flag would have taken). It is
``unsure``: read, never with high confidence.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from . import catalog
from .conditions import PathCondition
from .launch_paths import evaluates, names_distributed_launch, periodic
from .names import dotted

if TYPE_CHECKING:
    from .runconfig_declarations import Values

__all__ = ["UNDECIDED", "PathConditions"]

UNDECIDED = object()
"""A condition whose value cannot be decided from the defaults."""

# shared singletons (``ast.Load()``...) and operators: no parent, nothing below them
_SKIPPED = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

#: methods nothing calls by their own name: ``C(...)`` runs ``__init__``, ``instance(...)``
#: runs ``forward`` (``nn.Module.__call__``) or ``__call__``
_RUN_THROUGH_THE_CLASS = ("__init__", "forward", "__call__")


def _disables_grad(context: ast.expr) -> bool:
    """``torch.no_grad()``, ``inference_mode()``, ``set_grad_enabled(False)`` and wrappers
    named after them, in either arm of a conditional: the engine's catalog decides, as in
    :meth:`~torchward.analysis.interpreter.FunctionRun.grad_mode_of` (names unresolved:
    the reader has no import table, and the catalog's leaf-name test needs none)."""
    if isinstance(context, ast.IfExp):
        return _disables_grad(context.body) or _disables_grad(context.orelse)
    func = context.func if isinstance(context, ast.Call) else context
    name = dotted(func)
    if catalog.is_grad_disabling(name):
        return True
    return (
        (name or "").endswith("set_grad_enabled")
        and isinstance(context, ast.Call)
        and bool(context.args)
        and isinstance(context.args[0], ast.Constant)
        and context.args[0].value is False
    )


def _may_raise(statement: ast.stmt) -> bool:
    """A ``raise`` at the top level of an arm of ``statement``'s ``if`` / ``elif`` chain."""
    if isinstance(statement, ast.Raise):
        return True
    return isinstance(statement, ast.If) and any(
        _may_raise(s) for s in (*statement.body, *statement.orelse)
    )


class PathConditions:
    """Path states of the nodes of one module (parents and call sites indexed once)."""

    def __init__(self, tree: ast.Module, values: Values) -> None:
        self.values = values
        self.parents: dict[int, ast.AST] = {}
        self.calls_by_name: dict[str, list[ast.Call]] = {}
        # every node in ast.walk's (breadth-first) order, each child indexed as it is queued:
        # one pass over the tree per script
        self.nodes: list[ast.AST] = [tree]
        parents, nodes = self.parents, self.nodes
        for node in nodes:  # grows as it goes: a breadth-first queue
            for field in node._fields:
                child = getattr(node, field, None)
                if isinstance(child, list):
                    for item in child:
                        if isinstance(item, ast.AST) and not isinstance(item, _SKIPPED):
                            parents[id(item)] = node
                            nodes.append(item)
                elif isinstance(child, ast.AST) and not isinstance(child, _SKIPPED):
                    parents[id(child)] = node
                    nodes.append(child)
            if isinstance(node, ast.Call):
                func = node.func
                name = (
                    func.id
                    if isinstance(func, ast.Name)
                    else func.attr
                    if isinstance(func, ast.Attribute)
                    else None
                )
                if name:
                    self.calls_by_name.setdefault(name, []).append(node)
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Name):  # a function passed as a callback (spawn)
                        self.calls_by_name.setdefault(arg.id, []).append(node)
        self._function_states: dict[int, PathCondition] = {}
        self._states: dict[int, PathCondition] = {}
        self._functions: dict[int, ast.AST | None] = {}
        self._in_progress: set[int] = set()  # states being computed (their guards answer)
        self._bases: set[str] | None = None  # the names the file's classes subclass
        self._loops: dict[int, tuple[ast.For | ast.AsyncFor | ast.While, ...]] = {}
        self._distributed: dict[int, bool] = {}  # test → whether it names a distributed launch
        # block → (statement id → its index, index of the first statement where a plain
        # launch raises, or None)
        self._raises: dict[int, tuple[dict[int, int], int | None]] = {}

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def loops_around(self, node: ast.AST) -> tuple[ast.For | ast.AsyncFor | ast.While, ...]:
        """The loops of ``node``'s own function (or the module) that run ``node`` once per
        iteration, innermost first: a ``for``'s iterable is evaluated once, before its loop."""
        key = id(node)
        known = self._loops.get(key)
        if known is None:
            found: list[ast.For | ast.AsyncFor | ast.While] = []
            child, current = node, self.parent(node)
            while current is not None and not isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            ):
                if isinstance(current, ast.While) or (
                    isinstance(current, (ast.For, ast.AsyncFor)) and child is not current.iter
                ):
                    found.append(current)
                child, current = current, self.parent(current)
            known = self._loops[key] = tuple(found)
        return known

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        key = id(node)
        if key not in self._functions:
            current = self.parent(node)
            while current is not None and not isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef)
            ):
                current = self.parent(current)
            self._functions[key] = current
        return self._functions[key]  # type: ignore[return-value]

    def state(self, node: ast.AST, depth: int = 0) -> PathCondition:
        """The path state of ``node`` (see the module docstring)."""
        key = id(node)
        if key in self._in_progress:
            self.values.cycles += 1  # a condition that depends on itself: provisional
        if key not in self._states:
            self._states[key] = PathCondition.DEFAULT
            self._in_progress.add(key)
            self._states[key] = self._state(node, depth)
            self._in_progress.discard(key)
        return self._states[key]

    def _state(self, node: ast.AST, depth: int) -> PathCondition:
        state = PathCondition.DEFAULT
        child, current = node, self.parent(node)
        while current is not None:
            if isinstance(child, ast.stmt) and self._after_a_default_raise(current, child):
                state = state.worst(PathCondition.UNSURE)
            if isinstance(current, (ast.If, ast.IfExp, ast.While)) and child is not current.test:
                in_body = child in (
                    current.body if isinstance(current.body, list) else [current.body]
                )
                state = state.worst(self._branch(current.test, in_body))
            elif isinstance(current, (ast.With, ast.AsyncWith)):
                if any(_disables_grad(item.context_expr) for item in current.items):
                    state = state.worst(PathCondition.VALIDATION)
            elif isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # by name, not ``@torch.no_grad()``: in an inference script that is the job
                if evaluates(current.name):
                    state = state.worst(PathCondition.VALIDATION)
                return state.worst(self._function_state(current, depth))
            elif isinstance(current, ast.ClassDef):
                return state
            if state is PathCondition.OFF:
                return state
            child, current = current, self.parent(current)
        return state

    def _after_a_default_raise(self, parent: ast.AST, statement: ast.stmt) -> bool:
        """Whether an earlier statement of ``statement``'s block raises on a plain launch
        (see the module docstring)."""
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list) or not block:
                continue
            known = self._raises.get(id(block))
            if known is None:
                known = self._raises[id(block)] = (
                    {id(s): i for i, s in enumerate(block)},
                    next((i for i, s in enumerate(block) if self._raises_by_default(s)), None),
                )
            index = known[0].get(id(statement))
            if index is not None:
                return known[1] is not None and known[1] < index
        return False

    def _raises_by_default(self, statement: ast.stmt) -> bool:
        """``raise``, or an ``if`` whose arm a plain launch takes raises (an ``elif``
        chain's last ``else: raise`` included)."""
        if isinstance(statement, ast.Raise):
            return True
        if not isinstance(statement, ast.If) or not _may_raise(statement):
            return False  # no test decided for nothing: deciding one may follow names far
        return any(
            self._branch(statement.test, in_body) is PathCondition.DEFAULT
            and any(self._raises_by_default(s) for s in arm)
            for arm, in_body in ((statement.body, True), (statement.orelse, False))
        )

    def _function_state(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, depth: int
    ) -> PathCondition:
        key = id(function)
        if key in self._in_progress:
            self.values.cycles += 1  # recursion: the guard's answer is provisional
        if key in self._function_states:
            return self._function_states[key]
        self._function_states[key] = PathCondition.DEFAULT  # recursion guard
        self._in_progress.add(key)
        calls = [
            c
            for c in self.calls_by_name.get(function.name, ())
            if not self._within(c, function)  # a recursive (or same-named) call inside it
        ]
        owner = self.parent(function)
        method = isinstance(owner, ast.ClassDef)
        if method and function.name in _RUN_THROUGH_THE_CLASS:
            built = self._built(owner, function)  # type: ignore[arg-type]
            if function.name == "__init__":
                calls = []  # ``super().__init__()`` elsewhere is another class's
            # a class nobody in the file builds by name is built elsewhere (a registry, a
            # subclass): it may run on any path, so the default
            calls = calls + built if built is not None else []
        if (
            not calls
            and method
            and not function.name.startswith("__")
            and function.name != "forward"
        ):
            result = PathCondition.UNSURE  # a method nobody in the file calls: may never run
        elif not calls or depth >= 3:
            result = PathCondition.DEFAULT
        else:
            result = PathCondition.best(self.state(call, depth + 1) for call in calls)
        self._function_states[key] = result
        self._in_progress.discard(key)
        return result

    def _built(
        self, owner: ast.ClassDef, method: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> list[ast.Call] | None:
        """Where ``owner`` is built, standing for where its instances are called too (a
        module is called on the path that built it, as far as a plain launch goes): its
        ``forward`` or ``__init__`` is not reached only through calls by that name
        (``self.forward(...)`` in an off-by-default ``generate``). None when the file
        never builds it by name or subclasses it: nothing here says when it runs."""
        if self._bases is None:
            self._bases = {
                base.id
                for node in self.nodes
                if isinstance(node, ast.ClassDef)
                for base in node.bases
                if isinstance(base, ast.Name)
            }
        if owner.name in self._bases:
            return None
        # a factory of the class's own counts (``GPT.from_pretrained`` builds ``GPT(config)``)
        built = [c for c in self.calls_by_name.get(owner.name, ()) if not self._within(c, method)]
        return built or None

    def _within(self, node: ast.AST, ancestor: ast.AST) -> bool:
        current = self.parent(node)
        while current is not None:
            if current is ancestor:
                return True
            current = self.parent(current)
        return False

    def _branch(self, test: ast.expr, in_body: bool) -> PathCondition:
        value = self.values.decide(test)
        if value is not UNDECIDED and bool(value) == in_body:
            return PathCondition.DEFAULT
        key = id(test)
        if key not in self._distributed:  # a pure function of the test: asked per node below
            self._distributed[key] = names_distributed_launch(test)
        distributed = self._distributed[key]
        if value is UNDECIDED and periodic(test) and self.loops_around(test):
            return PathCondition.DEFAULT  # every N steps: both arms run during a launch
        if value is UNDECIDED:
            return PathCondition.MULTI_GPU if distributed and in_body else PathCondition.UNSURE
        return PathCondition.MULTI_GPU if distributed else PathCondition.OFF
