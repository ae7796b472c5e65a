"""Launch constants: the value a plain launch gives an expression, as a lattice fact.

:class:`ConstantFact` is what :attr:`~torchward.analysis.facts.values.Value.constant` holds in
launch mode (:mod:`.launch`): the Python value, the evidence of where it was set, and the
:class:`~torchward.analysis.facts.conditions.PathCondition` it holds under. Its own module
because :mod:`.values` joins it and :mod:`.launch` computes it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Hashable
from typing import Any, TypeGuard

import attrs

from ..finding import Evidence, evidence_order
from .conditions import PathCondition

__all__ = [
    "BINARY_OPERATORS",
    "COMPARISONS",
    "PLAIN_ENVIRONMENT",
    "TORCH_DTYPES",
    "UNDECIDED",
    "ConstantFact",
    "Items",
    "TensorShape",
    "apply_folded",
    "around_the_loop",
    "as_constant",
    "is_items",
    "join_constants",
    "worst_condition",
]


class _Undecided:
    """The value of an expression a plain launch computes but the analysis cannot."""

    _instance: _Undecided | None = None

    def __new__(cls) -> _Undecided:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDECIDED"

    def __reduce__(self) -> str:
        return "UNDECIDED"  # one object, also across pickling (the summary cache)


UNDECIDED: Any = _Undecided()
"""The top of the flat value lattice: some value, not known statically."""


class _PlainEnvironment:
    """``os.environ`` as a plain ``python SCRIPT`` launch sees it: none of the variables a
    distributed launcher (torchrun, ``torch.distributed.launch``, Slurm, MPI) sets exists.

    Only membership of those names folds (``"WORLD_SIZE" in os.environ`` is ``False``);
    any other question raises, so the fold stays undecided: the user's shell may set
    anything else, and ``os.environ["RANK"]`` is a ``KeyError``, not a value."""

    _instance: _PlainEnvironment | None = None

    def __new__(cls) -> _PlainEnvironment:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str) and (
            key in _LAUNCHER_VARIABLES or key.startswith(_LAUNCHER_PREFIXES)
        ):
            return False
        raise LookupError(key)

    def __repr__(self) -> str:
        return "os.environ"

    def __reduce__(self) -> str:
        return "PLAIN_ENVIRONMENT"


_LAUNCHER_VARIABLES = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "NODE_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
    }
)
_LAUNCHER_PREFIXES = ("TORCHELASTIC_", "SLURM_", "OMPI_COMM_WORLD_", "PMI_")

PLAIN_ENVIRONMENT: Any = _PlainEnvironment()


@attrs.frozen
class TensorShape:
    """A tensor a plain launch builds from sizes it knows (``torch.randn(4, 1) * 5``): only
    its shape is a launch value (``W.size(0)`` is 4, ``W.shape`` is ``(4, 1)``). Arithmetic
    with a number keeps the shape; anything else is undecided (broadcasting between
    tensors is not followed)."""

    dims: tuple[int, ...]

    def _elementwise(self, other: object) -> TensorShape:
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return self
        raise TypeError(f"not folded: a tensor with {other!r}")

    __add__ = __radd__ = __sub__ = __rsub__ = _elementwise
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _elementwise

    def size(self, *index: int) -> int | tuple[int, ...]:
        return self.dims[index[0]] if index else self.dims


@attrs.frozen(cache_hash=True)
class ConstantFact:
    """The value an expression holds on a plain launch, where it was set, and under which
    path condition. ``value`` is hashable (tuples for lists, sorted item tuples for dicts)."""

    value: Hashable = attrs.field(eq=lambda value: (type(value), value))  # 1 is not 1.0
    # not part of the fact's identity: the same value on the same path, bound in two
    # places, is one fact (so calls passing it share one analysis); the join keeps the
    # evidence that comes first in the file
    evidence: Evidence = attrs.field(eq=False)
    condition: PathCondition = PathCondition.DEFAULT

    @property
    def decided(self) -> bool:
        return self.value is not UNDECIDED

    def under(self, condition: PathCondition) -> ConstantFact:
        """The same value seen from a path that also needs ``condition``."""
        worse = self.condition.worst(condition)
        return self if worse is self.condition else attrs.evolve(self, condition=worse)


_RANK = {condition: rank for rank, condition in enumerate(PathCondition)}


def around_the_loop(entry: ConstantFact, pass_: ConstantFact) -> ConstantFact:
    """A loop's entry fact as it reaches the join after the loop, beside what one pass
    leaves (``pass_``).

    A pass that changes the value under a condition worse than the entry's (``running =
    True`` under ``if process.name() == "ollama":``, which no launch fact decides) leaves
    the entry's value only where the pass does not change it: the entry holds under the
    pass's condition, and two different values join to undecided — as an ``if`` joins
    its arms. Joined as it stood, the entry's better condition won: a process scan folded
    to "nothing found", and the script was read as raising where it does not."""
    if _RANK[pass_.condition] > _RANK[entry.condition] and not _same_value(
        entry.value, pass_.value
    ):
        return entry.under(pass_.condition)
    return entry


def _same_value(a: Hashable, b: Hashable) -> bool:
    """The same Python value (``1`` is not ``1.0``; NaN is never the same)."""
    return a is b or (type(a) is type(b) and a == b and _not_nan(a))


def join_constants(a: ConstantFact | None, b: ConstantFact | None) -> ConstantFact | None:
    """The fact after two paths merge (None: no launch fact, as in a lint run).

    Lexicographic: the better condition wins; at equal conditions equal values keep the
    evidence that comes first in the file, different values are :data:`UNDECIDED` (with
    that evidence). Commutative, associative and idempotent
    (``tests/analysis/test_launch_constants.py`` proves it over generated facts).
    """
    if a is None or a is b:
        return b
    if b is None:
        return a
    rank_a, rank_b = _RANK[a.condition], _RANK[b.condition]
    if rank_a != rank_b:
        return a if rank_a < rank_b else b
    first = a if evidence_order(a.evidence) <= evidence_order(b.evidence) else b
    if _same_value(a.value, b.value):
        return first
    if is_items(a.value) and is_items(b.value):
        # a dict built alike on both paths, a key set on one (``if fp16:
        # config["fp16"] = {...}``): the keys both agree on keep their values
        return ConstantFact(_items_joined(a.value, b.value), first.evidence, a.condition)
    return ConstantFact(UNDECIDED, first.evidence, a.condition)


def _items_joined(a: Items, b: Items) -> Items:
    """Two dicts joined key by key: a value both hold stays, any other is undecided (a
    key only one holds may be missing: undecided too). Keys in a canonical order, so the
    join stays commutative and associative."""
    left, right = dict(a), dict(b)
    joined = []
    for key in sorted(left.keys() | right.keys(), key=repr):
        mine, theirs = left.get(key, UNDECIDED), right.get(key, UNDECIDED)
        same = mine is theirs or (type(mine) is type(theirs) and mine == theirs)
        joined.append((key, mine if same else UNDECIDED))
    return Items(joined)


def _not_nan(value: object) -> bool:
    return not (isinstance(value, float) and math.isnan(value))


class Items(tuple[tuple[Hashable, Hashable], ...]):
    """A dict as launch mode spells one: its (key, value) pairs in order — dicts are not
    hashable, and constants must be. Its own type, so that a list of pairs is not taken
    for a dict, and telling one costs no scan of its pairs."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Items({tuple.__repr__(self)})"


