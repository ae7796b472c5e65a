"""Binding a call's arguments to a function's parameters, and typing the unbound ones.

A parameter takes the value its caller passed; failing that, its default; failing that,
the kind its annotation names (medium confidence); and only then the kind its name
suggests (low confidence, :mod:`torchward.analysis.facts.fallback`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..finding import Confidence
from ..syntax.names import ImportTable, dotted, qualified_name
from . import catalog
from .fallback import kind_from_name
from .semantic import FunctionInfo, ModuleIndex
from .values import SCALAR, UNKNOWN, Kind, Loc, Value, with_constant

_ANNOTATION_KINDS = {
    "torch.nn.Module": Kind.MODEL,
    "torch.optim.Optimizer": Kind.OPTIMIZER,
    "torch.Tensor": Kind.TENSOR,
}


def parameter_defaults(spec: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """Each parameter that has a default, with it: the positional ones (defaults belong to
    the last of them), then the keyword-only ones."""
    positional = [*spec.posonlyargs, *spec.args]
    return [
        *zip(positional[len(positional) - len(spec.defaults) :], spec.defaults),
        *((p, d) for p, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None),
    ]


@dataclass(frozen=True)
class Parameters:
    """A function's parameters by name: in order, the positional ones, the ``*args`` /
    ``**kwargs`` names, and the defaults."""

    names: tuple[str, ...]  # every named parameter, in order (keyword-only ones last)
    positional: tuple[str, ...]
    variadic: frozenset[str]
    defaults: dict[str, ast.expr]

    @classmethod
    def of(cls, spec: ast.arguments) -> Parameters:
        positional = tuple(p.arg for p in (*spec.posonlyargs, *spec.args))
        return cls(
            names=(*positional, *(p.arg for p in spec.kwonlyargs)),
            positional=positional,
            variadic=frozenset(v.arg for v in (spec.vararg, spec.kwarg) if v is not None),
            defaults={p.arg: d for p, d in parameter_defaults(spec)},
        )


def bind_parameters(
    info: FunctionInfo,
    args: list[Value],
    kwargs: dict[str, Value],
    self_value: Value | None,
    imports: ImportTable,
) -> dict[str, Value]:
    spec = info.node.args
    positional = [*spec.posonlyargs, *spec.args]
    defaults = {p.arg: d for p, d in parameter_defaults(spec)}
    supplied = list(args)
    if info.is_method and positional:
        supplied.insert(0, self_value or Value(kind=Kind.INSTANCE, class_name=info.class_name))
    env: dict[str, Value] = {}
    for i, param in enumerate([*positional, *spec.kwonlyargs]):
        if i < len(positional) and i < len(supplied):
            value = supplied[i]
        elif param.arg in kwargs:
            value = kwargs[param.arg]
        elif param.arg in defaults:
            default = defaults[param.arg]
            value = (
                SCALAR
                if isinstance(default, ast.Constant) and default.value is not None
                else UNKNOWN
            )
        else:
            value = UNKNOWN
        bare = value if value.constant is None else with_constant(value, None)
        if bare is UNKNOWN or bare == UNKNOWN:
            # nothing known but, in launch mode, perhaps its constant: typed by its name
            # or annotation, keeping the constant
            value = with_constant(guess_parameter(param, imports), value.constant)
        env[param.arg] = value
    for extra in (spec.vararg, spec.kwarg):
        if extra is not None:
            env[extra.arg] = UNKNOWN
    return env


def guess_parameter(param: ast.arg, imports: ImportTable) -> Value:
    if param.annotation is not None:
        name = qualified_name(param.annotation, imports)
        kind = _ANNOTATION_KINDS.get(name or "") or (
            catalog.kind_of_constructor(name) if name else None
        )
        if kind is not None:
            return Value(kind=kind, confidence=Confidence.MEDIUM)
    kind = kind_from_name(param.arg)
    return Value(kind=kind, confidence=Confidence.LOW) if kind else UNKNOWN


def class_fields(
    index: ModuleIndex, class_name: str, args: list[Value], kwargs: dict[str, Value]
) -> dict[str, Value]:
    """What the class body puts on every instance before ``__init__`` runs: dataclass
    fields and class attributes (``losses: list = field(default_factory=list)``,
    ``history = []``, ``optimizer: torch.optim.Optimizer``), base classes' first.

    A container or number gets an identity of its own (created outside any loop, like
    one ``__init__`` builds); an annotation types the field as it types a parameter.
    When the class has no ``__init__`` of its own (a dataclass), the constructor's
    arguments bind to the annotated fields in order, as the generated one binds them.
    """
    fields: dict[str, Value] = {}
    annotated: list[str] = []
    for info in reversed(index.lineage(class_name)):
        for statement in info.node.body:
            target, annotation, default = _field_parts(statement)
            if target is None:
                continue
            if annotation is not None:
                annotated.append(target)
            loc = Loc(info.name, statement.lineno, statement.col_offset, f"self.{target}")
            fields[target] = _field_value(target, annotation, default, loc, index.imports)
    if index.find_method(class_name, "__init__") is None:
        names = list(dict.fromkeys(annotated))
        for name, value in [*zip(names, args), *kwargs.items()]:
            if name in fields and value != UNKNOWN:
                fields[name] = value
    return fields


def field_default(value: ast.expr) -> ast.expr | None:
    """``x: int = 3`` → ``3``; ``x: int = field(default=3)`` → ``3``; a factory → ``None``."""
    if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("field"):
        return next((k.value for k in value.keywords if k.arg == "default"), None)
    return value


def _field_parts(
    statement: ast.stmt,
) -> tuple[str | None, ast.expr | None, ast.expr | None]:
    """(name, annotation, default) of a class-body field; (None, None, None) otherwise."""
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id, statement.annotation, statement.value
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and isinstance(statement.value, (ast.List, ast.Dict, ast.Constant, ast.Call))
    ):
        return statement.targets[0].id, None, statement.value
    return None, None, None


_CONTAINER_FACTORIES = {"list", "dict", "set", "deque", "defaultdict", "OrderedDict"}


def _field_value(
    name: str, annotation: ast.expr | None, default: ast.expr | None, loc: Loc, imports
) -> Value:
    if isinstance(default, ast.Call):
        # ``field(default_factory=list)``, or a container built directly (``deque(maxlen=9)``)
        factory = next((k.value for k in default.keywords if k.arg == "default_factory"), None)
        made = dotted(factory if factory is not None else default.func) or ""
        if made.rsplit(".", 1)[-1] in _CONTAINER_FACTORIES:
            return Value(kind=Kind.CONTAINER, locs=frozenset({loc}))
    if isinstance(default, (ast.List, ast.Dict)):
        return Value(kind=Kind.CONTAINER, locs=frozenset({loc}))
    if isinstance(default, ast.Constant) and isinstance(default.value, (int, float)):
        return Value(kind=Kind.SCALAR, locs=frozenset({loc}))
    if annotation is not None:
        return guess_parameter(ast.arg(arg=name, annotation=annotation), imports)
    return UNKNOWN


def parameter_names(info: FunctionInfo) -> list[str]:
    spec = info.node.args
    return [p.arg for p in [*spec.posonlyargs, *spec.args]]
