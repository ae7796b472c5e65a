"""Library objects' methods as training events, from the library-effects table.

A ``GradScaler``'s ``scale`` / ``unscale_`` / ``step``, timm's ``loss_scaler(loss,
optimizer)``, ``accelerator.backward`` and ``prepare``, a DeepSpeed engine's
``backward`` / ``step`` and a LightningModule's ``manual_backward`` are all entries of
:mod:`.table`'s table: what the call does (backward of which argument, step of which
optimizer, scale, unscale, clip) and what it hands back. This adapter finds the entry
for the receiver's kind and the method, and turns each effect into the engine's event
— the same events a hand-written loop produces, so every rule applies unchanged.

A receiver of a table kind whose method the table does not list is claimed quietly
(its arguments are evaluated, the result is unknown), except a LightningModule's, which
is a model: its other methods are the model's (``self.eval()``, ``self(x)``).
"""

from __future__ import annotations

import ast

from ..facts.events import EventKind
from ..facts.owncode import backward_receiver
from ..facts.values import UNKNOWN, Kind, Value, evolve
from ..syntax.names import dotted
from . import Adapter
from .lightning import is_lightning_module
from .table import Effect, MethodEffects, current

_EVENTS = {
    "scale": EventKind.SCALER_SCALE,
    "unscale": EventKind.SCALER_UNSCALE,
    "scaler_step": EventKind.SCALER_STEP,
    "clip": EventKind.CLIP_GRAD,
}
_RECEIVERS = {Kind.SCALER: "scaler", Kind.ACCELERATOR: "accelerator", Kind.ENGINE: "engine"}


def receiver_kind(run, receiver: Value) -> str | None:
    """The table's name for what ``receiver`` is, if the table describes its methods."""
    if receiver.kind in _RECEIVERS:
        return _RECEIVERS[receiver.kind]
    if is_lightning_module(run, receiver):
        return "lightning_module"
    return None


class LibraryAdapter(Adapter):
    def method(self, run, receiver, method, node):
        kind = receiver_kind(run, receiver)
        if kind is None:
            return None
        entry = current().method(kind, method)
        if entry is None:
            if kind == "lightning_module":
                return None  # a LightningModule is a model: its other methods are a model's
            run.arguments(node)
            return UNKNOWN
        return self._apply(run, receiver, entry, node, method)

    def call(self, run, callee, node):
        kind = receiver_kind(run, callee)
        entry = current().method(kind, "__call__") if kind is not None else None
        if entry is None:
            return None
        return self._apply(run, callee, entry, node, "__call__")

    def _apply(self, run, receiver: Value, entry: MethodEffects, node: ast.Call, method: str):
        if entry.returns == "as_model":  # a DeepSpeed engine called or switched like its model
            path = dotted(node.func.value) if isinstance(node.func, ast.Attribute) else None
            return run.model_method(receiver, method, node, path, receiver.confidence)
        args, kwargs = run.arguments(node)
        for effect in entry.effects:
            if _applies(effect, node):
                _emit(run, effect, receiver, node, _argument(effect, node, args, kwargs))
        return _returned(entry.returns, args)


def _applies(effect: Effect, node: ast.Call) -> bool:
    """Whether the call certainly has this effect, given the keywords it was passed."""
    given = {kw.arg: kw.value for kw in node.keywords if kw.arg}
    if effect.only_with is not None:
        value = given.get(effect.only_with)
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return False
    if effect.unless is not None and effect.unless in given:
        value = given[effect.unless]
        if not (isinstance(value, ast.Constant) and value.value is True):
            return False  # decided at run time (``need_update=...``): claim nothing
    return True


def _argument(
    effect: Effect, node: ast.Call, args: list[Value], kwargs: dict[str, Value]
) -> Value | None:
    """The value the effect acts on: its argument by keyword or position (None: the receiver)."""
    if effect.argument is None and effect.keyword is None:
        return None
    if effect.keyword is not None and effect.keyword in kwargs:
        return kwargs[effect.keyword]
    position = effect.argument
    if position is None:
        return UNKNOWN
    starred = any(isinstance(a, ast.Starred) for a in node.args[: position + 1])
    return args[position] if len(args) > position and not starred else UNKNOWN


def _emit(run, effect: Effect, receiver: Value, node: ast.Call, value: Value | None) -> None:
    if effect.effect == "backward":
        run.backward(value if value is not None else UNKNOWN, node, framework=effect.framework)
    elif effect.effect == "step":
        target = receiver if value is None else value
        run.emit(EventKind.STEP, node, target=target, framework=effect.framework)
    elif effect.effect == "clip":
        run.emit(EventKind.CLIP_GRAD, node)
    else:
        run.emit(_EVENTS[effect.effect], node, target=receiver)


def _returned(returns: str, args: list[Value]) -> Value:
    first = args[0] if args else UNKNOWN
    if returns == "argument":
        return first
    if returns == "prepared":
        prepared = tuple(evolve(a, prepared=True) for a in args)
        return prepared[0] if len(prepared) == 1 else Value(kind=Kind.CONTAINER, elements=prepared)
    if returns == "prepared_first":
        return evolve(first, prepared=True) if args else UNKNOWN
    if returns == "model":
        return first if first.kind is Kind.MODEL else Value(kind=Kind.MODEL)
    if returns == "tensor":
        return Value(kind=Kind.TENSOR)
    if returns == "optimizer":
        return Value(kind=Kind.OPTIMIZER)
    if returns == "scheduler":
        return Value(kind=Kind.SCHEDULER)
    return UNKNOWN


def backpropagates(run, node: ast.AST, path: str) -> bool:
    """Whether ``node``, a call :func:`~torchward.analysis.facts.owncode.own_code_index`
    recorded under ``path``, runs backward on ``path``'s value.

    ``path.backward()`` does (a tensor's own). A call that passes ``path`` as an argument
    does when its receiver is a library object whose table entry runs backward on that
    argument (``accelerator.backward(loss)``, ``self.manual_backward(loss)``), not when it
    is a tensor given its output gradient (``y.backward(grad_y)``) or anything the run
    cannot type: the receiver's value decides, never its name. A ``return`` a framework
    backpropagates (:mod:`.driver`) is recorded by the driver itself and always does."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return True
    if not node.args:
        return dotted(backward_receiver(node)) == path
    owner = dotted(node.func.value)
    value = (run.lookup(owner) or run.resolve_path(owner)) if owner else None
    kind = receiver_kind(run, value) if value is not None else None
    entry = current().method(kind, node.func.attr) if kind is not None else None
    if entry is None:
        return False
    return any(
        effect.effect == "backward"
        and effect.argument is not None
        and effect.argument < len(node.args)
        and dotted(node.args[effect.argument]) == path
        for effect in entry.effects
    )


ADAPTER = LibraryAdapter()
