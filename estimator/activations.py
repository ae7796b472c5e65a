"""Activation bytes of transformer stacks: what training saves, what inference keeps live.

Training (bytes per token per layer) counts the tensors autograd saves for backward in
the transformers implementations, op by op (``a`` = 16-bit or 32-bit matmul element,
``r`` = residual-stream element, fp32 under AMP):

- a pre-norm LayerNorm saves its input (``r·h``) and the next matmul saves its output
  (``a·h``); HF's RMSNorm upcasts to fp32 and saves the fp32 input (4h), the normalised
  tensor (``n·h``, fp32 under AMP) and the matmul input (``a·h``);
- under autocast a norm's output is fp32 and every projection that reads it casts it to
  16 bits on its own (autocast caches casts of weights only): separate q, k and v
  projections save three copies, separate gate and up two (:func:`norm_casts_per_token`);
- SDPA (flash / memory-efficient) saves q, k, v, its output and the logsumexp
  (:func:`fused_attention_per_token`: ``a·(2·h_q + 2·h_kv)`` and what the layout adds);
- a decoder's training forward fills a ``DynamicCache`` (``use_cache`` on, every LM
  config's default): the cache's V and its post-rotary K are what attention uses. Under
  autocast the rotary K is fp32 (rotary ``cos`` / ``sin`` take the fp32 residual stream's
  dtype) and SDPA saves a 16-bit cast of it, so the cache adds the fp32 K (``4·h_kv``);
- eager attention saves q, k, v, the merged-heads copy (``4·a·h_q``) and per score
  element (``heads × seq`` of them) the fp32 softmax and its 16-bit cast, plus a 1-byte
  mask with dropout;
- SDPA's math path (no fused kernel fits: bf16 below sm80, or fused kernels disabled)
  computes in fp32 — ``allow_fp16_bf16_reduction_math_sdp()`` is off by default — and saves
  the scaled fp32 q and k, the fp32 v and the o-projection's input copy (``12·h_q + a·h_q``,
  plus one more ``a·h_q`` measured) and per score element the fp32 softmax, plus with dropout the 1-byte mask and the fp32
  dropped copy (:func:`math_scores_per_token`);
- a gated MLP saves gate, activation, up and product (``4·a·i``); a plain MLP its fc1
  output and activation (``2·a·i``), plus three more for GPT-2's composite GELU-tanh;
- dropout saves a 1-byte mask per dropped tensor (two per layer, three in T5).

This is Korthikanti et al. 2022 (“Reducing Activation Recomputation”, eq. 2: 34·h + 5·a·s
bytes per token per layer for GPT-3 in fp16) refined by the upcasts that transformers
performs; for a GPT-3-shaped layer in pure fp16 it gives 37·h (the paper's 34·h plus the
o-projection's input copy and a third dropout mask).

Inference keeps only the current layer live: the residual stream, one norm output and the
widest of the attention block and the MLP (:func:`live_per_token`).
"""

from __future__ import annotations

from . import routedattention
from .precision import Numerics
from .shape import Stack

__all__ = [
    "attention_live_per_token",
    "cached_keys_per_token",
    "forward_transient_per_token",
    "fused_attention_per_token",
    "live_per_token",
    "math_scores_per_token",
    "matmul_inputs_per_token",
    "norm_casts_per_token",
    "norm_per_token",
    "saved_per_token",
    "saved_terms_per_token",
    "scores_per_token",
]


def _upcast(n: Numerics) -> int:
    """Bytes of an element an op on autocast's fp32 list produces (fp32 unless pure 16-bit)."""
    return 4 if n.weight == 4 else n.activation


def _norm(stack: Stack, n: Numerics) -> int:
    h = stack.hidden
    if stack.norm == "rms":
        normalised = 4 if stack.unit_offset_norm else n.rms_normalized
        return (4 + normalised + n.activation) * h
    return (n.residual + n.activation) * h


