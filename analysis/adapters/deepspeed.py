"""DeepSpeed: ``deepspeed.initialize`` and the engine it returns.

``engine, optimizer, loader, scheduler = deepspeed.initialize(model=..., ...)``: the
engine wraps the model (calling it is a forward pass, ``engine.train()`` / ``eval()``
switch its mode), ``engine.backward(loss)`` divides the loss by the configured
accumulation steps, and ``engine.step()`` steps the optimizer only at accumulation
boundaries, steps the scheduler it was given and zeroes the gradients. Its events are
tagged ``"deepspeed"``: the rules about zeroing, scaling and step order leave them to the
engine. A loader built by ``initialize(training_data=...)`` is sharded by DeepSpeed.
"""

from __future__ import annotations

from ..events import EventKind
from ..names import dotted
from ..values import UNKNOWN, Kind, LoaderFacts, Value
from . import Adapter, FrameworkTraits

FRAMEWORK = "deepspeed"
INITIALIZE = "deepspeed.initialize"
_MODEL_METHODS = {"train", "eval", "forward"}


class DeepSpeedAdapter(Adapter):
    traits = ((FRAMEWORK, FrameworkTraits(zeroes_gradients=True, scales_accumulation=True)),)

    def api(self, run, name, node, args, kwargs):
        if name != INITIALIZE:
            return None
        origin = run.evidence(node, f"`{run.text(node)}` is constructed here")
        return Value(
            kind=Kind.CONTAINER,
            elements=(
                Value(kind=Kind.ENGINE, origin=origin),
                Value(kind=Kind.OPTIMIZER, origin=origin),
                Value(kind=Kind.LOADER, loader_facts=LoaderFacts(framework=FRAMEWORK)),
                Value(kind=Kind.SCHEDULER),
            ),
        )

    def method(self, run, receiver, method, node):
        if receiver.kind is not Kind.ENGINE:
            return None
        if method in _MODEL_METHODS:
            # the engine is the model for calling and mode switching
            return run.model_method(
                receiver, method, node, dotted(node.func.value), receiver.confidence
            )
        args, _ = run.arguments(node)
        if method == "backward":
            run.backward(args[0] if args else UNKNOWN, node, framework=FRAMEWORK)
        elif method == "step":
            run.emit(EventKind.STEP, node, target=receiver, framework=FRAMEWORK)
        return UNKNOWN


ADAPTER = DeepSpeedAdapter()
