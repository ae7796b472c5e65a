"""How launch constants reach bindings the plain flow of values does not make.

A parser grows by the flags ``add_argument`` declares (the parser is bound to a name; the
call's own value is not); an attribute rebound on one branch keeps its default on the
other; parameters left to their defaults hold the defaults' facts. A collaborator of
:class:`~torchward.analysis.facts.launch.LaunchFolding`, which folds the values these bind.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable
from typing import TYPE_CHECKING

from ..syntax.names import dotted
from .binding import parameter_defaults
from .conditions import PathCondition
from .constants import UNDECIDED, ConstantFact, Items, is_items
from .launch_arguments import ArgumentDefaults, Namespace, declare
from .values import Value, evolve, with_constant

if TYPE_CHECKING:
    from .interpreter import FunctionRun
    from .launch import LaunchFolding
    from .semantic import FunctionInfo

__all__ = ["LaunchBindings", "seen_through", "taken_branch", "with_constant_elements"]

#: methods that change a dict, list or set in place
_MUTATING = frozenset(
    {
        "update",
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
    }
)
_SPAWNERS = ("multiprocessing.spawn", "mp.spawn", "multiprocessing.start_processes")
# command-line runners: ``fire.Fire(main)`` / ``typer.run(main)`` call it with its defaults
_RUNNERS = ("fire.Fire", "typer.run")


class LaunchBindings:
    """Bindings of launch constants for one run: what they bind goes into the run's
    environment (``run``), folded by the run's :class:`~torchward.analysis.facts.launch.LaunchFolding`."""

    def __init__(self, run: FunctionRun, folding: LaunchFolding) -> None:
        self.run = run
        self.folding = folding
        self.analyzer = run.analyzer

    def declare_argument(self, node: ast.Call) -> None:
        """``parser.add_argument(...)`` / ``parser.set_defaults(...)``: the parser bound to
        ``parser`` grows by the flag (a parser is a launch constant, see
        :mod:`.launch_arguments`)."""
        if node.func.attr not in ("add_argument", "set_defaults"):  # type: ignore[attr-defined]
            return
        path = dotted(node.func.value)  # type: ignore[attr-defined]
        bound = self.run.env.get(path) if path else None
        fact = bound.constant if bound is not None else None
        if path is None or bound is None or fact is None:
            return
        if not isinstance(fact.value, ArgumentDefaults):
            return
        grown = declare(fact.value, node, lambda e: self.folding.fold_pair(e)[0], UNDECIDED)
        self.run.env[path] = with_constant(bound, evolve(fact, value=grown))

    def mutated(self, node: ast.Call) -> None:
        """``config.update(other)``, ``layers.append(x)``: a method that changes in place
        the container a name holds. What the fold can apply (``update`` with a dict it
        knows, ``append`` / ``extend`` of known items) it applies; any other change leaves
        the name undecided from here on — never a stale constant."""
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in _MUTATING:
            return
        path = dotted(func.value)
        bound = self.run.lookup(path) if path is not None else None
        fact = bound.constant if bound is not None else None
        if path is None or bound is None or fact is None or not fact.decided:
            return
        changed, condition = self.changed(fact, func.attr, node)
        evidence = self.folding.evidence_of(node) if changed is not UNDECIDED else fact.evidence
        # a binding of an enclosing scope is shadowed here: this function reads the change
        self.run.env[path] = with_constant(bound, ConstantFact(changed, evidence, condition))

    def item_assigned(self, target: ast.Subscript, value: Value) -> None:
        """``config["lr"] = 1e-4``: the dict (or list) a name holds, with that item set;
        undecided when the key or the container is not known."""
        path = dotted(target.value)
        bound = self.run.lookup(path) if path is not None else None
        fact = bound.constant if bound is not None else None
        if path is None or bound is None or fact is None or not fact.decided:
            return
        key, key_condition = self.folding.fold_pair(target.slice)
        item = value.constant
        changed: Hashable = UNDECIDED
        if key is not UNDECIDED and item is not None and item.decided:
            changed = _with_item(fact.value, key, item.value)
        condition = self.run.condition.worst(fact.condition).worst(key_condition)
        if item is not None:
            condition = condition.worst(item.condition)
        evidence = self.folding.evidence_of(target) if changed is not UNDECIDED else fact.evidence
        self.run.env[path] = with_constant(bound, ConstantFact(changed, evidence, condition))

    def changed(
        self, fact: ConstantFact, method: str, node: ast.Call
    ) -> tuple[Hashable, PathCondition]:
        """The container ``fact`` holds after ``method`` ran on it with ``node``'s
        arguments (undecided where the fold cannot follow)."""
        here = self.run.condition.worst(fact.condition)
        container = fact.value
        if any(isinstance(a, ast.Starred) for a in node.args) or not isinstance(container, tuple):
            return UNDECIDED, here
        parts = [self.folding.fold_pair(a) for a in node.args]
        keywords = [(k.arg, self.folding.fold_pair(k.value)) for k in node.keywords]
        used = [*parts, *(part for _, part in keywords)]
        if any(part[0] is UNDECIDED for part in used) or any(k is None for k, _ in keywords):
            return UNDECIDED, here
        for part in used:
            here = here.worst(part[1])
        values = [part[0] for part in parts]
        if method == "update" and is_items(container) and len(values) <= 1:
            merged = dict(container)  # type: ignore[arg-type]
            if values:
                if not is_items(values[0]):
                    return UNDECIDED, here
                merged.update(values[0])  # type: ignore[arg-type]
            merged.update((key, part[0]) for key, part in keywords)
            return Items(merged.items()), here
        if method == "append" and len(values) == 1 and not keywords:
            return (*container, values[0]), here
        if method == "extend" and len(values) == 1 and isinstance(values[0], tuple):
            return (*container, *values[0]), here
        return UNDECIDED, here

    def expand_keywords(self, named: dict[str, Value]) -> dict[str, Value]:
        """``f(**config)`` with ``config`` a dict the launch knows: its items become the
        call's keywords (the other keywords as written)."""
        spread = named.get("**")
        fact = spread.constant if spread is not None else None
        if fact is None or not is_items(fact.value):
            return named
        expanded = {k: v for k, v in named.items() if k != "**"}
        for key, value in fact.value:  # type: ignore[misc]
            if isinstance(key, str) and key not in expanded:
                expanded[key] = Value(constant=ConstantFact(value, fact.evidence, fact.condition))
        return expanded

    def spawned(self, node: ast.Call, name: str) -> None:
        """``mp.spawn(worker, args=(...))``: the worker runs as ``worker(0, *args)`` on a
        plain launch's one process (rank 0): called here, so its body sees the
        arguments' launch values, as the reader follows a callback to its call site.
        ``fire.Fire(main)`` / ``typer.run(main)``: ``main()``, every parameter at its
        default. ``name``: the call's folded name."""
        runner = name.endswith(_RUNNERS)
        if not (runner or name.endswith(_SPAWNERS)) or not node.args:
            return
        worker = node.args[0]
        info = (
            self.analyzer.index.top_functions.get(worker.id)
            if isinstance(worker, ast.Name)
            else None
        )
        if info is None:
            return
        if runner:  # a plain launch passes no flags: every parameter at its default
            self.run.call_local(info, [], {}, node)
            return
        passed = next((k.value for k in node.keywords if k.arg == "args"), None)
        arguments = self.run.evaluate(passed) if passed is not None else None
        elements = list(arguments.elements or ()) if arguments is not None else []
        rank = Value(constant=ConstantFact(0, self.folding.evidence_of(node), self.run.condition))
        self.run.call_local(info, [rank, *elements], {}, node)

    def taken_arm(self, test: Value, body: Value, orelse: Value) -> Value | None:
        """``model.module if ddp else model`` in launch mode, with ``ddp`` decided by the
        defaults: the arm a plain launch takes (None: not launch mode, or not decided)."""
        fact = test.constant
        if self.analyzer.launch is None or fact is None or not fact.decided:
            return None
        if fact.condition is not PathCondition.DEFAULT:
            return None
        try:
            return body if fact.value else orelse
        except Exception:  # a value whose truth cannot be taken
            return None

    def complete_attribute_bindings(
        self, before: dict[str, Value], body: dict[str, Value], orelse: dict[str, Value]
    ) -> None:
        """An attribute rebound on one branch only (``if args.distributed:
        args.batch_size //= world``) keeps, on the other, what it held before the ``if``:
        the environment has no entry for ``args.batch_size`` until it is assigned, so
        without this the join would see only the branch's value."""
        for side, other in ((body, orelse), (orelse, body)):
            for key in side.keys() - other.keys():
                if "." in key and key not in before:
                    previous = self._attribute_value(key, before)
                    if previous is not None:
                        other[key] = previous

    def _attribute_value(self, path: str, env: dict[str, Value]) -> Value | None:
        """``args.batch_size`` read from a parsed namespace in ``env`` (None: not one)."""
        head, _, attribute = path.partition(".")
        base = env.get(head) or self.run.lookup(head)
        fact = base.constant if base is not None else None
        if fact is None or "." in attribute or not isinstance(fact.value, Namespace):
            return None
        found = fact.value.get(attribute, UNDECIDED)
        return Value(constant=ConstantFact(found, fact.evidence, fact.condition))

    def bind_default_constants(
        self, info: FunctionInfo, supplied: int, keywords: dict[str, Value]
    ) -> None:
        """Parameters the call leaves to their defaults hold the defaults' constants
        (``def parse_opt(known=False)``): folded where the ``def`` stands, in the module."""
        spec = info.node.args
        positional = [*spec.posonlyargs, *spec.args]
        taken = supplied + (1 if info.is_method else 0)  # ``self`` is not in ``supplied``
        for param, default in parameter_defaults(spec):
            index = positional.index(param) if param in positional else len(positional)
            bound = self.run.env.get(param.arg)
            if param.arg in keywords or index < taken or bound is None:
                continue
            found, _ = self.folding.fold_pair(default)
            fact = ConstantFact(found, self.folding.evidence_of(default), self.run.condition)
            self.run.env[param.arg] = with_constant(bound, fact)
        if spec.kwarg is not None and spec.kwarg.arg in self.run.env:
            # ``**kwargs``: the keywords no parameter took, as a dict of their values
            named = {p.arg for p in (*positional, *spec.kwonlyargs)}
            extra = Items(
                (key, value.constant.value if value.constant is not None else UNDECIDED)
                for key, value in keywords.items()
                if key not in named and key != "**"
            )
            self.run.env[spec.kwarg.arg] = with_constant(
                self.run.env[spec.kwarg.arg],
                ConstantFact(extra, self.folding.evidence_of(info.node), self.run.condition),
            )


