"""How long one optimizer step takes: a roofline model, stated in docs/plan.md.

A *modelled* time, never a measured one. Three parts:

- **compute**: training FLOPs ÷ (the GPU's peak dense TFLOPS at the job's precision ×
  an assumed model-FLOPs utilisation, :data:`ASSUMED_MFU`). FLOPs per token of a
  transformer, after PaLM (Chowdhery et al. 2022, appendix B): ``6·N + 12·L·h·s``
  (forward 2, backward 4 per parameter; attention scores and values); gradient
  checkpointing runs the forward again (``8·N + 16·L·h·s``); LoRA computes no weight
  gradients for the frozen base (``4·N + ...``, ``6·N`` with checkpointing). Only
  transformer stacks are counted; for other models there is no step time;
- **communication**: a ring all-reduce of the gradients (DDP, ZeRO-1/2) moves
  ``2·(w−1)/w`` of their bytes per GPU; ZeRO-3 / FSDP all-gathers the weights for forward
  and backward and reduce-scatters the gradients (``3·(w−1)/w``, the weight gathers once per
  micro-batch); hybrid sharding adds an all-reduce of each GPU's gradient shard across
  nodes. Bandwidth: the GPU's link (NVLink or PCIe, ``gpus.json`` ``gpu_link``) inside a
  node, :data:`NETWORK_GBIT` per node across nodes;
- **tensor parallelism** of degree ``t`` (Megatron-LM, Shoeybi et al. 2019, section 3):
  each GPU computes ``1/t`` of every layer's matmuls and attention (the LM head, replicated,
  whole), and each layer all-reduces its ``batch × seq × hidden`` output twice in the
  forward (after the attention and after the MLP) and twice in the backward (their input
  gradients), three times two with gradient checkpointing (the forward runs again): a ring
  all-reduce over ``t`` GPUs sends ``2·(t−1)/t`` of those bytes (at the activations' dtype)
  per GPU over the node's GPU link. These all-reduces sit between a layer's matmuls, so
  they add to the step rather than overlap it; the data-parallel communication above runs
  over the ``gpus / t`` replicas with each GPU's shard of the gradients;
- **overlap**: DDP and FSDP overlap communication with the backward pass, so the step takes
  the longer of compute and communication, not their sum; an optimizer offloaded to the CPU
  adds :data:`CPU_ADAM_PARAMS_PER_S` and the PCIe copies of gradients and weights;
  parameters offloaded too come over PCIe twice per micro-batch (forward and backward).
"""

from __future__ import annotations

import attrs

from ..hardware import Gpu
from ..resolve import Resolved
from ..tensor_parallel import degree, shard_shape
from . import hardware_extra

__all__ = [
    "ASSUMED_MFU",
    "CPU_ADAM_PARAMS_PER_S",
    "NETWORK_GBIT",
    "StepTime",
    "flops_per_token",
    "step_time",
]

ASSUMED_MFU = 0.40
"""Model-FLOPs utilisation assumed for every GPU. Published large runs reach 0.38-0.52
(tests/plan/data/published_throughputs.json); small jobs on one GPU often reach less."""

NETWORK_GBIT = 100.0
"""Network between nodes, Gbit/s per node, when the instance data says nothing better."""

CPU_ADAM_PARAMS_PER_S = 1.0e9
"""Parameters per second a CPU Adam (DeepSpeed's) updates: an assumption, shown."""

_PRECISION = {
    "fp32": "fp32",
    "amp-bf16": "bf16",
    "bf16": "bf16",
    "amp-fp16": "fp16",
    "fp16": "fp16",
}


@attrs.frozen
class StepTime:
    """One optimizer step, modelled: seconds of compute, of communication, and in all."""

    seconds: float
    compute_s: float
    comm_s: float
    offload_s: float
    tokens: int
    """Tokens one optimizer step processes over all GPUs."""
    peak_tflops: float
    precision: str
    tensor_parallel_s: float = 0.0
    """The tensor-parallel all-reduces of every layer (not overlapped: added)."""

    def to_dict(self) -> dict:
        return {
            "seconds": self.seconds,
            "compute_seconds": self.compute_s,
            "communication_seconds": self.comm_s,
            "offload_seconds": self.offload_s,
            "tensor_parallel_seconds": self.tensor_parallel_s,
            "tokens_per_step": self.tokens,
            "peak_tflops": self.peak_tflops,
            "precision": self.precision,
            "mfu": ASSUMED_MFU,
            "modelled": True,
        }


def flops_per_token(
    params: float,
    layers: int,
    hidden: float,
    seq: int,
    *,
    checkpointing: bool = False,
    lora: bool = False,
) -> float:
    """Training FLOPs per token of a transformer with ``params`` weights in matmuls."""
    weight = 4.0 if lora else 6.0
    attention = 12.0
    if checkpointing:
        weight += 2.0
        attention += 4.0
    return weight * params + attention * layers * hidden * seq


def peak_tflops(gpu: Gpu, dtype: str) -> float | None:
    """The GPU's dense peak at the job's precision (fp16 when bf16 is not listed for the card
    would be wrong, so a missing figure is ``None``: no step time)."""
    table = hardware_extra.peak_tflops(gpu.key)
    return table.get(_PRECISION.get(dtype, "fp32")) if table else None


def _active_linear(stack) -> float:
    """One layer's matmul weights a token passes through (an MoE layer: its routed experts)."""
    if not stack.moe:
        return float(stack.linear_params_per_layer())
    h = stack.hidden
    mats = 3 if stack.mlp == "gated" else 2
    attn = h * stack.q_width * 2 + 2 * h * stack.kv_width
    moe = stack.moe
    active = moe.get("active", 1) * mats * h * moe["expert_intermediate"]
    return float(attn + active + mats * h * moe.get("shared_intermediate", 0))


