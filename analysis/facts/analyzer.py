"""The file-level driver: which functions to analyse, in which contexts, and summaries.

Analysis starts at the module body, so ``main()`` and everything it calls are analysed
with the values their callers actually pass (a model built by ``Net()``, a loader with
a ``DistributedSampler``). A call to a local function is analysed in the caller's
context and memoised by its argument values; its *summary* (what it returns, which
training events it causes, which models it switches to eval mode) is replayed at the
call site. Functions that nothing in the file calls — entry points called by a
framework or another module — are analysed afterwards on their own, with parameters
typed by annotation or, as a last resort, by name (:mod:`torchward.analysis.facts.fallback`).

Past 400 lines for now: the call-site memo, the replay of summaries and the cache keys
share one object's state (what was called, backwarded, switched), and splitting them
would pass that state around by hand. The cache keys of the incremental cache live in
:mod:`.fingerprints`, and launch mode's driving policy in :mod:`.launch_driver`.
"""

from __future__ import annotations

import ast
import functools

import attrs

from .. import effects as adapters
from ..effects.driver import drive_hook
from ..effects.table import token as effects_token
from ..finding import Evidence
from ..syntax.names import qualified_name
from ..syntax.positions import LineIndex
from . import catalog
from .binding import bind_parameters, class_fields, parameter_names
from .conditions import PathCondition
from .events import Event, EventKind, Gate, Trace
from .fingerprints import Fingerprints
from .interpreter import FunctionRun
from .launch_driver import LaunchDriver, LaunchInputs
from .launch_paths import LaunchFacts
from .owncode import own_code_index
from .relevance import (
    TRAINING_KINDS,
    callers_first,
    functions_worth_analysing,
    is_other_framework,
    training_import_aliases,
)
from .semantic import FunctionInfo, ModuleIndex, mentions_training_words
from .summaries import Entry, SummaryCache
from .values import UNKNOWN, DatasetFacts, Kind, Loc, ModeFact, ModelFacts, Value, evolve

MAX_CALL_DEPTH = 8
MAX_CONTEXTS = 4  # precise calling contexts analysed per function
_REPLAYED = {
    EventKind.BACKWARD,
    EventKind.STEP,
    EventKind.ZERO_GRAD,
    EventKind.MODE,
    EventKind.GRAD_CALL,
    EventKind.GRAD_SCALE,
    EventKind.DDP_WRAP,
    EventKind.SCHEDULER_STEP,
    EventKind.SCALER_SCALE,
    EventKind.SCALER_UNSCALE,
    EventKind.SCALER_STEP,
    EventKind.CLIP_GRAD,
    EventKind.SET_EPOCH,
    EventKind.ITERATE,  # replayed as ITERATE_IN_CALL
    EventKind.FORWARD,  # ``self.compute_loss(batch)`` runs the model in the caller's loop
    EventKind.OPTIMIZER_BUILT,  # ``self.train_one_epoch()`` builds its optimizer per epoch
}


@attrs.frozen
class Summary:
    returned: Value
    events: tuple[Event, ...] = ()
    final_modes: tuple[
        tuple[str, ModeFact | None], ...
    ] = ()  # parameter or self.attr -> mode at exit
    final_self: Value | None = None


UNKNOWN_SUMMARY = Summary(evolve(UNKNOWN, scaled=None))