def norm_casts_per_token(stack: Stack, n: Numerics) -> int:
    """Bytes per token per layer of the 16-bit copies of norm outputs beyond one per norm.

    Under autocast a norm computes in fp32 (RMSNorm upcasts; ``layer_norm`` is on autocast's
    fp32 list) and each linear that reads its output casts it to 16 bits itself — the copy its
    matmul saves for the weight gradient. A layer's readers: q, k, v (one fused projection or
    three), gate and up (one or two; a plain MLP or an MoE router one), a cross-attention's
    query. Measured (bench/oracle_breakdown.py): Helium, Granite, SmolLM3 5 copies per layer,
    ERNIE and DeiT 4. Pure 16-bit or fp32 training casts nothing."""
    if n.activation == n.residual:
        return 0
    attention = 1 if stack.fused_qkv else 3
    gated = stack.mlp == "gated" and not stack.moe and not stack.fused_gate_up
    readers = attention + (2 if gated else 1) + (1 if stack.cross_attention else 0)
    return max(readers - (stack.norms - stack.post_norms), 0) * n.activation * stack.hidden


def expands_kv(stack: Stack) -> bool:
    """Whether ``repeat_kv`` copies grouped K/V heads: with one KV head (MQA) its expand and
    reshape stay a view (gemma-3-1b b1 s2048, bench/oracle_breakdown.py: no expanded copy
    beside the masked memory-efficient kernel; Mistral-7B's 8 of 32 are copied)."""
    return 1 < stack.kv_heads < stack.heads


def cached_keys_per_token(stack: Stack, n: Numerics, *, eager: bool = False) -> int:
    """Bytes per token per layer a training forward's KV cache keeps beyond what attention
    saves: the fp32 rotary keys under autocast (SDPA saves their 16-bit cast); nothing in
    pure 16-bit or fp32, nor where the rotation is cast back to 16 bits (OLMo, Cohere), where
    attention saves the cache's own K and V — except eager attention over grouped K/V heads,
    which saves ``repeat_kv``'s expanded copies, so the cache's own K and V are more
    (gemma2-2b-train-bf16-b2-s2048: two KV-wide ``cat`` outputs per layer; measured in pure
    16 bits only)."""
    if eager and expands_kv(stack) and n.activation == n.residual:
        return 2 * n.activation * stack.kv_width
    if stack.rope not in ("upcast", "partial") or n.activation == n.residual:
        return 0
    return n.residual * stack.kv_width


def fused_attention_per_token(stack: Stack, n: Numerics, context: int) -> int:
    """Bytes per token per layer a fused SDPA kernel (flash / memory-efficient) keeps for
    backward with the tensors around it: q, K, V (at the KV heads' width: without a mask
    transformers hands grouped heads to the kernel unexpanded, ``use_gqa_in_sdpa``) and the
    output, which is the o-projection's input. A q that is a view of a fused q/k/v projection
    (no rotation made a new tensor: GPT-2, StarCoder) keeps that projection's whole output;
    a partial rotation's concatenated q makes the output heads-first, and the o-projection
    copies it (Pythia, StableLM). A sliding window shorter than the context needs a mask:
    SDPA converts the boolean mask to an additive one in q's dtype (one row of ``context``
    keys per query token, per layer) and the memory-efficient kernel saves it, and with a
    mask transformers expands grouped K/V heads (``repeat_kv``) before the kernel — the
    expanded copies are saved beside the cache's K/V (mistral-7b-train-bf16-b1-s8192: both,
    128 MiB of mask per layer). Measured with bench/oracle_breakdown.py (Llama-3.2-1B,
    Helium, OLMo-1B, GPT-2, Pythia-410M, Mistral-7B)."""
    a, q, kv = n.activation, stack.q_width, stack.kv_width
    total = a * (2 * q + 2 * kv)
    if any(0 < w < context for w in stack.cache_windows):
        total += a * context  # the additive mask
        if expands_kv(stack):
            total += 2 * a * q
    if stack.fused_qkv and not stack.rope:
        total += 2 * a * kv
    if stack.rope == "partial":
        total += a * q
    return total


def norm_per_token(stack: Stack, n: Numerics) -> int:
    """Bytes per token a norm saves with the matmul input after it (the final norm and the
    head's input, for one)."""
    return _norm(stack, n)


