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