class FileAnalyzer:
    # the path evidence names: set when the analysis links other modules (their evidence
    # must say which file it is in), None otherwise (the finding's own file)
    evidence_path: str | None = None

    def __init__(
        self,
        tree: ast.Module,
        source: str,
        path: str,
        cache: SummaryCache | None = None,
        *,
        launch: LaunchInputs | None = None,
    ) -> None:
        self.path = path
        # launch mode (:mod:`.launch`), given what the launch reads besides the script: how
        # it drives this analysis, and the constants and path conditions it records by
        # node (both None in a lint)
        self.launch_driver = LaunchDriver(self, launch) if launch is not None else None
        self.launch: LaunchFacts | None = self.launch_driver.facts if self.launch_driver else None
        self.cache = cache
        self._recorders: list[list[tuple]] = []
        self._module_done = False
        self.fingerprints = Fingerprints(self)
        self.tree = tree
        self.source = source
        # Most files of a large tree mention no training word: they are parsed (for syntax
        # errors) and never indexed or interpreted.
        self.relevant = launch is not None or (
            mentions_training_words(source) and not is_other_framework(self.index.imports)
        )
        # calls into the project's other modules (``from helpers import train_step``)
        from ..workspace.linking import link  # the workspace package builds on this module

        self.project = None if launch is not None else link(self)
        if self.project is not None:
            self.evidence_path = path
        if not self.relevant and self.project is not None:
            self.relevant = self.project.imports_training_code()
        self.traces: list[Trace] = []
        self.backwarded_locs: set[Loc] = set()
        self.closures: dict[str, dict[str, Value]] = {}
        self.called: set[str] = set()
        self.analyzed: set[str] = set()
        self._memo: dict[tuple, tuple[Summary, Trace]] = {}
        self._registered: set[int] = set()
        self._stack: list[str] = []
        self._contexts: dict[str, int] = {}
        # body -> (backward targets, loop lines) (:meth:`_own_code`), and the lines that
        # hold ``backward`` (computed when first needed)
        self._backward_lines: list[int] | None = None
        self._own_code_cache: dict[
            int, tuple[dict[str, tuple[ast.Call, ...]], list[tuple[int, int]]]
        ] = {}
        # ``if`` test node id -> whether it tests a modulo (a step gate), walked once
        self.modulo_tests: dict[int, bool] = {}
        self._instances: dict[tuple, Value] = {}
        self.module_run: FunctionRun | None = None

    @functools.cached_property
    def index(self) -> ModuleIndex:
        return ModuleIndex(self.tree, self.source)

    @functools.cached_property
    def lines(self) -> LineIndex:
        return LineIndex(self.source)

    # --- driving ----------------------------------------------------------------------
    def run(self) -> None:
        if not self.relevant:
            return  # nothing in the file can trigger a rule: parse-only
        trace = Trace("<module>")
        env = self.run_module_body(trace, self.tree.body)
        self.traces.append(trace)
        kinded = frozenset(name for name, value in env.items() if value.kind in TRAINING_KINDS)
        kinded |= training_import_aliases(self.index)
        if self.project is not None:
            kinded |= self.project.training_names()
        if self.launch_driver is not None:
            self.launch_driver.run_entries()  # and the rest when asked about
            return
        worth = functions_worth_analysing(self.index, kinded)
        for info in callers_first(self.index, worth):
            if info.qualname not in self.analyzed:
                self.analyze_entry(info, info.class_name)
        self._analyze_inherited_entries()
        if self.project is not None:
            self.project.finish()

    def run_module_body(self, trace: Trace, body: list[ast.stmt]) -> dict[str, Value]:
        """Run the module's top-level statements: the globals its functions see."""
        self.module_run = FunctionRun(self, trace, body, env={}, outer={}, grad_enabled=True)
        self.module_run.run()
        self._module_done = True
        return self.module_run.env

    def backward_targets(self, body: list[ast.stmt]) -> dict[str, tuple[ast.Call, ...]]:
        """Names ``body`` calls ``backward`` on; computed once per body, not per context."""
        return self._own_code(body)[0]

    def loop_lines(self, body: list[ast.stmt]) -> list[tuple[int, int]]:
        """The line ranges of ``body``'s loops; walked once per body, not per context."""
        return self._own_code(body)[1]

    def _own_code(
        self, body: list[ast.stmt]
    ) -> tuple[dict[str, tuple[ast.Call, ...]], list[tuple[int, int]]]:
        """Both of the above, from one walk of the body (:func:`own_code_index`)."""
        key = id(body[0]) if body else 0
        known = self._own_code_cache.get(key)
        if known is None:
            if self._backward_lines is None:
                self._backward_lines = [
                    number
                    for number, line in enumerate(self.index.source_lines, start=1)
                    if "backward" in line
                ]
            known = self._own_code_cache[key] = own_code_index(body, self._backward_lines)
        return known

    def mentions(self, body: list[ast.stmt], word: str) -> bool:
        """Whether the source lines of ``body`` contain ``word`` (a cheap pre-test)."""
        if not body:
            return False
        start, end = body[0].lineno - 1, getattr(body[-1], "end_lineno", body[-1].lineno)
        return any(word in line for line in self.index.source_lines[start:end])

    # --- effects on the file-level state (recorded for the incremental cache) --------
    def _record(self, effect: tuple) -> None:
        if self._recorders:
            self._recorders[-1].append(effect)

    def note_called(self, qualname: str) -> None:
        self.called.add(qualname)
        self._record(("called", qualname))

    def note_backwarded(self, locs: frozenset[Loc]) -> None:
        if locs:
            self.backwarded_locs |= locs
            self._record(("backwarded", locs))

    def note_closure(self, qualname: str, env: dict[str, Value]) -> None:
        self.closures[qualname] = env
        self.fingerprints.note_scope(env)
        self._record(("closure", qualname, env))

    def globals(self) -> dict[str, Value]:
        return self.module_run.env if self.module_run else {}

    def analyze_entry(self, info: FunctionInfo, class_name: str | None) -> None:
        """A function nothing analysed so far has called, as its caller outside the file
        runs it (``class_name``: the class whose instance it is called on)."""
        plan = adapters.framework_hook(self.index, info)
        if plan is not None and class_name is not None:
            # called once per batch by a framework: run inside a loop standing for its own
            drive_hook(self, info, plan, class_name)
        else:
            self.analyze_standalone(info, class_name)

    def analyze_standalone(self, info: FunctionInfo, class_name: str | None = None) -> None:
        """``info`` as a framework or another module calls it: with no arguments from the
        file, and ``self`` built by ``__init__`` of ``class_name`` (its own class by default)."""
        self_value = None
        driver = self.launch_driver
        if info.is_method and info.class_name:
            owner = class_name or info.class_name
            self_value = driver.entry_self(owner) if driver else self.entry_instance(owner, info)
        self.invoke(
            info,
            [],
            {},
            self_value,
            grad_enabled=True,
            record=True,
            condition=driver.uncalled(info) if driver else PathCondition.DEFAULT,
        )

    def entry_instance(self, class_name: str, entry: FunctionInfo) -> Value:
        """``self`` as an entry point no caller in the file reaches finds it: built by
        ``__init__``, then by ``setup()``, which whoever calls the entry point (a script
        elsewhere, a framework: Lightning calls ``setup(stage)`` before training) runs
        first, so what it builds on ``self`` is what the step reads."""
        instance = self.instantiate(class_name, None, {}, None, None)
        setup = self.index.find_method(class_name, "setup")
        if setup is None or setup is entry or entry.node.name == "__init__":
            return instance
        summary = self.invoke(setup, [], {}, instance, grad_enabled=True, record=True)
        return summary.final_self or instance

    def _analyze_inherited_entries(self) -> None:
        """An entry point a subclass inherits (``BaseTrainer.fit``), analysed again with the
        subclass's ``self``: its loop then calls the subclass's overrides
        (``training_step``) and sees what the subclass's ``__init__`` built."""
        for class_name in self.index.subclasses():
            for info in self.index.inherited_methods(class_name):
                if info.qualname in self.analyzed and info.qualname not in self.called:
                    self.analyze_entry(info, class_name)

    # --- calls ----------------------------------------------------------------------
    def call_function(
        self,
        caller: FunctionRun,
        info: FunctionInfo,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.Call,
        self_value: Value | None,
        receiver_path: str | None,
        owner: FileAnalyzer | None = None,
    ) -> Value:
        """``info`` called from ``caller``; ``owner``: the analyzer of the other project
        module that defines it (:mod:`.workspace.linking`), None for this file's own."""
        if owner is None:
            self.note_called(info.qualname)
        summary = (owner or self).invoke(
            info,
            args,
            kwargs,
            self_value,
            caller.grad_enabled,
            caller.recording,
            condition=caller.condition,
        )
        call_span = self.lines.span(node)
        name = info.qualname.split(".<locals>.")[-1]
        where = owner.evidence_path if owner is not None else None
        for event in summary.events:
            if not caller.recording:
                break
            if event.kind is EventKind.ITERATE and not _trains(event, summary.events):
                continue  # an evaluation loop's loader: iterated, never trained on
            if event.kind in _REPLAYED:
                caller.trace.events.append(self._replayed(caller, event, call_span, name, where))
            elif _outlives_the_call(event, info):
                replayed = self._replayed(caller, event, call_span, name, where)
                if replayed.store is not None and event.loc is not None:
                    created = caller.loc_loops.get(event.loc, ())
                    replayed = evolve(replayed, store=evolve(replayed.store, created_loops=created))
                caller.trace.events.append(replayed)
        if receiver_path and self_value is not None and summary.final_self is not None:
            _transfer_attributes(caller, receiver_path, self_value, summary.final_self)
        self._transfer_modes(caller, info, summary, node, receiver_path, name)
        return summary.returned

    def _replayed(
        self, caller: FunctionRun, event: Event, call_span, name: str, where: str | None = None
    ) -> Event:
        """``event`` of a called helper as the caller sees it; ``where``: the helper's file
        when it is another module (its gates then stand at the call, in this file)."""
        innermost = caller.loops[-1] if caller.loops else None
        inherited = tuple(
            Gate(call_span if where else g.span, g.is_modulo, innermost)
            for g in event.gates
            if g.loop is None
        )
        step = Evidence(
            event.span, f"in `{name}`: {event.kind.value.replace('_', ' ')} here", where
        )
        kind = EventKind.ITERATE_IN_CALL if event.kind is EventKind.ITERATE else event.kind
        return evolve(
            event,
            kind=kind,
            span=call_span,
            loops=tuple(caller.loops),
            gates=tuple(caller.gates) + inherited,
            grad_enabled=event.grad_enabled and caller.grad_enabled,
            via=(step,) + event.via,
            in_accumulate=event.in_accumulate or caller.in_accumulate,
            in_helper_loop=bool(event.loops) or event.in_helper_loop,
        )

    def _transfer_modes(
        self,
        caller: FunctionRun,
        info: FunctionInfo,
        summary: Summary,
        node: ast.Call,
        receiver_path: str | None,
        name: str,
    ) -> None:
        if not summary.final_modes:
            return
        params = parameter_names(info)
        bound: dict[str, str] = {}
        if receiver_path:
            bound["self"] = receiver_path
        offset = 1 if info.is_method else 0
        for i, arg in enumerate(node.args):
            if i + offset < len(params) and (path := _dotted(arg)):
                bound[params[i + offset]] = path
        for kw in node.keywords:
            if kw.arg and (path := _dotted(kw.value)):
                bound[kw.arg] = path
        for key, fact in summary.final_modes:
            head, _, rest = key.partition(".")
            if head not in bound:
                continue
            target = bound[head] + ("." + rest if rest else "")
            if fact is not None:
                message = f"`{caller.text(node)}` leaves it in {fact.mode.value} mode ({fact.evidence.message}, line {fact.evidence.span.line})"
                fact = ModeFact(
                    fact.mode,
                    Evidence(self.lines.span(node), message),
                    tuple(caller.loops),
                    caller.trace.function,
                )
            caller.set_mode(target, fact)

    def invoke(
        self,
        info: FunctionInfo,
        args: list[Value],
        kwargs: dict[str, Value],
        self_value: Value | None,
        grad_enabled: bool,
        record: bool,
        condition: PathCondition = PathCondition.DEFAULT,
    ) -> Summary:
        """The summary of ``info`` called with these values (memoised, and cached across
        analyses when a :class:`SummaryCache` is in use); ``condition``: the launch path
        condition of the call (launch mode only; always the default in a lint run)."""
        summary = self._invoke(info, args, kwargs, self_value, grad_enabled, record, condition)
        call = (
            info.qualname,
            tuple(args),
            tuple(sorted(kwargs.items())),
            self_value,
            grad_enabled,
            record,
        )
        self._record(("invoke", call, summary))
        return summary

    def _invoke(
        self,
        info: FunctionInfo,
        args: list[Value],
        kwargs: dict[str, Value],
        self_value: Value | None,
        grad_enabled: bool,
        record: bool,
        condition: PathCondition,
    ) -> Summary:
        grad = self._grad_mode(info, grad_enabled)
        driver = self.launch_driver
        if driver is not None:
            condition = driver.body_condition(info, grad, condition)
            if driver.skips(info, condition):
                return UNKNOWN_SUMMARY
            dominated = driver.dominated(info, condition)
            if dominated is not None:
                return dominated
        key = (info.qualname, self_value, tuple(args), tuple(sorted(kwargs.items())), grad)
        if key in self._memo and (driver is None or driver.already_analysed(key, condition)):
            summary, trace = self._memo[key]
            if record:
                self._register(info, trace)
            return summary
        if info.qualname in self._stack or len(self._stack) >= MAX_CALL_DEPTH:
            return UNKNOWN_SUMMARY
        contexts = self._contexts.get(info.qualname, 0)
        if contexts >= MAX_CONTEXTS and (args or kwargs):
            # Enough precise contexts: further callers share one analysis with unknown
            # arguments, so a helper called from 200 places costs a bounded amount.
            return self.invoke(
                info,
                [],
                {},
                self_value and _bare(self_value),
                grad_enabled,
                record,
                condition=condition,
            )
        self._contexts[info.qualname] = contexts + 1
        cache = self.cache
        cache_key = (
            (effects_token(), self.fingerprints.key(info, key)) if cache is not None else None
        )  # a function analysed under a project's library-effects table is another entry
        if cache is not None and cache_key is not None:
            entry = cache.get(cache_key)
            if entry is not None and self._replay(info, entry):
                cache.hits += 1
                self._memo[key] = (entry.summary, entry.trace)
                if record:
                    self._register(info, entry.trace)
                return entry.summary
            cache.misses += 1
        env = bind_parameters(info, args, kwargs, self_value, self.index.imports)
        trace = Trace(info.qualname, contextual=bool(args or kwargs))
        outer = self.closures.get(info.qualname)
        run = FunctionRun(
            self,
            trace,
            info.node.body,
            env=env,
            outer=outer if outer is not None else {},
            grad_enabled=grad,
            params=frozenset(env),
            condition=condition,
        )
        if driver is not None:
            run.bind_default_constants(info, len(args), kwargs)
        effects: list[tuple] = []
        self._stack.append(info.qualname)
        self._recorders.append(effects)
        try:
            run.run()
        finally:
            self._recorders.pop()
            self._stack.pop()
        summary = self._summarise(run, env, self_value)
        self._memo[key] = (summary, trace)
        if driver is not None:
            driver.analysed(key, info, condition, summary)
        if cache is not None and cache_key is not None:
            cache.put(cache_key, Entry(summary, trace, effects))
        if record:
            self._register(info, trace)
        return summary

    @property
    def call_depth(self) -> int:
        """How many function analyses are in progress (0: the module body runs, or none)."""
        return len(self._stack)

    @property
    def module_done(self) -> bool:
        """Whether the module body ran: the module's environments no longer change."""
        return self._module_done

    def _replay(self, info: FunctionInfo, entry: Entry) -> bool:
        """Re-apply a cached analysis; False when a function it called has changed."""
        self._stack.append(info.qualname)
        self._recorders.append([])  # the caller records this call, not its insides
        try:
            for effect in entry.effects:
                kind = effect[0]
                if kind == "invoke":
                    (qualname, args, kwargs, self_value, grad_enabled, record), expected = (
                        effect[1],
                        effect[2],
                    )
                    callee = self.index.functions.get(qualname)
                    if callee is None:
                        return False
                    got = self.invoke(
                        callee, list(args), dict(kwargs), self_value, grad_enabled, record
                    )
                    if got is not expected and got != expected:
                        return False
                elif kind == "called":
                    self.note_called(effect[1])
                elif kind == "backwarded":
                    self.note_backwarded(effect[1])
                elif kind == "closure":
                    self.note_closure(effect[1], effect[2])
            return True
        finally:
            self._recorders.pop()
            self._stack.pop()

    def _register(self, info: FunctionInfo, trace: Trace) -> None:
        if id(trace) not in self._registered:
            self._registered.add(id(trace))
            self.traces.append(trace)
            self.analyzed.add(info.qualname)

    def _summarise(
        self, run: FunctionRun, initial: dict[str, Value], self_value: Value | None
    ) -> Summary:
        returned = UNKNOWN
        if run.returns:
            returned = run.returns[0]
            from .values import join

            for value in run.returns[1:]:
                returned = join(returned, value)
        modes = []
        for key, value in run.env.items():
            head = key.split(".")[0]
            if head in initial and value.kind is Kind.MODEL:
                before = initial.get(key)
                if before is None or before.mode != value.mode:
                    modes.append((key, value.mode))
        final_self = None
        if self_value is not None:
            attributes = dict(self_value.attributes)
            for key, value in run.env.items():
                if key.startswith("self.") and key.count(".") == 1:
                    attributes[key[5:]] = value
            final_self = evolve(self_value, attributes=tuple(sorted(attributes.items())))
        return Summary(returned, tuple(run.trace.events), tuple(modes), final_self)

    def _grad_mode(self, info: FunctionInfo, inherited: bool) -> bool:
        for decorator in info.node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = qualified_name(target, self.index.imports) or _dotted(target)
            if catalog.is_grad_disabling(name):
                return False
            if name in catalog.GRAD_ENABLING:
                return True
        if (
            info.class_name
            and info.node.name in catalog.LIGHTNING_NO_GRAD_HOOKS
            and self.index.is_lightning_class(info.class_name)
        ):
            return False  # Lightning runs these hooks under no_grad itself
        return inherited

    # --- classes --------------------------------------------------------------------
    def instantiate(
        self,
        class_name: str,
        args: list[Value] | None,
        kwargs: dict[str, Value],
        node: ast.Call | None,
        caller: FunctionRun | None,
    ) -> Value:
        key = (class_name, tuple(args or ()), tuple(sorted(kwargs.items())))
        if key in self._instances:
            return self._instances[key]
        self._instances[key] = Value(kind=Kind.INSTANCE, class_name=class_name)  # recursion guard
        index = self.index
        origin = (
            Evidence(self.lines.span(node), f"`{caller.text(node)}` is constructed here")
            if node is not None and caller
            else None
        )
        flavour = index.dataset_flavour(class_name)
        if flavour is not None:
            value = Value(
                kind=Kind.DATASET,
                class_name=class_name,
                origin=origin,
                dataset_facts=DatasetFacts(iterable=flavour == "iterable"),
            )
            self._instances[key] = value
            return value
        is_module = index.is_module_class(class_name)
        value = Value(
            kind=Kind.MODEL if is_module else Kind.INSTANCE, class_name=class_name, origin=origin
        )
        if not is_module:  # a trainer's class body: dataclass fields, class attributes
            fields = class_fields(index, class_name, list(args or ()), kwargs)
            value = evolve(value, attributes=tuple(sorted(fields.items())))
        record = caller.recording if caller else True
        init = index.find_method(class_name, "__init__")
        if init is not None:
            summary = self.invoke(init, list(args or ()), kwargs, value, True, record)
            value = summary.final_self or value
        if is_module:
            # what ``forward`` returns (its final activation) is for the lint's rules; a
            # launch's facts inside it are asked for when the reader needs them
            forward = index.find_method(class_name, "forward") if self.launch is None else None
            if forward is not None:
                output = self.invoke(forward, [UNKNOWN], {}, value, True, False).returned
                value = evolve(value, activation=output.activation)
                if (
                    output.activation in ("softmax", "log_softmax", "sigmoid")
                    and output.origin is not None
                ):
                    # where forward applies it: what a finding shows and a fix removes
                    site = Evidence(
                        output.origin.span,
                        f"`{class_name}.forward` ends here: {output.origin.message}",
                        output.origin.path,
                    )
                    model_facts = evolve(value.model_facts or ModelFacts(), activation_site=site)
                    value = evolve(value, model_facts=model_facts)
            if index.is_lightning_class(class_name):
                model_facts = evolve(value.model_facts or ModelFacts(), lightning=True)
                value = evolve(value, model_facts=model_facts)
        self._instances[key] = value
        return value