def scores_per_token(stack: Stack, n: Numerics, context: int, *, training: bool) -> float:
    """Eager attention's heads × context elements per token, in bytes."""
    # fp32 softmax output (saved by its backward) + its 16-bit cast; with dropout the cast
    # is not saved but the 1-byte mask and the dropped copy (saved by the matmul) are.
    per_element = 4 + n.activation + (1 if training and stack.dropout else 0)
    if training and stack.score_softcap:  # tanh's 16-bit output (gemma2-2b-train-bf16-*)
        per_element += n.activation
    return stack.heads * context * per_element


def math_scores_per_token(stack: Stack, context: int, *, training: bool) -> float:
    """SDPA math path's heads × context elements per token, in bytes (always fp32).

    Training saves the fp32 softmax and, with dropout, the 1-byte mask and the fp32 dropped
    copy the second matmul saves: 9 bytes (t4-*-math in tests/calibration/fixtures/
    t4_rules_peaks.json against their -sdpa twins: 9 bytes per score element plus 6·h
    per token under AMP). Without autograd the fp32 scores and their softmax overlap: 8.
    """
    if not training:
        return stack.heads * context * 8
    return stack.heads * context * (4 + (5 if stack.dropout else 0))


def saved_per_token(
    stack: Stack,
    n: Numerics,
    *,
    eager: bool,
    context: int,
    cross_context: int = 0,
    math: bool = False,
    caching: bool = False,
) -> float:
    """Bytes saved for backward per token per layer of ``stack``: the sum of
    :func:`saved_terms_per_token`."""
    terms = saved_terms_per_token(
        stack, n, eager=eager, context=context, cross_context=cross_context, math=math
    )
    return sum(terms.values()) + (cached_keys_per_token(stack, n, eager=eager) if caching else 0)


def saved_terms_per_token(
    stack: Stack,
    n: Numerics,
    *,
    eager: bool,
    context: int,
    cross_context: int = 0,
    math: bool = False,
) -> dict[str, float]:
    """Bytes saved for backward per token per layer of ``stack``, by operation (the names are
    what ``estimate --explain`` prints); a training KV cache is apart
    (:func:`cached_keys_per_token`).

    ``eager``: transformers' eager attention; ``math``: SDPA's math path (fp32); neither:
    a fused SDPA kernel (flash or memory-efficient), which saves no score tensor.
    """
    a, h = n.activation, stack.hidden
    terms: dict[str, float] = {}
    norms = stack.norms * _norm(stack, n) - stack.post_norms * n.activation * h
    if stack.parallel_residual:  # both norms read the same saved layer input
        norms -= n.residual * h
    terms["norms"] = norms
    terms["norm casts"] = norm_casts_per_token(stack, n)
    q = stack.q_width
    if stack.attention_experts:  # routed q / o experts around the kernel (JetMoE)
        if eager:  # q and the repeated K and V; the output goes to the o experts' gather
            kernel = 3 * a * q + scores_per_token(stack, n, context, training=True)
        elif math:
            kernel = 12 * q + math_scores_per_token(stack, context, training=True)
        else:  # the rotated q, the repeated K and V, the output
            kernel = 4 * a * q
        terms["attention"] = routedattention.saved_per_token(stack, n, kernel=kernel)
    elif eager:  # q, k, v and the merged-heads copy (the matmul output itself is not saved)
        terms["attention"] = 4 * a * q + scores_per_token(stack, n, context, training=True)
    elif math:
        # fp32 scaled q and k, fp32 v, the o-projection's input copy — and one more 16-bit
        # q-wide tensor that the fixtures show and the op-by-op count does not explain:
        # t4-gpt2-*-math at s = 128 and s = 256 and t4-bert-*-math are 2·h bytes per token
        # per layer above 12·q + a·q + the score bytes (tests/calibration/fixtures/
        # t4_rules_peaks.json, against their -sdpa twins)
        terms["attention"] = (
            12 * q + 2 * a * q + math_scores_per_token(stack, context, training=True)
        )
    else:
        terms["attention"] = fused_attention_per_token(stack, n, context)
    if stack.qk_norm:
        # the norm's fp32 copy of q and k and its 16-bit result: 6 bytes per element
        # measured under AMP (qwen3-0.6b-train-ampbf16-b4-s4096: 6.1)
        terms["q/k norms"] = (4 + a) * (q + stack.kv_width)
    if stack.cross_attention:
        cross = 3 * a * q  # query, output, o-proj input (K/V of the source: per source token)
        if eager:
            cross += scores_per_token(stack, n, cross_context, training=True)
        elif math:
            cross += math_scores_per_token(stack, cross_context, training=True)
        terms["cross-attention"] = cross
    terms["mlp"] = _mlp_saved(stack, n)
    if stack.layer_scale:
        # ``output * lambda`` saves its 16-bit input for lambda's gradient: the o-projection's
        # and the down projection's outputs (dinov2 b32: 5 of the 6 linear outputs per layer
        # live at the backward, q / k / v being the other 3)
        terms["layer scales"] = 2 * a * h
    if stack.dropout:
        # 1-byte masks after the attention block and after the MLP (GPT-2, BERT, ERNIE: two
        # per layer; the attention probabilities' dropout is inside the fused kernel), and
        # T5's on the MLP's intermediate (t5-small: three per layer, one intermediate-wide)
        terms["dropout masks"] = 2 * h + (stack.intermediate if stack.mlp_dropout else 0)
    return {k: v for k, v in terms.items() if v}


