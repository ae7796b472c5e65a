"""Launch mode's share of driving an analysis: what runs, under which condition, and when.

A lint analyses every function worth it, each once per context. Launch mode
(:mod:`.launch`) asks a different question — the facts of a plain launch — so it drives
the same :class:`~torchward.analysis.facts.analyzer.FileAnalyzer` differently, and that policy
lives here, held by the analyzer only in launch mode (a lint never touches it):

- after the module body, the script's entry points run up front; in a function the flow
  did not reach, an expression asked about is folded where it is written (module
  constants, the closure, parameters' defaults; no analysis of the body) and a statement
  stands under the gates around it (:func:`~.launch_paths.unreached_condition`);
- a call on a path a plain launch does not take is not followed (:meth:`LaunchDriver.skips`);
- a call on a better path than every earlier analysis of the same arguments runs the body
  again (each node keeps its best condition); a call on a strictly worse path than some
  analysis of the function reuses that analysis's summary, since every fact it would note
  loses the join.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from .binding import parameter_defaults
from .conditions import PathCondition
from .constants import UNDECIDED
from .events import Trace
from .interpreter import FunctionRun
from .launch_paths import (
    LaunchFacts,
    launch_entry_condition,
    launch_entry_points,
    uncalled,
    unreached_condition,
)
from .values import UNKNOWN, Kind, Value

if TYPE_CHECKING:
    from .analyzer import FileAnalyzer, Summary
    from .semantic import FunctionInfo

__all__ = ["LaunchDriver", "LaunchInputs"]


def _nothing_loaded(filename: str) -> Hashable:
    return UNDECIDED


@attrs.frozen
class LaunchInputs:
    """What a plain launch reads besides the script's own code, supplied by whoever asks
    (the script reader reads files through :mod:`torchward.estimator.dependencies`, so a
    cached result is dropped when one changes; the engine never opens a file itself):

    - ``included``: the statements a top-level ``exec(open(PATH).read())`` runs in the
      script's globals (a configurator, a config file), by the ``exec`` statement's id,
      already placed at its line (:mod:`.runconfig_includes`);
    - ``load``: the data of a config file the script loads (``json.load(open(PATH))``,
      ``yaml.safe_load``), as a launch constant — ``UNDECIDED`` when it cannot be read;
    - ``returns``: what a function the script imports from its project returns on a
      plain launch, by the name the script calls it: a flag-parsing function's flags
      (``from utils import parse_args``: the ``Namespace`` of the flags that module
      declares), a defaults function's dict (``return dict(image_size=64, ...)``);
    - ``dataclasses``: config dataclasses the script imports from its project (``from
      model import GPTConfig``, ``from model import *``), by the name the script calls
      them: an instance is a namespace of their fields (defaults written as values).
    """

    included: Mapping[int, Sequence[ast.stmt]] = attrs.field(factory=dict)
    load: Callable[[str], Hashable] = _nothing_loaded
    returns: Mapping[str, Hashable] = attrs.field(factory=dict)
    dataclasses: Mapping[str, ast.ClassDef] = attrs.field(factory=dict)


class LaunchDriver:
    """The launch-mode policy of one analyzer, and the facts it records."""

    def __init__(self, analyzer: FileAnalyzer, inputs: LaunchInputs) -> None:
        self.analyzer = analyzer
        self.inputs = inputs
        self.facts = LaunchFacts()
        self._in_order: list[FunctionInfo] | None = None  # the module's functions by line
        # functions called only on paths a plain launch does not take, and the best such
        # path (:meth:`skips`)
        self._skipped: dict[str, PathCondition] = {}
        # the names of each unreached function folding sees (:meth:`_fold_unreached`)
        self._locals: dict[str, dict[str, Value]] = {}
        self._best: dict[tuple, PathCondition] = {}  # memo key -> best condition analysed
        # function -> the best condition it was analysed under, and that analysis' summary
        self._runs: dict[str, tuple[PathCondition, Summary]] = {}
        # (literal node id, condition) -> its value with its fact (:meth:`~.launch.LaunchFolding._literal`)
        self.literals: dict[tuple[int, PathCondition], Value] = {}
        self._callees: dict[str, list[FunctionInfo]] = {}  # :meth:`_called_by_name`

    # --- what runs ----------------------------------------------------------------------
    def run_entries(self) -> None:
        """After the module body: the script's entry points (top-level functions nothing
        in the file calls or passes: ``@call_parse def main``) run as a launch runs them;
        the rest waits to be asked about (:meth:`LaunchFacts.condition`)."""
        analyzer = self.analyzer
        for info in launch_entry_points(analyzer.index, analyzer.source):
            if info.qualname not in analyzer.analyzed:
                analyzer.analyze_entry(info, None)
        self.facts.on_demand = self._fold_unreached
        self.facts.unreached = self._unreached

    def _fold_unreached(self, node: ast.AST) -> None:
        """The fact of an expression no analysis of the launch evaluated (inside a function
        no call reached, a class body): folded where it is written, without running the
        function — module constants and the closure its ``def`` captured hold, a
        parameter the body never rebinds holds its default (nothing called it: as a
        framework calls it, with no arguments), anything else the function binds is
        undecided — under the condition of the statement holding it. Cheap, and the same
        whatever was asked before; what a body computes from its own locals stays unknown."""
        line = getattr(node, "lineno", None)
        if line is None or not isinstance(node, ast.expr):
            return
        around = [
            info
            for info in self._functions_by_line()
            if info.node.lineno <= line <= (info.node.end_lineno or info.node.lineno)
        ]
        if around:
            innermost = around[-1]
            condition = unreached_condition(innermost, node, self._skipped.get(innermost.qualname))
            outer = self.analyzer.closures.get(innermost.qualname) or {}
            local = self._locals.get(innermost.qualname)
            if local is None:  # once per function: many questions may fall in one
                entry = unreached_condition(innermost, innermost.node)  # where its body starts
                local = self._locals[innermost.qualname] = self._unreached_locals(
                    around, outer, entry
                )
        else:
            top = next(
                (
                    s
                    for s in self.analyzer.tree.body
                    if s.lineno <= line <= (s.end_lineno or s.lineno)
                ),
                None,
            )
            recorded = self.facts.conditions.get(id(top)) if top else None
            condition, outer, local = recorded or PathCondition.DEFAULT, {}, {}
        run = self._folding_run(local, outer, condition)
        self.facts.note_constant(node, run.fold(node))

    def _unreached_locals(
        self, around: list[FunctionInfo], outer: dict[str, Value], condition: PathCondition
    ) -> dict[str, Value]:
        """The names of the functions around an unreached expression, innermost last: an
        enclosing function's own names are undecided unless its closure holds them; the
        innermost's are undecided but for parameters left to their defaults."""
        local: dict[str, Value] = {}
        for info in around[:-1]:
            local.update((name, UNKNOWN) for name in _own_names(info.node) if name not in outer)
        innermost = around[-1].node
        bound = _bound_in_body(innermost)
        local.update(dict.fromkeys(_parameters(innermost) | bound, UNKNOWN))
        # a parameter the body never rebinds holds its default
        defaults = {p.arg: d for p, d in parameter_defaults(innermost.args) if p.arg not in bound}
        if defaults:
            module = self._folding_run({}, {}, condition)  # defaults are folded at the ``def``
            local.update((name, Value(constant=module.fold(d))) for name, d in defaults.items())
        return local

    def _folding_run(
        self, local: dict[str, Value], outer: dict[str, Value], condition: PathCondition
    ) -> FunctionRun:
        """A run that only folds: ``local`` shadows ``outer``, which shadows the module."""
        return FunctionRun(
            self.analyzer,
            Trace(function="<unreached>"),
            [],
            env=local,
            outer=outer,
            grad_enabled=True,
            params=frozenset(local),
            condition=condition,
        )

    def _unreached(self, statement: ast.AST) -> PathCondition | None:
        """The condition of a statement no analysis of the launch ran: from the innermost
        function around it (:func:`unreached_condition`); None outside every function."""
        line = getattr(statement, "lineno", None)
        if line is None:
            return None
        around = [
            info
            for info in self._functions_by_line()
            if info.node.lineno <= line <= (info.node.end_lineno or info.node.lineno)
            and info.node is not statement
        ]
        if not around:
            return None
        info = around[-1]
        return unreached_condition(info, statement, self._skipped.get(info.qualname))

    # --- what is not followed -----------------------------------------------------------
    def skips(self, info: FunctionInfo, condition: PathCondition) -> bool:
        """Whether a call of ``info`` under ``condition`` is left unfollowed: a call on a
        path a plain launch does not take (off, multi-GPU only) runs nothing the launch's
        job does — the export helpers behind ``if args.write_tensors:``, a distributed
        set-up behind ``if ddp:``. Its body, and the project functions it calls by name,
        are then placed under that condition when asked about (:meth:`_unreached`)."""
        if condition.runs:
            return False
        pending = [info]
        while pending:
            function = pending.pop()
            known = self._skipped.get(function.qualname)
            if known is not None and known.worst(condition) is known:
                continue  # already skipped under as good a condition
            self._skipped[function.qualname] = condition
            pending.extend(self._called_by_name(function))
        return True

    def _called_by_name(self, info: FunctionInfo) -> list[FunctionInfo]:
        """The project functions ``info``'s body calls by name (``helper()``,
        ``self.helper()`` on its own class), found once per function."""
        known = self._callees.get(info.qualname)
        if known is None:
            known = self._callees[info.qualname] = self._find_called_by_name(info)
        return known

    def _find_called_by_name(self, info: FunctionInfo) -> list[FunctionInfo]:
        index = self.analyzer.index
        found = []
        for node in ast.walk(info.node):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in index.top_functions:
                found.append(index.top_functions[func.id])
            elif (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and info.class_name
            ):
                method = index.find_method(info.class_name, func.attr)
                if method is not None:
                    found.append(method)
        return found

    def _functions_by_line(self) -> list[FunctionInfo]:
        if self._in_order is None:
            self._in_order = list(self.analyzer.index.functions_in_order())
        return self._in_order

    def entry_self(self, class_name: str) -> Value:
        """``self`` of a method analysed as an entry point: an instance without attributes
        (launch mode asks a method's conditions, not what ``__init__`` built; running
        ``__init__`` for every method doubled the cost)."""
        return Value(kind=Kind.INSTANCE, class_name=class_name)

    # --- under which condition ----------------------------------------------------------
    @staticmethod
    def uncalled(info: FunctionInfo) -> PathCondition:
        return uncalled(info)

    @staticmethod
    def body_condition(
        info: FunctionInfo, grad_enabled: bool, call: PathCondition
    ) -> PathCondition:
        return launch_entry_condition(info, grad_enabled, call)

    # --- when a body runs again ---------------------------------------------------------
    def dominated(self, info: FunctionInfo, condition: PathCondition) -> Summary | None:
        """The summary standing in for a call on a strictly worse path than an analysis
        ``info`` already had (``train()`` again from the ``--evolve`` branch, off by
        default): its caller, and whatever it binds, are on that worse path too."""
        known = self._runs.get(info.qualname)
        if known is None or known[0] is condition or known[0].worst(condition) is known[0]:
            return None
        return known[1]

    def already_analysed(self, key: tuple, condition: PathCondition) -> bool:
        """Whether the memoised analysis of ``key`` recorded what a call under
        ``condition`` would: only a call on a better path runs the body again (at most
        once per condition)."""
        best = self._best.get(key)
        if best is not None and best.worst(condition) is condition:
            return True
        self._best[key] = condition
        return False

    def analysed(
        self, key: tuple, info: FunctionInfo, condition: PathCondition, summary: Summary
    ) -> None:
        """Note an analysis just made (for :meth:`already_analysed` and :meth:`dominated`)."""
        self._best.setdefault(key, condition)
        known = self._runs.get(info.qualname)
        if known is None or known[0].worst(condition) is known[0]:
            self._runs[info.qualname] = (condition, summary)


def _own_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function binds itself: its parameters and what its body binds."""
    return _parameters(function) | _bound_in_body(function)


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = function.args
    names = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    names.update(a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None)
    return names


def _bound_in_body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every name the body assigns, deletes, loops over, imports or defines (nested
    functions' included: undecided either way)."""
    names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node is not function
        ):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names
