"""What a plain launch computes: constants and path conditions as facts of the dataflow.

The estimator needs the job a default launch (``python SCRIPT``, no flags, one GPU) runs:
``batch_size = 12``, ``int(os.environ.get("WORLD_SIZE", 1))``, whether an ``if`` runs.
Issue 12 asks that these be facts of the engine, not of a second interpreter. This module
is step 1 of that fold (``docs/design/analysis.md``, "The run configuration and the
engine"): the dataflow's :class:`~torchward.analysis.values.Value` carries a
:class:`ConstantFact` — the Python value, where it was set, and the
:class:`~torchward.analysis.conditions.PathCondition` it holds under — and
:class:`LaunchMixin` teaches :class:`~torchward.analysis.interpreter.FunctionRun` to fold
them, to decide ``if`` tests by them and to carry the condition into branches, ``with
torch.no_grad()`` blocks and called functions.

Constant tracking runs only in *launch mode* (:func:`build_launch_facts`): the lint never
pays for it, and launch mode reads a file alone, with one pass per loop (a constant is not
a loop fixpoint: a value reassigned in a loop joins to "undecided" after one pass).

The join of two facts is a lattice join, lexicographic: the better condition wins (a value
on the default path beats one on a path that is off by default), equal conditions with
different values give :data:`UNDECIDED` at that condition. A value bound from an
expression that folds to nothing is bound as undecided *at the binding's condition*, so a
constant is never kept past a reassignment the fold cannot follow.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import attrs

from .conditions import PathCondition
from .constants import UNDECIDED, ConstantFact, join_constants
from .finding import Evidence, Span
from .launch_arguments import ArgumentDefaults, ArgumentValues, declare, parser_call
from .names import dotted
from .values import Value, with_constant

if TYPE_CHECKING:
    from .semantic import FunctionInfo

__all__ = ["LaunchFacts", "LaunchMixin", "branch_conditions", "launch_entry_condition", "uncalled"]


# --- folding ------------------------------------------------------------------------

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}
_PURE_CALLS = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
}
#: what a default single-GPU launch on a CUDA machine answers
_HARDWARE: dict[str, Hashable] = {
    "torch.cuda.is_available": True,
    "torch.cuda.is_bf16_supported": True,
    "torch.cuda.device_count": 1,
    "torch.backends.mps.is_available": False,
    "torch.distributed.is_initialized": False,
    "torch.distributed.is_available": True,
}
_ENVIRONMENT_GETTERS = ("os.environ.get", "os.getenv")
_LARGEST_FOLDED = 10**12  # ``2 ** 1000`` is not a batch size; fold no further
_EVALUATION = re.compile(
    r"(^|_)(eval|evaluate|evaluation|valid|validate|validation|test|sample|sampling|generate|inference|predict)",
    re.I,
)
_DISTRIBUTED = re.compile(r"ddp|distributed|world_size|local_rank|multiprocessing|\bRANK\b|nproc")


def evaluates(function_name: str) -> bool:
    """A function named for evaluation, sampling or inference: its job is not training."""
    return bool(_EVALUATION.search(function_name))


def branch_conditions(
    test: ast.expr, decided: ConstantFact | None
) -> tuple[PathCondition, PathCondition]:
    """The conditions of an ``if``'s body and ``else`` given its test's fact.

    A test the defaults decide makes one branch default and the other off; an undecided
    test makes both unsure — except that a test naming a distributed set-up puts its body
    on the multi-GPU path (and an ``else`` of a decided distributed test too).
    """
    distributed = bool(_DISTRIBUTED.search(_words(test)))
    if decided is None or not decided.decided or decided.condition is not PathCondition.DEFAULT:
        return (
            PathCondition.MULTI_GPU if distributed else PathCondition.UNSURE,
            PathCondition.UNSURE,
        )
    try:
        holds = bool(decided.value)
    except Exception:  # a value whose truth cannot be taken
        return PathCondition.UNSURE, PathCondition.UNSURE
    skipped = PathCondition.MULTI_GPU if distributed else PathCondition.OFF
    return (PathCondition.DEFAULT, skipped) if holds else (skipped, PathCondition.DEFAULT)


def _words(test: ast.expr) -> str:
    words = []
    for node in ast.walk(test):
        if isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.append(node.value)
    return " ".join(words)


def launch_entry_condition(
    info: FunctionInfo, grad_enabled: bool, condition: PathCondition
) -> PathCondition:
    """The condition a function's body starts under: its call's, made ``validation`` by a
    grad-disabled call or a name that evaluates (``@torch.no_grad() def evaluate()``)."""
    if not grad_enabled or evaluates(info.node.name):
        return condition.worst(PathCondition.VALIDATION)
    return condition


def uncalled(info: FunctionInfo) -> PathCondition:
    """The condition of a function the flow did not reach through a call: an entry point
    or callback runs (default); a method other than ``forward`` and the dunders may never
    run (unsure)."""
    name = info.node.name
    if info.is_method and not name.startswith("__") and name != "forward":
        return PathCondition.UNSURE
    return PathCondition.DEFAULT


@attrs.define
class LaunchFacts:
    """What launch mode recorded, by node: the fact of every expression it evaluated and
    the condition of every statement it ran (joined over every visit: a function called
    from two places holds the better of the two)."""

    constants: dict[int, ConstantFact] = attrs.field(factory=dict)
    conditions: dict[int, PathCondition] = attrs.field(factory=dict)
    # analyses the functions around a node nothing has reached yet (set by the analyzer)
    on_demand: Callable[[ast.AST], None] | None = None

    def note_constant(self, node: ast.AST, fact: ConstantFact) -> None:
        key = id(node)
        joined = join_constants(self.constants.get(key), fact)
        if joined is not None:
            self.constants[key] = joined

    def note_condition(self, node: ast.AST, condition: PathCondition) -> None:
        key = id(node)
        known = self.conditions.get(key)
        self.conditions[key] = (
            condition if known is None else PathCondition.best((known, condition))
        )

    def recorded(self, node: ast.AST) -> bool:
        return id(node) in self.constants or id(node) in self.conditions

    def constant(self, node: ast.AST) -> ConstantFact | None:
        if id(node) not in self.constants and self.on_demand is not None:
            self.on_demand(node)
        return self.constants.get(id(node))

    def condition(self, node: ast.AST) -> PathCondition | None:
        if id(node) not in self.conditions and self.on_demand is not None:
            self.on_demand(node)
        return self.conditions.get(id(node))


class LaunchMixin:
    """Constant folding and path conditions for
    :class:`~torchward.analysis.interpreter.FunctionRun` in launch mode."""

    if TYPE_CHECKING:
        analyzer: Any
        condition: PathCondition
        env: dict[str, Value]
        folded: dict[int, tuple[Hashable, PathCondition]]

        def qualified(self, node: ast.AST) -> str | None: ...

        def lookup(self, name: str) -> Value | None: ...

    def attach_constant(self, node: ast.expr, value: Value) -> Value:
        """``value`` (what ``node`` evaluated to) with the fact a plain launch gives it."""
        fact = self.fold(node, value)
        # an enclosing expression folds from this instead of folding ``node`` again
        self.folded[id(node)] = (fact.value, fact.condition)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            self._declare_argument(node)
        self.analyzer.launch.note_constant(node, fact)
        return value if value.constant is fact else with_constant(value, fact)

    def _declare_argument(self, node: ast.Call) -> None:
        """``parser.add_argument(...)`` / ``parser.set_defaults(...)``: the parser bound to
        ``parser`` grows by the flag (a parser is a launch constant, see
        :mod:`.launch_arguments`)."""
        if node.func.attr not in ("add_argument", "set_defaults"):  # type: ignore[attr-defined]
            return
        path = dotted(node.func.value)  # type: ignore[attr-defined]
        bound = self.env.get(path) if path else None
        fact = bound.constant if bound is not None else None
        if path is None or bound is None or fact is None:
            return
        if not isinstance(fact.value, ArgumentDefaults):
            return
        grown = declare(fact.value, node, lambda e: self._fold(e)[0], UNDECIDED)
        self.env[path] = with_constant(bound, attrs.evolve(fact, value=grown))

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
        base = env.get(head) or self.lookup(head)
        fact = base.constant if base is not None else None
        if fact is None or "." in attribute or not isinstance(fact.value, ArgumentValues):
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
        pairs = [
            *zip(positional[len(positional) - len(spec.defaults) :], spec.defaults),
            *((p, d) for p, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None),
        ]
        for param, default in pairs:
            index = positional.index(param) if param in positional else len(positional)
            bound = self.env.get(param.arg)
            if param.arg in keywords or index < taken or bound is None:
                continue
            found, _ = self._fold(default)
            fact = ConstantFact(found, self._evidence(default), self.condition)
            self.env[param.arg] = with_constant(bound, fact)

    def bound_constant(self, value: Value, statement: ast.AST) -> Value:
        """``value`` as a binding stores it: its fact seen under the binding's condition,
        or undecided there when nothing folded (never a stale constant)."""
        fact = value.constant
        if fact is None:
            fact = ConstantFact(UNDECIDED, self._evidence(statement), self.condition)
        else:
            fact = fact.under(self.condition)
        return value if fact is value.constant else with_constant(value, fact)

    def augmented_constant(self, node: ast.AugAssign, before: Value, after: Value) -> Value:
        """``after`` (the value ``x += y`` binds) with ``x``'s fact combined with ``y``'s."""
        operator = _BINARY.get(type(node.op))
        fact = before.constant
        left = (fact.value, fact.condition) if fact is not None else (UNDECIDED, self.condition)
        found, condition = _apply(operator, (left, self._fold(node.value)), self.condition)
        return with_constant(after, ConstantFact(found, self._evidence(node), condition))

    def fold(self, node: ast.expr, value: Value | None = None) -> ConstantFact:
        """The fact of ``node`` from its operands' facts (``value``: what the dataflow
        evaluated it to, whose fact names and attributes already carry)."""
        if (
            value is not None
            and value.constant is not None
            and isinstance(
                node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.NamedExpr, ast.Starred)
            )
        ):
            return value.constant
        found, condition = self._fold(node)
        return ConstantFact(found, self._evidence(node), condition)

    def _fold(self, node: ast.expr) -> tuple[Hashable, PathCondition]:
        """(value, the worst condition of what it was computed from)."""
        known = self.folded.get(id(node))
        if known is not None:
            return known  # evaluated just now, as an operand of what is folded
        here = self.condition
        if isinstance(node, ast.Constant):
            return node.value, here
        if isinstance(node, ast.Name):
            found = self.lookup(node.id)
            fact = found.constant if found is not None else None
            if fact is None and node.id == "__name__" and found is None:
                return "__main__", here  # the launched script
            return (fact.value, fact.condition) if fact is not None else (UNDECIDED, here)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            parts = [self._fold(e) for e in node.elts]
            if any(isinstance(e, ast.Starred) for e in node.elts) or any(
                p[0] is UNDECIDED for p in parts
            ):
                return UNDECIDED, here
            gathered = (frozenset if isinstance(node, ast.Set) else tuple)(p[0] for p in parts)
            return _apply(lambda: gathered, (), _worst(here, parts))
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return UNDECIDED, here
            keys = [self._fold(k) for k in node.keys if k is not None]
            items = [self._fold(v) for v in node.values]
            if any(p[0] is UNDECIDED for p in (*keys, *items)):
                return UNDECIDED, here
            return tuple(zip((k[0] for k in keys), (v[0] for v in items))), _worst(
                here, [*keys, *items]
            )
        if isinstance(node, ast.BinOp):
            left, right = self._fold(node.left), self._fold(node.right)
            operator = _BINARY.get(type(node.op))
            return _apply(operator, (left, right), here)
        if isinstance(node, ast.UnaryOp):
            operand = self._fold(node.operand)
            operators = {ast.Not: lambda a: not a, ast.USub: lambda a: -a, ast.UAdd: lambda a: +a}
            return _apply(operators.get(type(node.op)), (operand,), here)
        if isinstance(node, ast.BoolOp):
            return self._fold_bool(node)
        if isinstance(node, ast.Compare):
            return self._fold_compare(node)
        if isinstance(node, ast.IfExp):
            test = self._fold(node.test)
            if test[0] is UNDECIDED:
                return UNDECIDED, here
            chosen = self._fold(node.body if test[0] else node.orelse)
            return chosen[0], _worst(here, [test, chosen])
        if isinstance(node, ast.Subscript):
            return self._fold_subscript(node)
        if isinstance(node, ast.Call):
            return self._fold_call(node)
        if isinstance(node, ast.Attribute):
            return self._fold_attribute(node)
        return UNDECIDED, here

    def _fold_bool(self, node: ast.BoolOp) -> tuple[Hashable, PathCondition]:
        """``a and b`` / ``a or b`` with Python's short circuit: ``args.fp16 or False``."""
        used: list[tuple[Hashable, PathCondition]] = []
        for operand in node.values:
            part = self._fold(operand)
            used.append(part)
            if part[0] is UNDECIDED:
                return UNDECIDED, self.condition
            if isinstance(node.op, ast.And) and not part[0]:
                break
            if isinstance(node.op, ast.Or) and part[0]:
                break
        return used[-1][0], _worst(self.condition, used)

    def _fold_compare(self, node: ast.Compare) -> tuple[Hashable, PathCondition]:
        left = self._fold(node.left)
        used = [left]
        for op, comparator in zip(node.ops, node.comparators):
            right = self._fold(comparator)
            used.append(right)
            holds = _apply(_COMPARE.get(type(op)), (left, right), self.condition)[0]
            if holds is UNDECIDED:
                return UNDECIDED, self.condition
            if not holds:
                return False, _worst(self.condition, used)
            left = right
        return True, _worst(self.condition, used)

    def _fold_subscript(self, node: ast.Subscript) -> tuple[Hashable, PathCondition]:
        base, key = self._fold(node.value), self._fold(node.slice)
        if base[0] is UNDECIDED or key[0] is UNDECIDED or isinstance(node.slice, ast.Slice):
            return UNDECIDED, self.condition
        container = base[0]
        try:
            if isinstance(container, tuple) and container and _is_items(container):
                found = dict(container)[key[0]]  # a dict literal, kept as sorted items
            else:
                found = container[key[0]]  # type: ignore[index]
        except Exception:
            return UNDECIDED, self.condition
        return found, _worst(self.condition, [base, key])

    def _fold_attribute(self, node: ast.Attribute) -> tuple[Hashable, PathCondition]:
        name = self.qualified(node) or dotted(node)
        if name == "sys.argv":
            return ("SCRIPT",), self.condition  # a plain launch passes no arguments
        base, condition = self._fold(node.value)
        if isinstance(base, ArgumentValues):
            return base.get(node.attr, UNDECIDED), condition
        return UNDECIDED, self.condition

    def _fold_call(self, node: ast.Call) -> tuple[Hashable, PathCondition]:
        name = self.qualified(node.func) or dotted(node.func) or ""
        here = self.condition
        if name.endswith("argparse.ArgumentParser") or name == "ArgumentParser":
            return ArgumentDefaults(), here
        if isinstance(node.func, ast.Attribute) and node.func.attr.startswith("parse_"):
            receiver, condition = self._fold(node.func.value)
            parsed = parser_call(node.func.attr, receiver)
            return (parsed, condition) if parsed is not None else (UNDECIDED, here)
        if name in _HARDWARE and not node.args:
            return _HARDWARE[name], here
        if name in _ENVIRONMENT_GETTERS and node.args:
            # a plain launch sets no launcher variables: the default, or None
            if len(node.args) > 1:
                return self._fold(node.args[1])
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            return self._fold(default) if default is not None else (None, here)
        function = _PURE_CALLS.get(name)
        if function is None or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return UNDECIDED, here
        parts = [self._fold(a) for a in node.args]
        return _apply(function, tuple(parts), here)

    def _evidence(self, node: ast.AST) -> Evidence:
        """Where a fact was set: the node's own position (columns as the parser counts
        them, in UTF-8 bytes — a fact names its line; converting columns for every
        evaluated expression cost a tenth of launch mode)."""
        line = getattr(node, "lineno", 0)
        span = Span(
            line,
            getattr(node, "col_offset", 0),
            getattr(node, "end_lineno", None) or line,
            getattr(node, "end_col_offset", None) or 0,
        )
        return Evidence(span, "a plain launch", self.analyzer.evidence_path)


def _is_items(container: tuple) -> bool:
    return all(isinstance(item, tuple) and len(item) == 2 for item in container)


def _worst(condition: PathCondition, parts: list[tuple[Hashable, PathCondition]]) -> PathCondition:
    for _, part in parts:
        condition = condition.worst(part)
    return condition


def _apply(
    function: Any, parts: tuple[tuple[Hashable, PathCondition], ...], here: PathCondition
) -> tuple[Hashable, PathCondition]:
    """``function`` over the parts' values, or undecided (an operand unknown, a Python
    error, a result too large to be a configuration value)."""
    if function is None or any(part[0] is UNDECIDED for part in parts):
        return UNDECIDED, here
    try:
        result = function(*(part[0] for part in parts))
    except Exception:
        return UNDECIDED, here
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        if abs(result) > _LARGEST_FOLDED:
            return UNDECIDED, here
    try:
        hash(result)
    except TypeError:
        return UNDECIDED, here
    return result, _worst(here, list(parts))
