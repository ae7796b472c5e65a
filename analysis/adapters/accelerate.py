"""Hugging Face Accelerate (and Lightning Fabric, whose API has the same shape).

``accelerator.prepare(model, optimizer, loader, scheduler)`` hands back the objects
wrapped for the run: a prepared loader is sharded per process (so it needs no
``DistributedSampler``) and a prepared model is already distributed.
``accelerator.backward(loss)`` divides the loss by ``gradient_accumulation_steps`` and
scales it for mixed precision, but — like a plain backward — never zeroes the gradients:
the loop must still call ``optimizer.zero_grad()``. Its events are tagged
``"accelerate"``. ``with accelerator.accumulate(model):`` skips the optimizer's step and
zero_grad on micro-steps and scales the loss (the interpreter marks events inside it
``in_accumulate``). ``accelerator.gather`` / ``reduce`` are collectives without autograd:
what they return carries no graph, so keeping it is no leak.

Fabric's ``fabric.backward`` does not divide by an accumulation count; it is treated like
Accelerate's (quiet) rather than flagged on a guess about how the loss was normalised.
"""

from __future__ import annotations

from ..events import EventKind
from ..values import UNKNOWN, Kind, Value, evolve
from . import Adapter, FrameworkTraits

FRAMEWORK = "accelerate"
_PREPARE_ONE = {
    "prepare_model",
    "prepare_data_loader",
    "prepare_optimizer",
    "prepare_scheduler",
    "setup_module",
    "setup_dataloaders",
}
_COLLECTIVES = {"gather", "gather_for_metrics", "reduce", "pad_across_processes", "all_gather"}
_CLIPPING = {"clip_grad_norm_", "clip_grad_value_", "clip_gradients"}


class AccelerateAdapter(Adapter):
    traits = ((FRAMEWORK, FrameworkTraits(zeroes_gradients=False, scales_accumulation=True)),)

    def method(self, run, receiver, method, node):
        if receiver.kind is not Kind.ACCELERATOR:
            return None
        args, _ = run.arguments(node)
        if method == "backward":
            run.backward(args[0] if args else UNKNOWN, node, framework=FRAMEWORK)
            return UNKNOWN
        if method in ("prepare", "setup"):
            prepared = tuple(evolve(a, prepared=True) for a in args)
            if len(prepared) == 1:
                return prepared[0]
            return Value(kind=Kind.CONTAINER, elements=prepared)
        if method in _PREPARE_ONE:
            return evolve(args[0], prepared=True) if args else UNKNOWN
        if method == "unwrap_model":
            first = args[0] if args else UNKNOWN
            return first if first.kind is Kind.MODEL else Value(kind=Kind.MODEL)
        if method in _COLLECTIVES:
            return Value(kind=Kind.TENSOR)
        if method in _CLIPPING:
            run.emit(EventKind.CLIP_GRAD, node)
        return UNKNOWN


ADAPTER = AccelerateAdapter()
