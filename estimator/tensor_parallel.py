"""Megatron-style tensor parallelism: what one GPU of a tensor-parallel group holds.

Tensor parallelism of degree ``t`` (Shoeybi et al. 2019, "Megatron-LM", section 3) splits
every transformer layer over ``t`` GPUs: the attention by heads (the q / k / v projections
column-wise, the output projection row-wise) and the MLP by its intermediate size (up / gate
column-wise, down row-wise). The job's ``gpus`` are then ``t`` × the data-parallel replicas,
and DDP / ZeRO / FSDP shard over the replicas only.

The estimator sizes it by handing the cost model the **shard** one GPU holds (:func:`shard`):
the same model with ``heads / t``, ``kv_heads / t`` and ``intermediate / t`` per layer, and
``gpus / t`` as the data-parallel world. Every term then follows from the one cost model,
for these reasons:

- **weights, gradients, optimizer state, master weights** of the split projections ÷ t:
  each GPU owns ``1/t`` of their rows or columns. The rest is **replicated**, so counted
  whole on every GPU: the token embeddings and the LM head (not vocabulary-parallel here:
  Megatron's vocab-parallel embedding is a separate choice a plan does not make), the norms,
  the position embeddings, and every bias (the row-parallel biases are replicated; the
  column-parallel ones would split too, but they are a few thousand parameters per layer
  and counting them whole errs on the safe side);
- **activations inside the split blocks** ÷ t: q, k, v, the attention scores and
  probabilities (per head), the attention output before the output projection, the MLP's
  intermediate and its activation are each computed on the GPU's own heads / columns;
- **layer inputs and outputs** whole: without sequence parallelism every GPU holds the full
  ``batch × seq × hidden`` residual stream, the norms' outputs that feed the split
  projections, and each block's output after its all-reduce (the shard keeps ``hidden``);
- **logits** whole: the LM head is replicated, so each GPU computes all of them;
- **KV cache** (inference / generation) ÷ t: keys and values are per KV head;
- **FSDP's gathered layer** is the GPU's shard of a layer, which is what it gathers.

A model allows degree ``t`` only when ``t`` divides every stack's attention heads, KV heads
and intermediate size (:func:`why_not`); mixture-of-experts and latent-attention (MLA)
layers are not sized under tensor parallelism, nor are jobs that freeze parts of the model
(the frozen share is counted on the whole model), and :func:`shard` refuses them rather
than guess.
"""

from __future__ import annotations

import attrs

from .resolve import Resolved
from .runconfig import Field, RunConfig
from .shape import ModelShape

__all__ = ["TensorParallelError", "degree", "shard", "shard_shape", "why_not"]


class TensorParallelError(ValueError):
    """A tensor-parallel degree the model or the job cannot take (a usage error)."""


def degree(config: RunConfig) -> int:
    """The job's tensor-parallel degree (1: none)."""
    return int(config.value("tensor_parallel") or 1)


def why_not(shape: ModelShape, t: int) -> str | None:
    """Why ``shape`` cannot be split ``t`` ways, or ``None`` when it can."""
    if t == 1:
        return None
    if not shape.stacks:
        return "the model has no transformer layers to split"
    for stack in shape.stacks:
        if stack.moe or stack.mla:
            kind = "mixture-of-experts" if stack.moe else "latent-attention (MLA)"
            return f"{kind} layers are not sized under tensor parallelism"
        for name, value in (
            ("attention heads", stack.heads),
            ("key/value heads", stack.kv_heads),
            ("intermediate size", stack.intermediate),
        ):
            if value % t:
                return f"{t} does not divide the {name} ({value})"
    return None


def shard_shape(shape: ModelShape, t: int) -> ModelShape:
    """The part of ``shape`` one GPU of a degree-``t`` group holds (see the module doc)."""
    if t == 1:
        return shape
    stacks = tuple(
        attrs.evolve(
            s, heads=s.heads // t, kv_heads=s.kv_heads // t, intermediate=s.intermediate // t
        )
        for s in shape.stacks
    )
    split = attrs.evolve(shape, stacks=stacks)
    # only the split projections' weights leave; everything else stays whole on every GPU
    return attrs.evolve(split, params=shape.params - shape.linear_params + split.linear_params)


def shard(r: Resolved) -> Resolved:
    """``r`` as one GPU of its tensor-parallel group sees it: the shard of the model, and
    the data-parallel replicas as the world that sharding divides by. Raises
    :class:`TensorParallelError` for a degree the job cannot take."""
    t = degree(r.config)
    if t == 1:
        return r
    reason = why_not(r.shape, t)
    if reason is None and r.config.value("frozen") is not None:
        reason = "a job that freezes parts of the model is not sized under tensor parallelism"
    gpus = r.config.gpus
    world = t if gpus is None or gpus.source == "assumed" else int(gpus.value)
    if reason is None and world % t:
        reason = f"{world} GPUs are not a multiple of the tensor-parallel degree"
    if reason is not None:
        raise TensorParallelError(f"tensor parallelism of degree {t}: {reason}")
    replicas = Field(world // t, f"{gpus.source if gpus else 'assumed'} ÷ tensor parallel {t}")
    config = attrs.evolve(r.config, gpus=replicas)
    return attrs.evolve(r, config=config, shape=shard_shape(r.shape, t))
