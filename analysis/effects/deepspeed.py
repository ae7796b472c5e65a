"""DeepSpeed: ``deepspeed.initialize`` and the engine it returns.

``engine, optimizer, loader, scheduler = deepspeed.initialize(model=..., ...)``: the
engine wraps the model (calling it is a forward pass, ``engine.train()`` / ``eval()``
switch its mode), ``engine.backward(loss)`` divides the loss by the configured
accumulation steps, and ``engine.step()`` steps the optimizer only at accumulation
boundaries, steps the scheduler it was given and zeroes the gradients. Its events are
tagged ``"deepspeed"``: the rules about zeroing, scaling and step order leave them to the
engine. A loader built by ``initialize(training_data=...)`` is sharded by DeepSpeed;
``initialize`` itself is a ``DDP_WRAP``: every process trains a replica of the model (the
engine is data-parallel, ZeRO-sharded or not), so a loader built by hand needs a
``DistributedSampler`` as under DDP.
"""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.values import Kind, LoaderFacts, Value
from . import Adapter

FRAMEWORK = "deepspeed"
INITIALIZE = "deepspeed.initialize"


class DeepSpeedAdapter(Adapter):
    """``deepspeed.initialize``; the engine's methods are the library-effects table's
    ``engine`` entries (:mod:`.library`)."""

    def api(self, run, name, node, args, kwargs):
        if name != INITIALIZE:
            return None
        origin = run.evidence(node, f"`{run.text(node)}` is constructed here")
        # the engine trains a replica on every process (data parallel, sharded or not)
        model = kwargs.get("model") or (args[1] if len(args) > 1 else Value())
        run.emit(EventKind.DDP_WRAP, node, target=model)
        return Value(
            kind=Kind.CONTAINER,
            elements=(
                Value(kind=Kind.ENGINE, origin=origin),
                Value(kind=Kind.OPTIMIZER, origin=origin),
                Value(kind=Kind.LOADER, loader_facts=LoaderFacts(framework=FRAMEWORK)),
                Value(kind=Kind.SCHEDULER),
            ),
        )


ADAPTER = DeepSpeedAdapter()