def is_items(value: object) -> TypeGuard[Items]:
    """Whether a constant is a dict (:class:`Items`)."""
    return isinstance(value, Items)


def as_constant(data: object) -> Hashable:
    """Data read from a file (JSON, YAML) spelt as a launch constant: dicts as their item
    tuples, lists as tuples; what is not plain data is undecided."""
    if isinstance(data, dict):
        return Items((key, as_constant(value)) for key, value in data.items())
    if isinstance(data, (list, tuple)):
        return tuple(as_constant(item) for item in data)
    if data is None or isinstance(data, (str, int, float, bool)):
        return data
    return UNDECIDED


LARGEST_FOLDED = 10**12  # ``2 ** 1000`` is not a batch size; fold no further


def worst_condition(
    condition: PathCondition, parts: list[tuple[Hashable, PathCondition]]
) -> PathCondition:
    """The worst of ``condition`` and the conditions of the folded ``parts``."""
    for _, part in parts:
        condition = condition.worst(part)
    return condition


def apply_folded(
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
        if abs(result) > LARGEST_FOLDED:
            return UNDECIDED, here
    try:
        hash(result)
    except TypeError:
        return UNDECIDED, here
    return result, worst_condition(here, list(parts))


# how Python computes the operators a fold meets (the script reader folds with them too)
BINARY_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
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

#: ``str`` methods a fold applies to a known string (``str(args.output_dir).lower()``):
#: pure, and giving strings or booleans
STRING_METHODS = frozenset(
    {"lower", "upper", "casefold", "title", "strip", "lstrip", "rstrip", "replace"}
    | {"startswith", "endswith"}
)


def string_method(receiver: Any, method: str, arguments: list[Any]) -> Any:
    """``receiver.method(*arguments)`` for a string and one of :data:`STRING_METHODS`;
    :data:`UNDECIDED` otherwise (or when Python raises)."""
    if not isinstance(receiver, str) or method not in STRING_METHODS:
        return UNDECIDED
    if not all(isinstance(a, (str, int, tuple)) for a in arguments):
        return UNDECIDED
    try:
        return getattr(receiver, method)(*arguments)
    except (TypeError, ValueError):
        return UNDECIDED


#: the dtype attributes of ``torch`` a configuration names (``torch.bfloat16``), folded to
#: their written name, as a run configuration spells a dtype
TORCH_DTYPES = ("bfloat16", "float16", "half", "float32", "float", "float64")