def _mlp_saved(stack: Stack, n: Numerics) -> float:
    a, h, i = n.activation, stack.hidden, stack.intermediate
    if stack.moe:
        m = stack.moe
        per_expert = 4 * a * m["expert_intermediate"] + 2 * a * h  # MLP + gathered in/out
        total = m["active"] * per_expert + 4 * m["experts"]  # router softmax in fp32
        if m.get("scattered"):
            # JetMoE's experts: the gate-weighted output is kept too (index_add's source), and
            # its top-k router keeps indices and a top-k softmax, not a softmax over every
            # expert (jetmoe train b4 × 512: 14,396 bytes per token per layer, this count)
            total += m["active"] * a * h - 4 * m["experts"]
            total += routedattention.routing_per_token(m["active"], n)
        if m.get("router_logits"):
            # output_router_logits: each layer's router logits stay in the outputs and the
            # load-balancing loss saves their softmax (transformers' load_balancing_loss_func)
            total += 2 * a * m["experts"]
        if m.get("shared_intermediate"):
            total += 4 * a * m["shared_intermediate"]
        return total
    if stack.mlp == "gated":
        total = 4 * a * i
        if stack.composite_act:  # the composite's pow input, tanh and 1 + tanh (as below)
            total += 3 * _upcast(n) * i
        return total
    if stack.mlp == "gelu-tanh":
        # NewGELU's composite saves pow's input, tanh's output and 1 + tanh — in fp32 under
        # autocast (pow is on its fp32 list, so the rest follows) — plus 0.5·x and fc2's
        # input in 16 bits: gpt2-train-amp16-* were 24·h per token per layer above the
        # all-16-bit count (tests/calibration/fixtures)
        return 3 * _upcast(n) * i + 2 * a * i
    if stack.mlp == "relu":
        return a * i  # ReLU's output, which is also fc2's saved input (opt-125m-train-*)
    if stack.mlp == "quick-gelu":
        # CLIP's QuickGELU, x * sigmoid(1.702 x) in Python: fc1's output, the sigmoid's
        # output (its backward's) and the product (fc2's input)
        return 3 * a * i
    return 2 * a * i


def forward_transient_per_token(stack: Stack, n: Numerics, context: int = 0) -> float:
    """Bytes per token live at a training forward's peak beyond what the layers save, for a
    post-norm encoder (BERT's layout), whose forward can be the step's peak: in the last
    layer's output norm, the layer's input (the encoder's loop still holds it), the attention
    block's normed output (the MLP's residual) and the new norm's output, all fp32 under
    autocast and none of them saved (the norms save their inputs, the projections their
    16-bit casts), the MLP's dropped 16-bit output, and the embeddings' output, which the model
    holds for the whole encoder call. Measured: ERNIE at b8 × 512 (bench/oracle_breakdown.py
    ernie --batch 8 --at peak: three fp32 norm outputs, the fp32 embeddings output and one
    16-bit dropout output). A relative position bias (MPNet) is computed once, heads ×
    context per token in the residual stream's dtype, and added to every layer's scores: it
    stays live through the forward (mpnet b8 × 512: 96 MiB in fp32). Pre-norm stacks peak at
    the backward's start: nothing added."""
    if not stack.post_norm:
        return 0.0
    bias = n.residual * stack.heads * context if stack.relative_bias else 0
    return 4 * n.residual * stack.hidden + n.activation * stack.hidden + bias


