"""The structure the cost model reads: transformer stacks, a vocabulary, or a CNN.

The catalog keeps each checkpoint in its own ``config.json`` vocabulary (``n_embd``,
``d_model``, ``dim``...). Activation and cache arithmetic wants one vocabulary, so this
module translates an :class:`~.architecture.Architecture` into a :class:`ModelShape`:
a list of :class:`Stack` (layers of one width that see one token stream: a decoder's
layers, an encoder's, a seq2seq decoder with cross-attention, a ViT's patches) plus the
language-model head. CNNs get a per-image activation count from :mod:`.cnn`.

The conventions that a config does not spell out (LayerNorm vs RMSNorm, GELU-tanh
written as a Python composite, dropout defaults) are written
here once, each with the transformers source it comes from.

Past 400 lines: one builder per architecture kind of the one ``ModelShape`` value; they
share its conventions, and the split by kind waits for issue 29's restructure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .architecture import Architecture
from .paramcount import (
    DECODER_TYPES,
    FIELD_NAMES,
    ROTARY_FIELDS,
    decoder_shape,
    is_t5_like,
    required,
)
from .routedattention import linear_params as routed_linear_params

__all__ = ["ModelShape", "Stack", "shape_of"]


@attrs.frozen
class Stack:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    stream: str = "text"  # "text" | "src" | "tgt" | "image" | "caption"
    norm: str = "layer"  # "rms" (HF computes in fp32) | "layer"
    norms: int = 2
    mlp: str = "plain"  # "gated" | "plain" | "gelu-tanh" (composite) | "relu" | "quick-gelu"
    dropout: bool = False  # residual / attention dropout on in training
    mlp_dropout: bool = False  # a dropout on the MLP's intermediate too (T5's DenseReluDense)
    composite_act: bool = False  # a gated MLP whose activation is a Python tanh-GELU composite
    cross_attention: bool = False
    moe: dict | None = None  # {"experts", "active", "expert_intermediate", "shared_intermediate"}
    attention_experts: dict | None = None
    """A mixture of attention heads: routed q / o experts (JetMoE), ``{"experts", "active",
    "width"}`` (:mod:`.routedattention`)."""
    mla: dict | None = None  # DeepSeek latent sizes, for the KV cache
    qk_norm: bool = False  # RMSNorm on queries and keys (Qwen3, OLMo 2, Gemma 3)
    fused_qkv: bool = False  # q, k and v come from one matmul (GPT-2's c_attn, Falcon, Phi-3)
    fused_gate_up: bool = False  # a gated MLP's gate and up come from one matmul (Phi-3, GLM)
    rope: str = ""
    """Rotary positions: "" none (learned, ALiBi, relative), "upcast" (the rotated q and k
    come out in the residual stream's dtype: ``cos`` / ``sin`` take the hidden states'
    dtype, fp32 under autocast), "kept" (the family casts them back to q's dtype: OLMo,
    Cohere), "partial" (an upcasting rotation of part of each head, concatenated with the
    rest: the attention output is then laid out heads-first and the o-projection copies it)."""
    parallel_residual: bool = False  # attention and MLP read the same layer input (GPT-NeoX)
    post_norm: bool = False  # BERT's layout: each block's norm follows its residual add
    relative_bias: bool = False  # a heads × s² bias per sequence, shared by the layers (MPNet)
    layer_scale: bool = False  # each block's output times a learned per-channel scale (DINOv2)
    bias_mask: bool = False
    """T5's relative position bias, computed once per stack as heads × s² (not per batch row)
    and handed to SDPA as an additive mask."""
    tokens: int = 0
    """Tokens per sample of a ``caption`` stream: a contrastive text tower's captions, padded
    to its ``max_position_embeddings`` (CLIP 77, SigLIP 64) whatever the job's sequence."""
    cache_windows: tuple[int, ...] = ()
    unit_offset_norm: bool = False
    """Gemma's RMSNorm: ``normalised × (1 + weight)`` in fp32, cast after, so the saved
    normalised tensor is fp32 even in pure 16-bit training."""
    post_norms: int = 0
    """Of ``norms``, those whose output only feeds the residual add (Gemma 2 / 3's sandwich
    norms): no 16-bit copy of it is saved."""
    score_softcap: bool = False
    """Eager scores soft-capped (``tanh(s / cap) × cap``, Gemma 2): tanh's output is saved."""
    """Per layer, what its KV cache keeps: 0 every token, n > 0 a sliding window of n tokens,
    -1 no KV cache (a linear-attention or state-space layer); empty: every layer keeps all."""

    @property
    def q_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    def linear_params_per_layer(self) -> int:
        """Parameters of one layer's linear weights (what 4/8-bit loading quantises)."""
        h = self.hidden
        attn = h * self.q_width * 2 + 2 * h * self.kv_width
        if self.attention_experts:
            attn = routed_linear_params(h, self.attention_experts)
        if self.cross_attention:
            attn *= 2
        mats = 3 if self.mlp == "gated" else 2
        if self.moe:
            mlp = self.moe["experts"] * mats * h * self.moe["expert_intermediate"]
            mlp += mats * h * self.moe.get("shared_intermediate", 0)
        else:
            mlp = mats * h * self.intermediate
        return attn + mlp


