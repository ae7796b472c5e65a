"""Mixture-of-attention-heads: attention whose query and output projections are routed experts.

Why a module of its own: every other attention the estimator counts has one q and one o
projection per layer and saves what the kernel saves. JetMoE's ``JetMoeMoA`` (transformers
5.25, ``models/jetmoe/modeling_jetmoe.py``) keeps ``num_local_experts`` pairs of q / o
projections, each ``hidden × kv_channels·num_key_value_heads``, and a router picks
``num_experts_per_tok`` of them per token; K and V come from one dense ``kv_proj`` shared
by the experts. Each token's query is therefore ``top_k`` heads-groups wide and K / V are
repeated (``Tensor.repeat``, a copy) to match, and every routed step — gather, expert
matmuls, gate product, scatter back — leaves a tensor autograd keeps. Counted as dense
attention its parameters were -14% and a training step -18% (bench/oracle_memory.py,
jetmoe rows).

The config names no "attention experts" field: transformers' ``JetMoeConfig`` derives its
``num_attention_heads`` as ``num_key_value_heads × num_experts_per_tok`` and gives the head
width as ``kv_channels``. That pair of facts beside routed experts is the signal
(:func:`attention_experts`); of the installed transformers' ``CONFIG_MAPPING`` defaults only
``jetmoe`` carries it (Qwen3-MoE and eleven others match the head arithmetic but name their
head width ``head_dim``; Zamba2 has ``kv_channels`` and no experts), which
``tests/estimator/test_routed_attention.py`` checks. Every number is then read from the
fields. The same family's feed-forward experts (``JetMoeMoE``) use the same
``JetMoeParallelExperts`` / ``JetMoeTopKGating`` modules, so the MoE block is counted with
their layout too (:func:`routing_per_token`, ``moe["scattered"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from .precision import Numerics
    from .shape import Stack

__all__ = [
    "attention_experts",
    "attention_live_per_token",
    "attention_params",
    "linear_params",
    "routing_per_token",
    "saved_per_token",
]


def attention_experts(cfg: Mapping[str, Any], moe: Mapping[str, Any] | None) -> dict | None:
    """``{"experts", "active", "width"}`` when ``cfg``'s attention is a mixture of heads
    (module docstring: routed experts, ``kv_channels``, and heads = KV heads × top-k);
    ``width`` is one expert's q width, ``kv_channels × num_key_value_heads``."""
    channels, kv_heads, heads = (
        cfg.get(name) for name in ("kv_channels", "num_key_value_heads", "num_attention_heads")
    )
    if not moe or not (_whole(channels) and _whole(kv_heads) and _whole(heads)):
        return None
    if heads != kv_heads * moe["active"]:
        return None
    width = channels * kv_heads
    return {"experts": moe["experts"], "active": moe["active"], "width": width}


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def attention_params(h: int, moa: Mapping[str, Any], *, active: bool = False) -> int:
    """Parameters of one layer's attention: the experts' q (``h → width``) and o (``width →
    h``) projections without bias, the router (``h → experts``), the o side's shared bias
    (``h``) and the dense K / V projection (``h → 2·width``). ``active``: those a token
    uses (its ``top_k`` experts)."""
    experts = moa["active"] if active else moa["experts"]
    width = moa["width"]
    return experts * 2 * h * width + h * moa["experts"] + h + 2 * h * width


def linear_params(h: int, moa: Mapping[str, Any]) -> int:
    """The linear weights of one layer's attention (what 4/8-bit loading quantises)."""
    return moa["experts"] * 2 * h * moa["width"] + 2 * h * moa["width"]


def routing_per_token(active: int, n: Numerics) -> int:
    """Bytes per token one ``JetMoeTopKGating`` router keeps for backward: the top-k indices
    (int64), the softmax over the top-k logits (fp32), the sorted order and the token index of
    each routed copy (int64 each) and the gates gathered in that order (16-bit in pure 16-bit
    training). Its fp32 logits are not kept (topk's backward needs the indices only).
    Measured: jetmoe train b4 × 512 (bench/oracle_breakdown.py): 60 bytes per router at
    top-2 in bf16."""
    return active * (8 + 4 + 8 + 8 + n.activation)


def saved_per_token(stack: Stack, n: Numerics, *, kernel: float) -> float:
    """Bytes per token per layer a mixture-of-heads attention keeps for backward.

    ``kernel``: what the attention computation saves over the layer's heads (``top_k``
    groups of the KV heads): a fused SDPA kernel the rotated q, K and V repeated to q's
    heads and its output (``4·a·q``); eager attention q, the repeated K and V and the scores.
    Around it, for ``k`` routed copies of each token: the input gathered for the q experts
    (``k·h``), their concatenated output (``q``), the attention output gathered for the o
    experts (``q``), their output and its gate-weighted copy (``k·h`` each, the second kept
    by ``index_add``); the KV cache's own K and V, which ``repeat`` copies (``2·kv``); and
    the router (:func:`routing_per_token`). Measured: jetmoe train b4 × 512, bf16
    (bench/oracle_breakdown.py jetmoe --batch 4 --dtype bf16): 10,316 bytes per token per
    layer; this count gives 10,300 (the kernel's fp32 logsumexp, 4 bytes per head, is left
    out as for every fused kernel). Eager, the same cut: 585,787,904 bytes at the peak
    measured, +0.8% estimated (``tests/estimator/test_routed_attention.py``)."""
    moa = stack.attention_experts or {}
    a, k, h = n.activation, moa["active"], stack.hidden
    routed = a * (3 * k * h + 2 * stack.q_width)
    return kernel + routed + 2 * a * stack.kv_width + routing_per_token(k, n)


def attention_live_per_token(stack: Stack) -> int:
    """Elements per token live without autograd while a mixture-of-heads attention runs its
    kernel: the rotated q, K and V repeated to q's heads, the output, and the layer's own K
    and V (``4·q + 2·kv``; the gathered inputs and expert outputs of the q side are freed
    when its experts return)."""
    return 4 * stack.q_width + 2 * stack.kv_width
