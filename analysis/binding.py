"""Binding a call's arguments to a function's parameters, and typing the unbound ones.

A parameter takes the value its caller passed; failing that, its default; failing that,
the kind its annotation names (medium confidence); and only then the kind its name
suggests (low confidence, :mod:`torchward.analysis.fallback`).
"""

from __future__ import annotations

import ast

from . import catalog
from .fallback import kind_from_name
from .finding import Confidence
from .names import ImportTable, qualified_name
from .semantic import FunctionInfo
from .values import SCALAR, UNKNOWN, Kind, Value

_ANNOTATION_KINDS = {
    "torch.nn.Module": Kind.MODEL,
    "torch.optim.Optimizer": Kind.OPTIMIZER,
    "torch.Tensor": Kind.TENSOR,
}


def bind_parameters(
    info: FunctionInfo,
    args: list[Value],
    kwargs: dict[str, Value],
    self_value: Value | None,
    imports: ImportTable,
) -> dict[str, Value]:
    spec = info.node.args
    positional = [*spec.posonlyargs, *spec.args]
    defaults = dict(
        zip([p.arg for p in positional[len(positional) - len(spec.defaults) :]], spec.defaults)
    )
    defaults.update({p.arg: d for p, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None})
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
            value = (
                SCALAR
                if isinstance(defaults[param.arg], ast.Constant)
                and defaults[param.arg].value is not None
                else UNKNOWN
            )
        else:
            value = UNKNOWN
        if value is UNKNOWN or value == UNKNOWN:
            value = guess_parameter(param, imports)
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


def parameter_names(info: FunctionInfo) -> list[str]:
    spec = info.node.args
    return [p.arg for p in [*spec.posonlyargs, *spec.args]]