@attrs.frozen
class ModelShape:
    kind: str
    params: int
    stacks: tuple[Stack, ...] = ()
    vocab: int = 0
    lm_head: bool = False  # produces batch × seq × vocab logits
    embedding_params: int = 0  # embeddings + untied LM head (not quantised by bitsandbytes)
    lm_head_params: int = 0  # the vocab × hidden projection (tied or not)
    eager_only: bool = False  # transformers runs eager attention only
    fp32_logits: bool = False  # logits + an fp32 bias (BART's final_logits_bias)
    own_loss: bool = False
    """The model computes ``CrossEntropyLoss`` on its logits itself, without transformers'
    ``logits.float()`` (T5, mT5): under autocast the logits' fp32 copy and a 16-bit
    log-softmax stay until the backward."""
    logit_softcap: bool = False  # final logits soft-capped: tanh's output kept for backward
    scaled_logits: bool = False
    """The head's output is multiplied by a constant into a new tensor (Cohere's
    ``logit_scale``, Granite's ``logits_scaling``): both are live for a moment."""
    tied_head: bool = False  # the LM head's weight is the input embedding's (one Parameter)
    image_size: int | None = None  # native input resolution (vision)
    patch_size: int | None = None
    cnn: Architecture | None = None
    note: str = ""

    @property
    def linear_params(self) -> int:
        return sum(s.layers * s.linear_params_per_layer() for s in self.stacks)

    @property
    def largest_layer_params(self) -> int:
        """One layer's parameters: what FSDP / ZeRO-3 gathers at a time."""
        if not self.stacks:
            return max(self.params // 50, 1)
        return max(s.linear_params_per_layer() for s in self.stacks)


# transformers sources: GPT-2 / GPT-NeoX / Phi / Falcon / BLOOM / OPT use LayerNorm; GPT-2's
# "gelu_new" and GPT-NeoX's "gelu" differ (NewGELUActivation is a Python composite whose
# tanh, product and half-input are all saved for backward). Dropout 0.1 by default in GPT-2,
# OPT, BERT, RoBERTa, DistilBERT, BART, T5, ViT (hidden_dropout_prob 0.0 in HF ViT: off).
_LAYERNORM = {"gpt2", "gpt_neox", "phi", "falcon", "bloom", "opt", "starcoder2", "phimoe", "olmo"}

# Conventions read from the model's config (issue 12): the activation (``hidden_act`` /
# ``activation_function`` / ``hidden_activation``) and the dropout probabilities. What a
# checkpoint's config leaves out takes the default of its transformers config class,
# listed here as the documented fallback (transformers 5.24 sources).
_ACT_FIELDS = ("hidden_act", "activation_function", "hidden_activation")
_DEFAULT_ACT = {
    "gpt2": "gelu_new",
    "phi": "gelu_new",
    "starcoder2": "gelu_pytorch_tanh",
    "opt": "relu",
    "gpt_neox": "gelu",
    "falcon": "gelu",
    # BloomGelu trains through a custom autograd function that saves only its input
    "bloom": "bloom_gelu",
}
# A Python composite of tanh-GELU: its tanh, product and half-input are saved for backward.
_COMPOSITE_GELU = {"gelu_new", "gelu_fast", "gelu_python_tanh"}
_DROPOUT_FIELDS = (
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "dropout",
    "attention_dropout",
    "hidden_dropout",
    "residual_dropout",
    "embedding_dropout",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "dropout_rate",
)
_DEFAULT_DROPOUT = {"gpt2", "opt"}  # 0.1 by default in their transformers configs
# Families whose transformers implementation has no SDPA path: eager attention, always.
_NO_SDPA = {"bloom", "deberta-v2"}
# Families whose attention reads q, k and v from one projection, or whose gated MLP reads gate
# and up from one (transformers sources: ``c_attn``, ``query_key_value``, ``qkv_proj``,
# ``Wqkv``; ``gate_up_proj``): under autocast each projection that reads a norm's fp32
# output casts it to 16 bits itself, so a fused one makes one copy where three (two) were.
_FUSED_QKV = {
    "gpt2",
    "gpt_bigcode",
    "gpt_neox",
    "falcon",
    "bloom",
    "phi3",
    "dbrx",
    "codegen",
    "mpt",
}
_FUSED_GATE_UP = {"phi3", "glm"}
# Rotary conventions the config leaves out: families whose ``apply_rotary_pos_emb`` casts the
# result back to q's dtype (transformers sources: ``q_embed.to(q_type)``), and the config
# classes' default fraction of each head that is rotated.
_ROPE_KEEPS_DTYPE = {
    "olmo",
    "olmo2",
    "olmo3",
    "flex_olmo",
    "cohere",
    "cohere2",
    "cohere2_moe",
    "ernie4_5",
    "ernie4_5_moe",
    "modernbert_decoder",
}
_PARTIAL_ROTARY = {"gpt_neox": 0.25, "stablelm": 0.25, "phi": 0.5, "glm": 0.5}
# Logit soft-capping (tanh(x / cap) * cap): softcapped attention scores need the eager
# kernel (SDPA takes no softcap), and softcapped logits keep one more logits-sized tensor
# (tanh's output) for backward. Config fields first, the config class's default after.
_DEFAULT_SOFTCAP = {"gemma2": (50.0, 30.0)}  # (attn_logit_softcapping, final_logit_softcapping)
# Gemma's RMSNorm (``Stack.unit_offset_norm``); Gemma 2 / 3 add two sandwich norms per layer
# after attention and after the MLP (``Stack.post_norms``): gemma2-2b-train-bf16-b2-s2048
# (bench/oracle_breakdown.py gemma-2-2b --dtype bf16) saves 36·h of norms per token per layer
_UNIT_OFFSET_NORM = {"gemma", "gemma2", "gemma3_text"}


def softcaps_of(model_type: str, config: Any) -> tuple[bool, bool]:
    default = _DEFAULT_SOFTCAP.get(model_type, (None, None))
    attn = config.get("attn_logit_softcapping", default[0])
    final = config.get("final_logit_softcapping", default[1])
    return attn is not None, final is not None


def activation_of(model_type: str, config: Any) -> str:
    """The MLP activation's name: the config's field, else its config class's default."""
    for name in _ACT_FIELDS:
        value = config.get(name)
        if isinstance(value, str):
            return value.lower()
    return _DEFAULT_ACT.get(model_type, "gelu")


def _plain_mlp(model_type: str, config: Any) -> str:
    act = activation_of(model_type, config)
    if act in _COMPOSITE_GELU:
        return "gelu-tanh"
    if act == "quick_gelu":  # CLIP's x * sigmoid(1.702 x), a Python composite
        return "quick-gelu"
    return "relu" if act == "relu" else "plain"


def dropout_of(model_type: str, config: Any) -> bool:
    """Residual / attention dropout on in training: any probability the config sets > 0."""
    found = [config[f] for f in _DROPOUT_FIELDS if isinstance(config.get(f), (int, float))]
    if found:
        return any(p > 0 for p in found)
    return model_type in _DEFAULT_DROPOUT


# transformers' cache layer per ``layer_types`` entry (cache_utils.get_layer_types_and_kwargs):
# sliding and chunked layers keep a window, these keep no key/value tensors at all
_NO_KV_LAYERS = {"linear_attention", "mamba", "moe", "mlp", "dummy", "conv", "recurrent"}


# Families whose config class lays out sliding and full layers when a config.json has no
# ``layer_types``: every n-th layer full (``sliding_window_pattern`` when written)
_DEFAULT_PATTERN = {"gemma2": 2, "gemma3_text": 6, "cohere2": 4}


def cache_windows(model_type: str, config: Any, layers: int) -> tuple[int, ...]:
    """What each layer's KV cache keeps (:attr:`Stack.cache_windows`), from the config.

    transformers builds one cache layer per ``layer_types`` entry; without the list, every
    layer slides when ``sliding_window`` is set (Mistral v0.1) — unless its family lays out a
    pattern of sliding and full layers (Gemma 2 / 3, Cohere 2), or
    ``use_sliding_window`` is false (Qwen2 writes a window it does not use). Chunked
    attention keeps ``attention_chunk_size`` tokens (Llama 4)."""
    window = config.get("sliding_window")
    if config.get("use_sliding_window") is False:
        window = None
    types = config.get("layer_types")
    pattern = config.get("sliding_window_pattern") or _DEFAULT_PATTERN.get(model_type)
    if not isinstance(types, list) and isinstance(pattern, int) and pattern > 0:
        types = [
            "full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
            for i in range(layers)
        ]
    if not isinstance(types, list) or len(types) != layers:
        if isinstance(window, int) and window > 0:
            return (window,) * layers
        return ()
    chunk = config.get("attention_chunk_size")
    out = []
    for kind in types:
        if kind in _NO_KV_LAYERS:
            out.append(-1)
        elif "sliding" in str(kind) and isinstance(window, int) and window > 0:
            out.append(window)
        elif kind == "chunked_attention" and isinstance(chunk, int) and chunk > 0:
            out.append(chunk)
        else:
            out.append(0)
    return tuple(out) if any(out) else ()


def _rotary(model_type: str, config: Mapping[str, Any], positions: int) -> str:
    """:attr:`Stack.rope` from the config: a rotary field, or a family table's decoder without
    learned positions — not ALiBi (BLOOM, MPT, Falcon with ``alibi``)."""
    if positions or model_type in ("bloom", "mpt") or config.get("alibi"):
        return ""
    if model_type not in DECODER_TYPES and not any(k in config for k in ROTARY_FIELDS):
        return ""
    if model_type in _ROPE_KEEPS_DTYPE:
        return "kept"
    rope = config.get("rope_parameters")
    fraction = (rope if isinstance(rope, dict) else {}).get("partial_rotary_factor")
    for name in ("partial_rotary_factor", "rotary_pct"):
        fraction = config.get(name, fraction)
    fraction = _PARTIAL_ROTARY.get(model_type, 1.0) if fraction is None else fraction
    return "partial" if isinstance(fraction, (int, float)) and fraction < 1 else "upcast"


def _decoder(arch: Architecture) -> ModelShape:
    s = decoder_shape(arch.model_type, arch.config)
    h, vocab = s["hidden"], s["vocab"]
    moe = None
    if s["moe"]:
        m = s["moe"]
        moe = {
            "experts": m["experts"],
            "active": m["active"],
            "expert_intermediate": m["expert_intermediate"],
            "shared_intermediate": m["shared_intermediate"],
            # training with the load-balancing loss keeps every layer's router logits
            "router_logits": bool(arch.config.get("output_router_logits", False)),
            # JetMoE's experts: per-expert matmuls, a gate-weighted copy kept by index_add
            "scattered": bool(m.get("scattered")),
        }
    mlp = s["mlp"] if s["mlp"] == "gated" else _plain_mlp(arch.model_type, arch.config)
    stack = Stack(
        layers=s["layers"],
        hidden=h,
        heads=s["heads"],
        kv_heads=s["kv_heads"],
        head_dim=s["head_dim"],
        intermediate=s["intermediate"],
        norm="layer" if arch.model_type in _LAYERNORM or s["norm"] == 2 else "rms",
        norms=s["norms"],
        mlp=mlp,
        composite_act=mlp == "gated"
        and activation_of(arch.model_type, arch.config) in _COMPOSITE_GELU,
        dropout=dropout_of(arch.model_type, arch.config),
        moe=moe,
        attention_experts=s.get("attention_experts"),
        mla=s.get("mla"),
        qk_norm=bool(s.get("qk_norm")),
        fused_qkv=arch.model_type in _FUSED_QKV,
        fused_gate_up=arch.model_type in _FUSED_GATE_UP,
        rope=_rotary(arch.model_type, arch.config, s["positions"]),
        parallel_residual=arch.model_type == "gpt_neox"
        and bool(arch.config.get("use_parallel_residual", True)),
        cache_windows=cache_windows(arch.model_type, arch.config, s["layers"]),
        unit_offset_norm=arch.model_type in _UNIT_OFFSET_NORM,
        post_norms=max(s["norms"] - 2, 0) if arch.model_type in _UNIT_OFFSET_NORM else 0,
        score_softcap=softcaps_of(arch.model_type, arch.config)[0],
    )
    embed = vocab * h * (1 if s["tied"] else 2) + s["positions"] * h
    attn_softcap, final_softcap = softcaps_of(arch.model_type, arch.config)
    return ModelShape(
        "decoder",
        arch.params,
        (stack,),
        vocab,
        True,
        embed,
        vocab * h,
        eager_only=arch.model_type in _NO_SDPA or attn_softcap,
        logit_softcap=final_softcap,
        scaled_logits=any(k in arch.config for k in ("logit_scale", "logits_scaling")),
        tied_head=bool(s["tied"]),
    )


def _encoder(arch: Architecture) -> ModelShape:
    c, t = arch.config, arch.model_type
    h = required(c, "hidden size", t)
    heads = required(c, "attention heads", t)
    vocab = required(c, "vocabulary", t)
    stack = Stack(
        layers=required(c, "layers", t),
        hidden=h,
        heads=heads,
        kv_heads=heads,
        head_dim=h // heads,
        intermediate=_intermediate(c, h),
        dropout=True,
        post_norm=True,
        relative_bias="relative_attention_num_buckets" in c,
    )
    # Encoders are fine-tuned with a small head (classification): no vocab-sized logits.
    return ModelShape(
        "encoder",
        arch.params,
        (stack,),
        vocab,
        False,
        vocab * h,
        # a relative position bias added to the scores (MPNet) runs eager attention
        eager_only=arch.model_type in _NO_SDPA or stack.relative_bias,
    )


def _seq2seq(arch: Architecture) -> ModelShape:
    c = arch.config
    if is_t5_like(arch.model_type, c):
        d, dkv = required(c, "hidden size"), c["d_kv"]
        heads = required(c, "attention heads")
        gated = str(c.get("feed_forward_proj", "relu")).startswith("gated")
        common = dict(
            hidden=d,
            heads=heads,
            kv_heads=heads,
            head_dim=dkv,
            intermediate=c["d_ff"],
            norm="rms",
            mlp_dropout=True,
            bias_mask=True,
            mlp="gated" if gated else "plain",
            dropout=dropout_of("t5", c) if any(f in c for f in _DROPOUT_FIELDS) else True,
            # T5Config: "gated-gelu" runs gelu_new (NewGELU, a composite); else its own act
            composite_act=gated and str(c.get("feed_forward_proj")) == "gated-gelu",
        )
        enc = Stack(layers=required(c, "layers"), stream="src", **common)
        dec = Stack(
            layers=c.get("num_decoder_layers") or required(c, "layers"),
            stream="tgt",
            cross_attention=True,
            norms=3,
            **common,
        )
        return ModelShape(
            "encoder-decoder",
            arch.params,
            (enc, dec),
            required(c, "vocabulary"),
            True,
            required(c, "vocabulary") * d,
            required(c, "vocabulary") * d,
            own_loss=True,
            note="T5 runs SDPA (transformers 5) with its relative position bias as "
            "an additive mask: the memory-efficient kernel, no s² scores; the "
            "masks (heads × s², not per batch row) are not charged "
            "(t5-*-train-* fixtures within 3% without them)",
        )
    d = required(c, "hidden size", arch.model_type)
    vocab = required(c, "vocabulary", arch.model_type)
    heads = c.get("encoder_attention_heads") or required(c, "attention heads", arch.model_type)
    heads_e, heads_d = heads, c.get("decoder_attention_heads") or heads
    enc_layers = c.get("encoder_layers") or required(c, "layers", arch.model_type)
    enc = Stack(
        layers=enc_layers,
        hidden=d,
        heads=heads_e,
        kv_heads=heads_e,
        head_dim=d // heads_e,
        intermediate=c.get("encoder_ffn_dim") or _intermediate(c, d),
        stream="src",
        dropout=True,
    )
    dec = Stack(
        layers=c.get("decoder_layers") or c.get("num_decoder_layers") or enc_layers,
        hidden=d,
        heads=heads_d,
        kv_heads=heads_d,
        head_dim=d // heads_d,
        intermediate=c.get("decoder_ffn_dim") or _intermediate(c, d),
        stream="tgt",
        norms=3,
        cross_attention=True,
        dropout=True,
    )
    return ModelShape(
        "encoder-decoder",
        arch.params,
        (enc, dec),
        vocab,
        True,
        vocab * d,
        vocab * d,
        fp32_logits=arch.model_type in LOGITS_BIAS_TYPES,
    )


# the encoder-decoders whose LM head adds a ``final_logits_bias`` buffer to the logits (the
# BART layout): the head's output and the sum are live together. No config field says so;
# the list is the installed transformers' modeling files that define the buffer.
LOGITS_BIAS_TYPES = frozenset(
    {
        "bart",
        "bigbird_pegasus",
        "blenderbot",
        "blenderbot-small",
        "blenderbot_small",
        "fsmt",
        "led",
        "marian",
        "mbart",
        "mvp",
        "pegasus",
        "plbart",
    }
)


def _intermediate(c: Any, h: int) -> int:
    for name in FIELD_NAMES["intermediate size"]:
        if isinstance(c.get(name), int) and c[name] > 0:
            return int(c[name])
    return 4 * h


def _vision_transformer(arch: Architecture, cfg: dict[str, Any]) -> ModelShape:
    h = required(cfg, "hidden size", arch.model_type)
    heads = required(cfg, "attention heads", arch.model_type)
    stack = Stack(
        layers=required(cfg, "layers", arch.model_type),
        hidden=h,
        heads=heads,
        kv_heads=heads,
        head_dim=h // heads,
        intermediate=_intermediate(cfg, h),
        stream="image",
        mlp=_plain_mlp(str(cfg.get("model_type") or ""), cfg),
        layer_scale=bool(cfg.get("layerscale_value") or cfg.get("layer_scale_init_value")),
    )
    return ModelShape(
        arch.kind,
        arch.params,
        (stack,),
        image_size=cfg.get("image_size", 224),
        patch_size=cfg["patch_size"],
    )


def _dit(arch: Architecture) -> ModelShape:
    c = arch.config
    h = c["num_attention_heads"] * c["attention_head_dim"]
    stack = Stack(
        layers=c["num_layers"],
        hidden=h,
        heads=c["num_attention_heads"],
        kv_heads=c["num_attention_heads"],
        head_dim=c["attention_head_dim"],
        intermediate=4 * h,
        stream="image",
        mlp="gelu-tanh",
    )
    return ModelShape(
        arch.kind,
        arch.params,
        (stack,),
        image_size=c.get("sample_size", 32),
        patch_size=c["patch_size"],
        note="DiT sizes are in latent pixels",
    )


def _caption_stack(text: Any) -> Stack | None:
    """The text tower of a contrastive image-text model as a stack of its own (its
    activations are as real as the vision tower's: CLIP's text tower is a quarter of its
    vision tower's at ViT-B/16), or ``None`` when its fields do not give one."""
    try:
        h = required(text, "hidden size")
        heads = required(text, "attention heads")
        layers = required(text, "layers")
    except LookupError:
        return None
    return Stack(
        layers=layers,
        hidden=h,
        heads=heads,
        kv_heads=heads,
        head_dim=h // heads,
        intermediate=_intermediate(text, h),
        stream="caption",
        mlp=_plain_mlp(str(text.get("model_type") or ""), text),
        dropout=dropout_of("", text),
        tokens=int(text.get("max_position_embeddings") or 77),
    )


def _with_text_tower(arch: Architecture, shape: ModelShape) -> ModelShape:
    text = arch.text_tower
    if text is None and arch.kind == "clip":
        text = arch.config.get("text_config")
    caption = _caption_stack(text) if text is not None else None
    if caption is None:
        return shape
    return attrs.evolve(shape, stacks=(*shape.stacks, caption))


def shape_of(arch: Architecture) -> ModelShape:
    """The cost model's view of ``arch``."""
    kind = arch.kind
    if kind == "decoder":
        return _decoder(arch)
    if kind == "encoder":
        return _encoder(arch)
    if kind == "encoder-decoder":
        return _seq2seq(arch)
    if kind == "vision-transformer":
        return _with_text_tower(arch, _vision_transformer(arch, dict(arch.config)))
    if kind == "clip":
        vision = _vision_transformer(
            arch,
            dict(
                arch.config["vision_config"],
                num_attention_heads=arch.config["vision_config"].get("num_attention_heads", 12),
            ),
        )
        return _with_text_tower(arch, vision)
    if kind == "diffusion-transformer":
        return _dit(arch)
    return ModelShape(
        kind,
        arch.params,
        cnn=arch,
        image_size=arch.config.get("sample_size", 224),
        note="" if kind == "cnn" else f"activations of {kind} are not modelled",
    )