def transformer_size(r: Resolved) -> tuple[float, int, int, int] | None:
    """(matmul parameters a token passes through, layers, hidden, tokens per sample) of the
    transformer stacks; ``None`` for models without them (no FLOPs count, no step time)."""
    stacks = r.shape.stacks
    seq = int(r.config.value("seq_len") or 0)
    if not stacks or seq <= 0:
        return None
    params = sum(s.layers * _active_linear(s) for s in stacks) + r.shape.lm_head_params
    layers = sum(s.layers for s in stacks)
    hidden = max(s.hidden for s in stacks)
    return params, layers, hidden, seq


def _gradient_bytes(r: Resolved) -> float:
    """Bytes per gradient element: fp32 master weights (fp32, AMP) give fp32 gradients."""
    return 2.0 if (r.config.value("dtype") or "fp32") in ("bf16", "fp16") else 4.0


def _comm_bytes(
    r: Resolved, trainable: float, world: int, sharding: str, weights: float
) -> tuple[float, float]:
    """(bytes each GPU sends per optimizer step inside its ring, bytes per weight gather);
    ``weights``: the parameters each GPU's ring gathers (its tensor-parallel shard)."""
    if world <= 1:
        return 0.0, 0.0
    dtype = r.config.value("dtype") or "fp32"
    grad_bytes = _gradient_bytes(r)
    weight_bytes = 4.0 if dtype == "fp32" else 2.0
    share = (world - 1) / world
    if sharding in ("zero-3", "fsdp"):
        gathers = 2 * share * weights * weight_bytes  # forward + backward
        return share * trainable * grad_bytes, gathers
    return 2 * share * trainable * grad_bytes, 0.0


def step_time(
    r: Resolved,
    gpu: Gpu,
    *,
    per_node: int,
    nodes: int,
    hybrid: bool = False,
) -> StepTime | None:
    """The modelled optimizer step of ``r`` (its micro-batch, accumulation, sharding) on
    ``per_node × nodes`` GPUs; ``None`` when the model's FLOPs or the GPU's peak are unknown."""
    size = transformer_size(r)
    cfg = r.config
    dtype = cfg.value("dtype") or "fp32"
    peak = peak_tflops(gpu, dtype)
    if size is None or peak is None:
        return None
    params, layers, hidden, seq = size
    lora = bool(cfg.value("lora_rank"))
    checkpointing = bool(cfg.value("checkpointing"))
    micro = int(cfg.value("batch_size") or 1)
    accumulation = int(cfg.value("accumulation") or 1)
    world = per_node * nodes
    t = degree(cfg)
    replicas = max(1, world // t)
    head = float(r.shape.lm_head_params)
    params = (params - head) / t + head  # a GPU's share: its split layers, the whole head
    per_gpu_tokens = micro * accumulation * seq  # each GPU of a replica sees all its tokens
    flops = per_gpu_tokens * flops_per_token(
        params, layers, hidden / t, seq, checkpointing=checkpointing, lora=lora
    )
    compute = flops / (peak * 1e12 * ASSUMED_MFU)
    trainable = 0.0 if lora else params  # LoRA's adapters: too few gradients to count
    weights = float(shard_shape(r.shape, t).params)
    sharding = cfg.value("sharding") or "none"
    link = hardware_extra.link_gb_per_s(gpu.key) or hardware_extra.PCIE_FALLBACK_GB_S
    network = NETWORK_GBIT / 8.0 / per_node  # GB/s each GPU's share of its node's network
    comm = 0.0
    if hybrid and nodes > 1:
        ring, gather = _comm_bytes(r, trainable, per_node, sharding, weights)
        comm += (ring + gather * accumulation) / (link * 1e9)
        cross = 2 * (nodes - 1) / nodes * trainable * _gradient_bytes(r) / per_node
        comm += cross / (network * 1e9)
    else:
        ring, gather = _comm_bytes(r, trainable, replicas, sharding, weights)
        bandwidth = link if nodes == 1 else min(link, network)
        comm += (ring + gather * accumulation) / (bandwidth * 1e9)
    tensor = 0.0
    if t > 1:
        activation_bytes = 4.0 if dtype == "fp32" else 2.0
        per_all_reduce = 2 * (t - 1) / t * micro * seq * hidden * activation_bytes
        all_reduces = layers * (6 if checkpointing else 4) * accumulation
        tensor = all_reduces * per_all_reduce / (link * 1e9)
    offload = 0.0
    if (cfg.value("offload") or "none") != "none":
        shard = trainable / (replicas if sharding.startswith("zero") else 1)
        offload = shard / CPU_ADAM_PARAMS_PER_S + 2 * shard * 2.0 / (
            hardware_extra.PCIE_FALLBACK_GB_S * 1e9
        )
    if cfg.value("offload") == "optimizer+params":
        # the GPU's parameter shard comes over PCIe for the forward and again for the
        # backward, every micro-batch (16-bit weights)
        shard = weights / (replicas if sharding in ("zero-3", "fsdp") else 1)
        offload += 2 * accumulation * shard * 2.0 / (hardware_extra.PCIE_FALLBACK_GB_S * 1e9)
    seconds = max(compute, comm) + tensor + offload
    tokens = per_gpu_tokens * replicas
    return StepTime(seconds, compute, comm, offload, tokens, peak, dtype, tensor)
