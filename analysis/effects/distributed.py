"""Data-parallel wraps: DDP, FSDP and FSDP2's ``fully_shard``, as torchrun scripts write them.

A torchrun script calls ``dist.init_process_group(...)``, picks its device from
``LOCAL_RANK`` and wraps the model: ``DistributedDataParallel(model, device_ids=[rank])``,
``FullyShardedDataParallel(model)``, or FSDP2's ``fully_shard(model)`` (per block, then
the root), which shards the module *in place* and returns it. Each is a ``DDP_WRAP``
event: from then on every process trains the same model on its own ranks' data, which is
what the sampler rules ask about. The process group itself changes no rule's question
(a loader is sharded by its sampler, not by ``init_process_group``), so it has no event.
"""

from __future__ import annotations

from ..facts import catalog
from ..facts.events import EventKind
from ..facts.values import Kind, ModelFacts, Value, evolve
from ..syntax.names import dotted
from . import Adapter


class DistributedAdapter(Adapter):
    def api(self, run, name, node, args, kwargs):
        if name not in catalog.DDP_WRAPPERS:
            return None
        first = args[0] if args else kwargs.get("module", Value())
        run.emit(EventKind.DDP_WRAP, node, target=first)
        base = first if first.kind is Kind.MODEL else Value(kind=Kind.MODEL)
        origin = run.evidence(node, f"`{run.text(node)}` is constructed here")
        model_facts = evolve(base.model_facts or ModelFacts(), ddp=True)
        wrapped = evolve(base, origin=base.origin or origin, model_facts=model_facts)
        if name in catalog.IN_PLACE_SHARDING and node.args:
            path = dotted(node.args[0])
            if path is not None and path in run.env:
                run.env[path] = wrapped  # ``fully_shard(model)`` shards the module it is given
        return wrapped


ADAPTER = DistributedAdapter()
