"""What a name a function does not bind holds, for the launch on demand
(:mod:`.launch_demand`): a parameter, what its call sites pass (each call a context of its
own, joined; ``mp.spawn`` as ``worker(0, *args)``; ``f(**config)`` from the dict's items)
or its default; otherwise the closure's, then the module's as the call sees it (a global
another function rebinds, that function's where it made the call).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..facts.conditions import PathCondition
from ..facts.constants import UNDECIDED, ConstantFact, is_items, join_constants
from ..syntax.names import dotted
from .launch_demand_memo import MAX_CONTEXT, CallSite, Context, Cycle, depth

if TYPE_CHECKING:
    from ..facts.semantic import FunctionInfo
    from .launch_demand import DemandLaunch
    from .launch_demand_state import DemandState

__all__ = ["SPAWNERS", "Entry", "spawned"]

SPAWNERS = ("spawn", "start_processes")  # ``torch.multiprocessing``'s, by their leaf name


class Entry:
    """A function's entry values for :class:`~.launch_demand.DemandLaunch`."""

    def __init__(self, state: DemandState, launch: DemandLaunch) -> None:
        self.state = state
        self.launch = launch  # the questions, and the other collaborators it holds

    def at_entry(
        self, name: str, scope: FunctionInfo | None, context: Context
    ) -> ConstantFact | None:
        """A name its block does not bind: a parameter, the closure's, the module's — the
        same at every read of the function that no binding precedes, so kept once per
        function and context."""
        if scope is None:
            return None
        return self.state.guarded(
            ("entry", name, id(scope.node), context),
            lambda: self._entry_value(name, scope, context),
        )

    def _entry_value(self, name: str, scope: FunctionInfo, context: Context) -> ConstantFact | None:
        function = scope.node
        parameters = self.state.places.parameters(function)
        if name in parameters.variadic:
            return self.launch.names.undecided_at(function, scope, context)
        if name in parameters.names:
            return self._parameter(name, scope, context)
        outer = self.state.places.scope_of(function)
        if outer is not None:  # the closure: what the enclosing function held at the ``def``
            return self.launch.names.value_before(name, function, outer, None)
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
        if self.state.places.rebinders(name):
            found = self._rebound_global(name, scope, context)
            if found is not None:
                return found
        outermost = None
        while context is not None:
            outermost, context = context, context.outer
        if outermost is not None and outermost.caller is None:
            return self.launch.names.value_before(name, outermost.statement, None, None)
        body = self.state.tree.body
        return self.state.guarded(
            ("module", name),
            lambda: self.launch.names.scan(name, body, len(body), lambda: None, None, None),
        )

    def _rebound_global(
        self, name: str, scope: FunctionInfo, context: Context
    ) -> ConstantFact | None:
        rebinders = self.state.places.rebinders(name)
        inner = context
        while inner is not None:
            _call, statement, outer, caller = inner
            if caller is None:
                return None  # called from the module's own code: the module's value
            if id(caller.node) in rebinders:
                return self.launch.names.value_before(name, statement, caller, outer)
            inner = outer
        if context is not None:
            return None
        found: ConstantFact | None = None
        for call, statement, caller in self.launch.conditions.call_sites(scope):
            site = CallSite(call, statement, None, caller)
            if caller is None or depth(site) > MAX_CONTEXT:
                continue
            try:
                found = join_constants(
                    found,
                    self._module_value(name, caller, site)
                    if id(caller.node) not in rebinders
                    else self.launch.names.value_before(name, statement, caller, None),
                )
            except Cycle:
                continue
        return found

    def _parameter(self, name: str, scope: FunctionInfo, context: Context) -> ConstantFact | None:
        if context is not None:
            return self._argument(name, scope, context)
        found: ConstantFact | None = None
        sites = list(self.launch.conditions.call_sites(scope))
        for call, statement, caller in sites:
            inner = CallSite(call, statement, None, caller)
            if depth(inner) > MAX_CONTEXT:
                continue
            try:
                found = join_constants(found, self._argument(name, scope, inner))
            except Cycle:
                continue
        if not sites:
            return self._argument(name, scope, None)
        return found

    def _argument(self, name: str, scope: FunctionInfo, context: Context) -> ConstantFact | None:
        """What the call ``context`` names passes as ``name`` (its default when nothing)."""
        function = scope.node
        entry = self.launch.conditions.entry_condition(scope, context)
        if context is not None and spawned(context.call, function.name):
            call, statement, outer, caller = context
            return self._spawned_argument(name, function, context, entry)
        if context is not None:
            call, statement, outer, caller = context
            positional = self.state.places.parameters(function).positional
            if scope.is_method and (
                isinstance(call.func, ast.Attribute) or self._constructs(call, scope)
            ):
                positional = positional[1:]
            argument = next((k.value for k in call.keywords if k.arg == name), None)
            if argument is None and name in positional:
                index = positional.index(name)
                if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                    return ConstantFact(
                        UNDECIDED,
                        self.launch.run_at(statement, caller, outer)._evidence(call),
                        entry,
                    )
                if index < len(call.args):
                    argument = call.args[index]
            if argument is not None:
                return self.launch.fold(argument, statement, caller, outer).under(entry)
            for spread in (k.value for k in call.keywords if k.arg is None):
                # ``f(**config)``: the dict's item, when the launch knows the dict
                items = self.launch.fold(spread, statement, caller, outer)
                if not is_items(items.value):
                    return ConstantFact(UNDECIDED, items.evidence, entry)
                for key, item in items.value:  # type: ignore[misc]
                    if key == name:
                        return ConstantFact(item, items.evidence, items.condition).under(entry)
        defaults = self.state.places.parameters(function).defaults
        if name in defaults:
            return self.launch.fold(
                defaults[name], function, self.state.places.scope_of(function), None
            ).under(entry)
        return ConstantFact(
            UNDECIDED, self.launch.run_at(function, scope, context)._evidence(function), entry
        )

    def _spawned_argument(
        self,
        name: str,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        context: CallSite,
        entry: PathCondition,
    ) -> ConstantFact:
        """A worker ``mp.spawn(worker, args=(a, b))`` starts: ``worker(0, a, b)`` on a plain
        launch's one process (rank 0), as the forward launch runs it."""
        call, statement, outer, caller = context
        run = self.launch.run_at(statement, caller, outer)
        positional = self.state.places.parameters(function).positional
        if name in positional and positional.index(name) == 0:
            return ConstantFact(0, run._evidence(call), entry)
        passed = next((k.value for k in call.keywords if k.arg == "args"), None)
        index = positional.index(name) - 1 if name in positional else -1
        if isinstance(passed, ast.Tuple) and 0 <= index < len(passed.elts):
            return self.launch.fold(passed.elts[index], statement, caller, outer).under(entry)
        return ConstantFact(UNDECIDED, run._evidence(call), entry)

    def _constructs(self, call: ast.Call, scope: FunctionInfo) -> bool:
        return scope.class_name is not None and dotted(call.func) == scope.class_name


def spawned(call: ast.Call, worker: str) -> bool:
    """``call`` spawns processes running ``worker`` (``mp.spawn(worker, ...)``)."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return called in SPAWNERS and bool(call.args) and dotted(call.args[0]) == worker