def _outlives_the_call(event: Event, info: FunctionInfo) -> bool:
    """A store the helper makes, outside its own loops, into a container it did not
    create (``self.history.append(loss)`` in a ``step`` method, a list passed in): each
    call adds to the same container, so the caller's loop is the one it outlives."""
    return (
        event.kind is EventKind.STORE
        and not event.loops
        and event.loc is not None
        and event.loc.function != info.qualname
    )


def _trains(iterate: Event, events: tuple[Event, ...]) -> bool:
    """A backward runs inside the loop that iterates the loader (a training loop)."""
    depth = len(iterate.loops)
    return any(
        e.kind in (EventKind.BACKWARD, EventKind.GRAD_CALL) and e.loops[:depth] == iterate.loops
        for e in events
    )


def _transfer_attributes(caller: FunctionRun, path: str, before: Value, after: Value) -> None:
    """What a method assigned on its receiver, seen by the caller after the call:
    ``self.setup()`` builds ``self.model`` and ``self.optimizer`` for the loop that follows.

    A container the method creates (``self.buffer = []`` in a ``reset()`` called each
    iteration) is created where the call is, inside the caller's loops.
    """
    old = dict(before.attributes)
    known = frozenset().union(*(value.locs for value in old.values()))
    for name, value in after.attributes:
        if old.get(name) == value:
            continue
        for loc in value.locs - known:
            caller.loc_loops.setdefault(loc, tuple(caller.loops))
        caller.env[f"{path}.{name}"] = value


def _bare(value: Value) -> Value:
    """An instance value without the facts its callers accumulated (for the shared context)."""
    return Value(kind=value.kind, class_name=value.class_name, confidence=value.confidence)


def _dotted(node: ast.AST) -> str | None:
    from ..syntax.names import dotted

    return dotted(node)