def taken_branch(
    entry: PathCondition,
    body: tuple[PathCondition, dict[str, Value]],
    orelse: tuple[PathCondition, dict[str, Value]],
) -> dict[str, Value] | None:
    """The environment after an ``if`` whose test a plain launch decides: the branch it
    takes, alone (``model = DDP(model)`` on the multi-GPU path does not make ``model``
    an unknown wrapper for the single-GPU path, whose calls then resolve). The skipped
    branch was still run, so its statements hold their conditions. None: both may run."""
    skipped = (PathCondition.OFF, PathCondition.MULTI_GPU)
    for (taken, env), (other, _) in ((body, orelse), (orelse, body)):
        if taken is entry and other in skipped and other is not entry:
            return env
    return None


def seen_through(
    env: dict[str, Value], condition: PathCondition, other: dict[str, Value]
) -> dict[str, Value]:
    """``env`` as it leaves a branch that runs under ``condition``, where it differs
    from the ``other`` branch's: those facts hold only when this branch runs (a skipped
    branch's are off), so the join keeps the branch that runs — the value set before
    ``if cuda: device = "cuda"`` does not undecide the one the branch sets. A value
    both branches leave alone holds either way, and keeps its condition."""
    if condition is PathCondition.DEFAULT:
        return env
    seen = {}
    for name, value in env.items():
        fact = value.constant
        if fact is None or other.get(name) is value:
            seen[name] = value
            continue
        worse = fact.under(condition)
        seen[name] = value if worse is fact else with_constant(value, worse)
    return seen


def with_constant_elements(value: Value, count: int) -> Value:
    """``a, b = parser.parse_args_into_dataclasses()``: a tuple constant of ``count``
    items gives each target its item (the dataflow's own elements, where it has them,
    with the item's fact)."""
    fact = value.constant
    items = fact.value if fact is not None else None
    if not isinstance(items, tuple) or len(items) != count or fact is None:
        return value
    elements = value.elements if value.elements and len(value.elements) == count else None
    parts = tuple(
        with_constant(
            elements[i] if elements else Value(),
            ConstantFact(item, fact.evidence, fact.condition),
        )
        for i, item in enumerate(items)
    )
    return evolve(value, elements=parts)


def _with_item(container: Hashable, key: Hashable, item: Hashable) -> Hashable:
    """``container[key] = item`` on a launch constant (a dict as its items, a list as a
    tuple); undecided for anything else."""
    if is_items(container):
        changed = dict(container)  # type: ignore[arg-type]
        changed[key] = item
        return Items(changed.items())
    if (
        isinstance(container, tuple)
        and isinstance(key, int)
        and -len(container) <= key < len(container)
    ):
        listed = list(container)
        listed[key] = item
        return tuple(listed)
    return UNDECIDED