def matmul_inputs_per_token(stack: Stack, n: Numerics) -> float:
    """Bytes per token per layer of :func:`saved_per_token` that only weight gradients need:
    the 16-bit inputs of the projections after each norm, of the output projection and of
    the MLP's down projection. A frozen layer the gradient passes through does not save
    them (autograd saves a matmul operand only when the other one requires grad)."""
    a = n.activation
    down = 0 if stack.moe else a * stack.intermediate
    return stack.norms * a * stack.hidden + a * stack.q_width + down


def cross_kv_per_source_token(stack: Stack, n: Numerics) -> float:
    """Per source token per decoder layer: cross-attention K and V (saved), and under
    autocast the 16-bit casts of the encoder's fp32 output that the K and V projections each
    make (t5-small b16 × 512: 67 casts = 4 per encoder layer, 7 per decoder layer, 1 head)."""
    if not stack.cross_attention:
        return 0
    casts = 2 * n.activation * stack.hidden if n.activation != n.residual else 0
    return 2 * n.activation * stack.q_width + casts


def live_per_token(stack: Stack, n: Numerics) -> float:
    """Bytes live per token while one layer runs without autograd (inference)."""
    # Live at the MLP's widest point: the layer input, the attention block's output and the
    # sum (three residual-stream tensors), one norm output, and the MLP's intermediates —
    # a gated MLP holds act(gate), up and their product (3·i), a plain one fc1's output and
    # its activation (2·i). Measured: bert-infer-amp16-b32-s512 30·h bytes per token (this
    # gives 30·h), vit-base-infer-fp32-b32 50·h (48·h) — tests/calibration/fixtures.
    a, h = n.activation, stack.hidden
    attention = 2 * stack.q_width + 2 * stack.kv_width
    if stack.attention_experts:
        attention = routedattention.attention_live_per_token(stack)
    if stack.moe:
        widest = max(attention, _moe_live(stack))
    elif stack.mlp in ("plain", "relu", "quick-gelu"):
        widest = max(attention, 2 * stack.intermediate)
    elif stack.mlp == "gelu-tanh":  # input, 0.5·x, 1 + tanh(...) and their product
        widest = max(attention, 4 * stack.intermediate)  # (gpt2-gen-fp32-b8-p512-n32)
    else:
        widest = max(attention, 3 * stack.intermediate)
    return 3 * n.residual * h + a * h + a * widest


def attention_live_per_token(stack: Stack, n: Numerics) -> float:
    """Bytes per token live without autograd while eager attention runs, beside its score
    tensors: the residual-stream tensors and the norm output that :func:`live_per_token`
    counts, with q, k, v and the merged output in place of the MLP's intermediates. The
    scores are gone before the MLP runs, so the layer's peak is the larger of the two
    moments, not their sum (mpnet inference b4 × 512: q, k, v and three score-sized 16-bit
    tensors — the shared position bias, the scaled scores, the softmax — at the peak)."""
    a, h = n.activation, stack.hidden
    return 3 * n.residual * h + a * h + a * (2 * stack.q_width + 2 * stack.kv_width)


def _moe_live(stack: Stack) -> int:
    """Elements per token live at once in a mixture-of-experts block without autograd.

    transformers' default experts kernel (``grouped_mm``, sm80+) works on the ``S = tokens ×
    top_k`` routed copies, sorted by expert; its locals keep each step's tensor until the
    block returns. Two moments compete: the gate, with the gathered input (``h``), the
    gate-and-up output (``2i``), the activation and the product (``i`` each); and the
    reordering, with the gathered input, the experts' output, the weighted output and its
    copy back in token order (``4h``). A shared expert's output (Qwen2-MoE) is live beside
    them. Measured: olmoe-1b-7b-infer-bf16-b8-s4096 (tests/calibration/fixtures)."""
    m = stack.moe or {}
    k, h, i = m["active"], stack.hidden, m["expert_intermediate"]
    routed = k * max(h + 4 * i, 4 * h)
    shared = m.get("shared_intermediate") or 0
    return max(routed + (h if shared else 0), 3 * shared)
