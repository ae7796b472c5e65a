"""The model a script trains when it is a bare ``torch.nn`` layer, not a class of its own.

Toy and tutorial scripts train ``fc = nn.Linear(4, 1)`` or ``model = nn.Sequential(...)``
directly. Such a call is the model when the default launch trains what it is bound to: an
optimizer takes its parameters, or the script clears its gradients itself
(``fc.zero_grad()``, the update written by hand). It is counted by the same layer table as
a module class's body (:mod:`.modulecount`), with its sizes followed like any other value;
a size that cannot be followed leaves it unsized, and a note names it.
"""

from __future__ import annotations

import ast

from ..syntax.names import qualified_name
from .modulecount import ModuleCounter, module_constants
from .runconfig_declarations import Values
from .runconfig_fields import ReaderState
from .runconfig_model import bound_module_name

__all__ = ["bare_layer_model"]


def bare_layer_model(
    tree: ast.Module, path: str, values: Values, reader: ReaderState, notes: list[str]
) -> None:
    """Name and count the largest trained ``torch.nn`` layer bound to a name on the default
    path (called only when no other model was found)."""
    trained = reader.optimized | _cleared(values)
    found: list[tuple[int, ast.Call, str, str]] = []
    layers: set[str] = set()  # the names bound to torch.nn layers the script trains
    counter: ModuleCounter | None = None
    for node in values.paths.of_type(ast.Call):
        qualified = qualified_name(node.func, reader.imports) or ""
        tail = qualified.rsplit(".", 1)[-1]
        if not qualified.startswith("torch.nn.") or not tail[:1].isupper():
            continue
        name = bound_module_name(node, values)
        if name is None or name not in trained or not values.paths.state(node).runs:
            continue
        layers.add(name)
        if counter is None:
            counter = ModuleCounter(tree, path, module_constants(tree), depth=1)
        folded, confidence = _folded(node, values)
        count = counter.call(folded, {}, {})
        if count.unknown or count.params == 0:
            shown = ", ".join(dict.fromkeys(count.unknown)) or "no parameters"
            notes.append(
                f"{reader.path}:{node.lineno}: `{name}` ({tail}) is the model the script "
                f"trains; not sized: {shown[:200]}"
            )
            continue
        cap = values.paths.state(node).confidence_cap
        confidence = confidence if cap == "high" else "medium"
        found.append((count.params, node, tail, confidence))
    if not found:
        return
    others = _other_trained_modules(values, reader, layers)
    if others:  # a backbone beside the head: the layers are part of the job, not all of it
        notes.append(
            f"{reader.path}: the optimizer also trains {', '.join(sorted(others))}, which "
            "the reader does not size: the model is not named"
        )
        return
    params = sum(item[0] for item in found)  # every trained layer's weights are the job's
    _, node, tail, _ = max(found, key=lambda item: item[0])
    confidence = min((item[3] for item in found), key=lambda c: ("low", "medium", "high").index(c))
    shown = f"{tail}'s parameters" if len(found) == 1 else f"{len(found)} trained layers"
    reader.set("model", tail, node.lineno, confidence)
    reader.set("params", params, node.lineno, confidence, f"{reader.path}:{node.lineno} ({shown})")
    reader.set("pretrained", False, node.lineno, "medium")


def _other_trained_modules(values: Values, reader: ReaderState, layers: set[str]) -> set[str]:
    """Names whose ``.parameters()`` an optimizer of the script takes beside the layers
    (``list(backbone.parameters()) + list(head.parameters())``)."""
    return {
        node.func.value.id
        for node in values.paths.of_type(ast.Call)
        if isinstance(node.func, ast.Attribute)
        and node.func.attr in ("parameters", "named_parameters")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in reader.optimized
        and node.func.value.id not in layers
        and values.paths.state(node).runs
    }


def _cleared(values: Values) -> set[str]:
    """Names whose gradients the default path clears itself (``fc.zero_grad()``)."""
    return {
        node.func.value.id
        for node in values.paths.of_type(ast.Call)
        if isinstance(node.func, ast.Attribute)
        and node.func.attr == "zero_grad"
        and isinstance(node.func.value, ast.Name)
        and values.paths.state(node).runs
    }


def _folded(node: ast.Call, values: Values) -> tuple[ast.Call, str]:
    """A copy of the layer call with each argument the launch folds to a plain size written
    as that value (``nn.Linear(W.size(0), 1)`` with ``W = torch.randn(4, 1)``: 4), in the
    layers it nests too, and the lowest confidence among those values (``high`` when
    every size is written in place)."""
    confidence = "high"

    def fold(expr: ast.expr) -> ast.expr:
        nonlocal confidence
        if isinstance(expr, ast.Starred):
            return expr
        found = values.get(expr)
        if found is None or not _plain(found[0]):
            return _rebuilt(expr, fold) if isinstance(expr, ast.Call) else expr  # a layer
        if found[1] != "high":
            confidence = "medium"
        return ast.copy_location(ast.Constant(found[0]), expr)

    return _rebuilt(node, fold), confidence


def _rebuilt(call: ast.Call, fold) -> ast.Call:
    return ast.copy_location(
        ast.Call(
            call.func,
            [fold(a) for a in call.args],
            [ast.keyword(k.arg, fold(k.value)) for k in call.keywords],
        ),
        call,
    )


def _plain(value: object) -> bool:
    if isinstance(value, tuple):
        return all(_plain(item) for item in value)
    return isinstance(value, (int, float, bool))
