"""Parameter counts of transformer language models, computed from their HF config fields.

Why compute instead of storing a number: the estimator needs more than the total — the
embedding share (tied or not), the per-layer size (for checkpointing and sharding), the
active share of a mixture-of-experts — and a user's own ``config.json`` carries only the
structure. Every checkpoint in the catalog with a published count is tested against this
code within 1%, which is what keeps the formulas honest.

Each HF ``model_type`` differs from Llama in a few conventions (biases, LayerNorm with or
without bias, how many norms per layer, tied embeddings, learned positions, q/k norms,
MoE and MLA). :func:`decoder_shape` writes those conventions down once, as data the
counting code reads; nothing here knows a checkpoint by name.

Past 400 lines: the generic count reads every stack kind (decoder, encoder,
encoder-decoder, MoE, MLA) through the same field readers (``_first``, ``required``,
``generic_conventions``); splitting by stack kind would move those readers into a third
module every part imports, and waits for issue 29's restructure of the estimator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .routedattention import attention_experts, attention_params

__all__ = [
    "DECODER_TYPES",
    "ENCODER_DECODER_TYPES",
    "ENCODER_TYPES",
    "FIELD_NAMES",
    "NUMERIC_FIELDS",
    "ROTARY_FIELDS",
    "MissingFieldError",
    "check_numbers",
    "decoder_params",
    "decoder_shape",
    "encoder_decoder_params",
    "encoder_params",
    "field_name",
    "generic_conventions",
    "infer_kind",
    "is_t5_like",
    "required",
]

Config = Mapping[str, Any]

# model_type → conventions that its config.json does not spell out.
#   norm: parameters per element of one norm (RMSNorm 1, LayerNorm with bias 2, OLMo-1's
#   non-parametric LayerNorm 0); norms: norms per layer; qk_norm: "head" (one head_dim
#   vector each, Qwen3/Gemma3) or "full" (over all heads, OLMo-2); mlp: "gated" (gate, up,
#   down) or "plain" (fc1, fc2); bias: biases on q/k/v, on o, on the MLP.
_BASE = dict(
    norm=1,
    norms=2,
    qk_norm=None,
    mlp="gated",
    qkv_bias=False,
    o_bias=False,
    mlp_bias=False,
    tied=False,
    lm_head_bias=False,
    embed_norm=False,
    positions=0,
    final_norm=True,
)
_CONVENTIONS: dict[str, dict[str, Any]] = {
    "llama": {},
    "mistral": {},
    "mixtral": {},
    "phi3": {},
    "deepseek_v2": {},
    "deepseek_v3": {},
    "qwen2": dict(qkv_bias=True),
    "qwen2_moe": dict(qkv_bias=True),
    "qwen3": dict(qk_norm="head"),
    "qwen3_moe": dict(qk_norm="head"),
    "gemma": dict(tied=True),
    "gemma2": dict(tied=True, norms=4),
    "gemma3_text": dict(tied=True, norms=4, qk_norm="head"),
    "olmo": dict(norm=0),
    "olmo2": dict(qk_norm="full"),
    "olmoe": dict(qk_norm="full"),
    "phimoe": dict(norm=2, qkv_bias=True, o_bias=True, lm_head_bias=True),
    "starcoder2": dict(norm=2, mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True),
    "gpt2": dict(norm=2, mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True, tied=True),
    "gpt_neox": dict(norm=2, mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True),
    "falcon": dict(norm=2, mlp="plain", tied=True),
    "phi": dict(
        norm=2, norms=1, mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True, lm_head_bias=True
    ),
    "opt": dict(norm=2, mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True, tied=True),
    "bloom": dict(
        norm=2, mlp="plain", qkv_bias=True, o_bias=True, mlp_bias=True, tied=True, embed_norm=True
    ),
}
DECODER_TYPES = frozenset(_CONVENTIONS)
ENCODER_TYPES = frozenset({"bert", "roberta", "xlm-roberta", "distilbert", "deberta-v2"})
ENCODER_DECODER_TYPES = frozenset({"t5", "bart", "whisper"})

# What each quantity is called across config.json files, first match wins. A model_type
# without a family table is counted from these alone (:func:`generic_conventions`).
FIELD_NAMES: dict[str, tuple[str, ...]] = {
    "hidden size": ("hidden_size", "n_embd", "d_model", "dim", "embed_dim"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "attention heads": ("num_attention_heads", "n_head", "n_heads", "num_heads"),
    "vocabulary": ("vocab_size", "padded_vocab_size"),
    "intermediate size": (
        "intermediate_size",
        "n_inner",
        "ffn_dim",
        "ffn_hidden_size",
        "d_ff",
        "hidden_dim",
    ),
    "kv heads": ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"),
}
_RMS_FIELDS = ("rms_norm_eps", "rms_norm_epsilon")
_LAYERNORM_FIELDS = ("layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon")
# Activations whose transformers MLPs are gated (act(gate) * up) whatever the family: SiLU
# is Llama's SwiGLU; a GLU spelled out names itself.
_GATED_ACTS = ("silu", "swish", "swiglu", "geglu", "reglu")
ROTARY_FIELDS = ("rope_theta", "rope_parameters", "rope_scaling", "rotary_dim", "rotary_pct")


class MissingFieldError(LookupError, ValueError):
    """A config.json lacks a field its count needs: one line naming the field.

    A ``LookupError`` so that the CLI answers it as a configuration error (exit 2), a
    ``ValueError`` so that readers of cached configs skip it like any unreadable one."""

    def __init__(self, model_type: object, quantity: str, got: object = None) -> None:
        names = " / ".join(FIELD_NAMES.get(quantity, (quantity,)))
        if got is not None:  # present, but not a number the count can use
            message = f"structural field {quantity} is not a whole number (got {got!r})"
        else:
            message = f"missing structural field: {quantity} ({names})"
        super().__init__(f"model_type {model_type!r}: {message}")


# Fields the counts and the cost model do arithmetic with: when present (not null) each must
# be a whole number (a list of them where a config may give one per layer or per side).
NUMERIC_FIELDS = frozenset(
    {name for names in FIELD_NAMES.values() for name in names}
    | {
        "head_dim",
        "max_position_embeddings",
        "n_positions",
        "num_local_experts",
        "num_experts",
        "n_routed_experts",
        "num_experts_per_tok",
        "top_k",
        "moe_intermediate_size",
        "expert_ffn_hidden_size",
        "shared_expert_intermediate_size",
        "n_shared_experts",
        "first_k_dense_replace",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "sliding_window",
        "attention_chunk_size",
        "sliding_window_pattern",
        "type_vocab_size",
        "embedding_size",
        "projection_dim",
        "projection_size",
        "num_channels",
        "encoder_layers",
        "decoder_layers",
        "encoder_ffn_dim",
        "decoder_ffn_dim",
        "encoder_attention_heads",
        "decoder_attention_heads",
        "d_kv",
        "relative_attention_num_buckets",
    }
)
_LISTED = ("intermediate_size", "image_size", "patch_size")


def check_numbers(cfg: Config, model_type: object) -> None:
    """Raise :class:`MissingFieldError` for a numeric field that holds something else."""
    for name in NUMERIC_FIELDS:
        value = cfg.get(name)
        if value is None or _whole(value):
            continue
        if name in _LISTED and isinstance(value, list) and value and all(map(_whole, value)):
            continue
        raise MissingFieldError(model_type, name, got=value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _first(cfg: Config, *names: str, default: Any = None) -> Any:
    for name in names:
        if cfg.get(name) is not None:
            return cfg[name]
    return default


def field_name(cfg: Config, quantity: str) -> str | None:
    """The config field that gives ``quantity`` (``None``: none does)."""
    for name in FIELD_NAMES[quantity]:
        if _positive(cfg.get(name)):
            return name
    return None


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def required(cfg: Config, quantity: str, model_type: object = None) -> int:
    """The value of ``quantity`` (:data:`FIELD_NAMES`), or :class:`MissingFieldError`."""
    name = field_name(cfg, quantity)
    if name is None:
        raise MissingFieldError(
            model_type if model_type is not None else cfg.get("model_type"), quantity
        )
    return int(cfg[name])


def activation_name(cfg: Config) -> str:
    for name in ("hidden_act", "activation_function", "hidden_activation"):
        if isinstance(cfg.get(name), str):
            return str(cfg[name]).lower()
    return ""


def generic_conventions(cfg: Config) -> dict[str, Any]:
    """The conventions of a decoder with no family table, read from its fields.

    RMSNorm (``rms_norm_eps``) means one weight per element and, as in every transformers
    decoder that uses it, a gated MLP; LayerNorm (``layer_norm_eps``) weight and bias and,
    unless the activation names a GLU, a plain MLP with biases. ``attention_bias`` /
    ``mlp_bias`` / ``use_bias`` / ``bias`` say so outright. Learned positions only where the
    config has GPT-2's ``n_positions`` or ``position_embedding_type: absolute`` and no
    rotary field. Untied unless ``tie_word_embeddings`` (PretrainedConfig's default: tied).
    """
    layer_norm = _first(cfg, *_RMS_FIELDS) is None and _first(cfg, *_LAYERNORM_FIELDS) is not None
    act = activation_name(cfg)
    gated = any(g in act for g in _GATED_ACTS) or not layer_norm or "glu" in act
    bias = layer_norm
    for name in ("use_bias", "bias"):
        if isinstance(cfg.get(name), bool):
            bias = bool(cfg[name])
    c: dict[str, Any] = dict(
        norm=2 if layer_norm else 1,
        mlp="gated" if gated else "plain",
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        tied=bool(cfg.get("tie_word_embeddings", True)),
    )
    if isinstance(cfg.get("qkv_bias"), bool):
        c["qkv_bias"] = cfg["qkv_bias"]
    if any(cfg.get(k) for k in ("qk_norm", "use_qk_norm", "qk_layernorm")):
        c["qk_norm"] = "head"
    rotary = any(cfg.get(k) is not None for k in ROTARY_FIELDS)
    absolute = cfg.get("position_embedding_type") == "absolute" or "n_positions" in cfg
    if absolute and not rotary:
        c["positions"] = _first(cfg, "n_positions", "max_position_embeddings", default=0)
    return c


def decoder_shape(model_type: str, cfg: Config) -> dict[str, Any]:
    """The structural numbers of a decoder LM, with ``model_type``'s conventions applied.

    A ``model_type`` with no family table gets :func:`generic_conventions`; ``fields``
    names the config fields the count read (for the note an unknown family carries).
    """
    known = model_type in _CONVENTIONS
    s = dict(_BASE, **(_CONVENTIONS[model_type] if known else generic_conventions(cfg)))
    h = required(cfg, "hidden size", model_type)
    heads = required(cfg, "attention heads", model_type)
    s.update(
        vocab=required(cfg, "vocabulary", model_type),
        hidden=h,
        heads=heads,
        layers=required(cfg, "layers", model_type),
        # kv_channels: the head width of Megatron-style configs (JetMoE, ChatGLM, Qwen 1)
        head_dim=_first(cfg, "head_dim", "kv_channels", default=h // heads),
        intermediate=_first(cfg, *FIELD_NAMES["intermediate size"], default=4 * h),
    )
    if isinstance(s["intermediate"], list):  # one width per layer (Gemma 3n)
        s["intermediates"] = [int(i) for i in s["intermediate"]]
        s["intermediate"] = max(s["intermediates"])
    s["kv_heads"] = _first(cfg, *FIELD_NAMES["kv heads"], default=heads)
    if not known and cfg.get("multi_query") is True:
        s["kv_heads"] = 1
    s["fields"] = [
        n
        for n in (
            *(field_name(cfg, q) for q in FIELD_NAMES),
            next((n for n in ("head_dim", "kv_channels") if cfg.get(n)), None),
        )
        if n
    ]
    if "tie_word_embeddings" in cfg:
        s["tied"] = bool(cfg["tie_word_embeddings"])
    if "attention_bias" in cfg and model_type not in ("qwen2", "qwen2_moe"):
        s["qkv_bias"] = s["o_bias"] = bool(cfg["attention_bias"])
    if "mlp_bias" in cfg:
        s["mlp_bias"] = bool(cfg["mlp_bias"])
    if model_type == "starcoder2":
        s["qkv_bias"] = s["o_bias"] = s["mlp_bias"] = bool(cfg.get("use_bias", True))
    if model_type in ("gpt2", "opt"):
        offset = 2 if model_type == "opt" else 0  # OPT's learned positions start at 2
        s["positions"] = _first(cfg, "n_positions", "max_position_embeddings") + offset
    if model_type == "opt":
        # OPT-350m embeds tokens at 512 and projects in and out of its 1024 hidden size
        # (``project_in`` / ``project_out``, no bias); post-LN checkpoints
        # (``do_layer_norm_before: false``) have no final layer norm
        s["embed"] = _first(cfg, "word_embed_proj_dim", default=h)
        s["final_norm"] = bool(cfg.get("do_layer_norm_before", True)) and not cfg.get(
            "_remove_final_layer_norm", False
        )
    if model_type == "falcon":
        if cfg.get("new_decoder_architecture"):
            s["norms"] = 2  # ln_attn and ln_mlp
        else:
            s["norms"] = 1 if cfg.get("parallel_attn", True) else 2
            if cfg.get("multi_query", True):
                s["kv_heads"] = 1
        s["qkv_bias"] = s["o_bias"] = s["mlp_bias"] = bool(cfg.get("bias", False))
    s["moe"] = _moe(model_type, cfg)
    # a mixture of attention heads (JetMoE): routed q / o experts, and feed-forward experts
    # of the same layout, with a bias on their summed output
    s["attention_experts"] = attention_experts(cfg, s["moe"])
    if s["attention_experts"] and s["moe"]:
        s["moe"]["scattered"] = True
    if cfg.get("kv_lora_rank"):  # multi-head latent attention (DeepSeek-V2 / V3 and kin)
        s["mla"] = {
            k: cfg.get(k) or 0
            for k in (
                "q_lora_rank",
                "kv_lora_rank",
                "qk_nope_head_dim",
                "qk_rope_head_dim",
                "v_head_dim",
            )
        }
    return s


def _moe(model_type: str, cfg: Config) -> dict[str, Any] | None:
    experts = _first(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    if not experts:
        return None
    moe = dict(
        experts=experts,
        active=_first(cfg, "num_experts_per_tok", "top_k", default=2),
        expert_intermediate=_first(
            cfg,
            "moe_intermediate_size",
            "expert_ffn_hidden_size",
            *FIELD_NAMES["intermediate size"],
        ),
        shared_intermediate=0,
        shared_gate=False,
        router_bias=False,
        dense_layers=0,
        dense_intermediate=_first(cfg, *FIELD_NAMES["intermediate size"]),
    )
    if not _positive(moe["expert_intermediate"]):
        raise MissingFieldError(model_type, "intermediate size")
    if not _positive(moe["dense_intermediate"]):
        moe["dense_intermediate"] = moe["expert_intermediate"]
    # shared experts and leading dense layers, by whichever field the config spells them with
    shared = cfg.get("shared_expert_intermediate_size") or 0
    if not shared and cfg.get("n_shared_experts"):
        shared = int(cfg["n_shared_experts"]) * moe["expert_intermediate"]
    moe["shared_intermediate"] = shared
    moe["shared_gate"] = model_type == "qwen2_moe" or (
        model_type not in _CONVENTIONS and bool(cfg.get("shared_expert_intermediate_size"))
    )
    moe["dense_layers"] = cfg.get("first_k_dense_replace") or 0
    moe["router_bias"] = cfg.get("topk_method") == "noaux_tc"  # e_score_correction_bias
    return moe


def _mlp(h: int, inner: int, gated: bool, bias: bool) -> int:
    if gated:
        return 3 * h * inner + (2 * inner + h if bias else 0)
    return 2 * h * inner + (inner + h if bias else 0)


def _attention(s: Mapping[str, Any], *, active: bool = False) -> int:
    h, heads, kv, hd = s["hidden"], s["heads"], s["kv_heads"], s["head_dim"]
    if s.get("attention_experts"):
        return attention_params(h, s["attention_experts"], active=active)
    mla = s.get("mla")
    if mla:
        qk = mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
        if mla["q_lora_rank"]:
            q = h * mla["q_lora_rank"] + mla["q_lora_rank"] + mla["q_lora_rank"] * heads * qk
        else:
            q = h * heads * qk
        kv_a = h * (mla["kv_lora_rank"] + mla["qk_rope_head_dim"]) + mla["kv_lora_rank"]
        kv_b = mla["kv_lora_rank"] * heads * (mla["qk_nope_head_dim"] + mla["v_head_dim"])
        return q + kv_a + kv_b + heads * mla["v_head_dim"] * h
    n = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    if s["qkv_bias"]:
        n += heads * hd + 2 * kv * hd
    if s["o_bias"]:
        n += h
    if s["qk_norm"] == "head":
        n += 2 * hd
    elif s["qk_norm"] == "full":
        n += heads * hd + kv * hd
    return n


def _layer(s: Mapping[str, Any], index: int, *, active: bool) -> int:
    h = s["hidden"]
    n = _attention(s, active=active) + s["norms"] * s["norm"] * h
    moe = s["moe"]
    gated = s["mlp"] == "gated"
    if moe is None or index < moe["dense_layers"]:
        inner = moe["dense_intermediate"] if moe else s["intermediate"]
        if "intermediates" in s and index < len(s["intermediates"]):
            inner = s["intermediates"][index]
        return n + _mlp(h, inner, gated, s["mlp_bias"])
    experts = moe["active"] if active else moe["experts"]
    n += experts * _mlp(h, moe["expert_intermediate"], gated, s["mlp_bias"])
    n += h * moe["experts"] + (moe["experts"] if moe["router_bias"] else 0)
    if moe.get("scattered"):  # JetMoeMoE's bias on the experts' summed output
        n += h
    if moe["shared_intermediate"]:
        n += _mlp(h, moe["shared_intermediate"], gated, False) + (h if moe["shared_gate"] else 0)
    return n


def decoder_params(model_type: str, cfg: Config, *, active: bool = False) -> int:
    """Total parameters (``active=True``: those one token uses, for MoE models)."""
    s = decoder_shape(model_type, cfg)
    h, vocab = s["hidden"], s["vocab"]
    embed = s.get("embed", h)  # the token embeddings' width (OPT may project it)
    n = vocab * embed + s["positions"] * h
    if embed != h:
        n += 2 * embed * h  # project_in and project_out
    if not s["tied"]:
        n += vocab * embed
    if s["lm_head_bias"]:
        n += vocab
    if s["embed_norm"]:
        n += 2 * h
    if s["final_norm"]:
        n += s["norm"] * h
    return n + sum(_layer(s, i, active=active) for i in range(s["layers"]))


def encoder_params(model_type: str, cfg: Config) -> int:
    """BERT-style encoders, counted as the bare ``AutoModel`` (with BERT's pooler).

    A family with no table is counted the same way from its fields: token embeddings at
    ``embedding_size`` (projected to the hidden size when it differs, ALBERT / ELECTRA),
    learned positions unless the config names rotary or relative ones, token types."""
    h = required(cfg, "hidden size", model_type)
    inner = _first(cfg, *FIELD_NAMES["intermediate size"], default=4 * h)
    layers = required(cfg, "layers", model_type)
    vocab = required(cfg, "vocabulary", model_type)
    e = _first(cfg, "embedding_size", default=h) if model_type not in ENCODER_TYPES else h
    n = vocab * e + 2 * e  # word embeddings + embedding LayerNorm
    if e != h:
        n += e * h + h  # embeddings_project
    rotary = any(cfg.get(k) is not None for k in ROTARY_FIELDS)
    absolute = cfg.get("position_embedding_type", "absolute") == "absolute" and not rotary
    if cfg.get("position_biased_input", True) and absolute:
        n += (cfg.get("max_position_embeddings") or 512) * e
    n += (cfg.get("type_vocab_size") or 0) * e
    layer = 4 * (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h) + 2 * h
    n += layers * layer
    if model_type == "deberta-v2":
        buckets = cfg.get("position_buckets", -1)
        span = buckets if buckets > 0 else cfg.get("max_relative_positions", 512)
        n += 2 * span * h + 2 * h  # shared relative embeddings + their LayerNorm
    if cfg.get("add_pooling_layer", model_type in ("bert", "roberta", "xlm-roberta")):
        n += h * h + h
    projection = cfg.get("projection_size") or 0
    if model_type not in ENCODER_TYPES and _positive(projection):
        n += h * projection + projection  # a contrastive text tower's head (SigLIP)
    return n


def is_t5_like(model_type: str, cfg: Config) -> bool:
    """T5's conventions (``d_kv``, ``d_ff``, relative position buckets, RMS norms without
    bias, no biases anywhere): T5 itself and the families that copy its config (mT5, UMT5,
    LongT5...)."""
    return model_type == "t5" or (
        model_type not in ENCODER_DECODER_TYPES and "d_kv" in cfg and "d_ff" in cfg
    )


def encoder_decoder_params(model_type: str, cfg: Config) -> int:
    """T5 / Flan-T5, BART and Whisper, as their ``...ForConditionalGeneration`` class; any
    other encoder-decoder is counted as T5 (its fields) or as BART (the rest)."""
    if is_t5_like(model_type, cfg):
        return _t5(cfg)
    d = required(cfg, "hidden size", model_type)
    vocab = required(cfg, "vocabulary", model_type)
    ffn_e = _first(cfg, "encoder_ffn_dim", *FIELD_NAMES["intermediate size"], default=4 * d)
    ffn_d = _first(cfg, "decoder_ffn_dim", *FIELD_NAMES["intermediate size"], default=4 * d)
    enc_layers = _first(cfg, "encoder_layers", *FIELD_NAMES["layers"])
    dec_layers = _first(cfg, "decoder_layers", "num_decoder_layers", default=enc_layers)
    if not _positive(enc_layers):
        raise MissingFieldError(model_type, "layers")
    attn = 4 * d * d + (3 if model_type == "whisper" else 4) * d  # Whisper's k_proj has no bias
    enc_layer = attn + 2 * d + (d * ffn_e + ffn_e) + (ffn_e * d + d) + 2 * d
    dec_layer = 2 * attn + 3 * 2 * d + (d * ffn_d + ffn_d) + (ffn_d * d + d)
    n = enc_layers * enc_layer + dec_layers * dec_layer
    if model_type == "bart":
        positions = cfg["max_position_embeddings"] + 2  # learned, offset 2
        n += (
            vocab * d + 2 * positions * d + 2 * (2 * d)
        )  # shared embeddings, layernorm_embedding x2
        return n
    if model_type != "whisper":
        # another BART-like family: shared embeddings, positions in each stack, a final
        # LayerNorm each, an untied head when the config says so
        positions = cfg.get("max_position_embeddings") or 0
        n += vocab * d + 2 * positions * d + 2 * (2 * d)
        if cfg.get("tie_word_embeddings") is False:
            n += vocab * d
        return n
    # Whisper: conv front end, sinusoidal encoder positions stored as a parameter,
    # learned decoder positions, final LayerNorms, output projection tied.
    mels = cfg.get("num_mel_bins", 80)
    n += (mels * d * 3 + d) + (d * d * 3 + d)
    n += cfg["max_source_positions"] * d + cfg["max_target_positions"] * d
    return n + vocab * d + 2 * (2 * d)


def _t5(cfg: Config) -> int:
    d = required(cfg, "hidden size")
    heads = required(cfg, "attention heads")
    inner = heads * cfg["d_kv"]
    d_ff, vocab = cfg["d_ff"], required(cfg, "vocabulary")
    gated = str(cfg.get("feed_forward_proj", "relu")).startswith("gated")
    ff = (3 if gated else 2) * d * d_ff
    attn = 4 * d * inner
    enc_layers = required(cfg, "layers")
    dec_layers = cfg.get("num_decoder_layers") or enc_layers
    rel_bias = cfg.get("relative_attention_num_buckets", 32) * heads
    n = vocab * d  # shared embedding
    n += enc_layers * (attn + ff + 2 * d) + rel_bias + d
    n += dec_layers * (2 * attn + ff + 3 * d) + rel_bias + d
    if not cfg.get("tie_word_embeddings", True):
        n += vocab * d
    return n


def infer_kind(cfg: Config) -> str:
    """The broad kind of a model whose family has no table, from its config's fields.

    ``is_encoder_decoder`` (or a T5-style ``d_kv``/``d_ff`` pair) means encoder-decoder; a
    causal-LM class in ``architectures`` a decoder, a masked-LM one an encoder; token types
    (``type_vocab_size``) or BERT's ``position_embedding_type`` without KV heads an encoder,
    as is BERT's ``attention_probs_dropout_prob`` in a config without ``use_cache``;
    patches without a vocabulary a vision transformer. Anything else with a vocabulary is
    read as a decoder, the commonest kind of checkpoint a user points at."""
    names = " ".join(str(a) for a in cfg.get("architectures") or ())
    if cfg.get("is_encoder_decoder", "d_kv" in cfg and "d_ff" in cfg):
        return "encoder-decoder"
    if "CausalLM" in names or "LMHead" in names:
        return "decoder"
    if "MaskedLM" in names:
        return "encoder"
    kv = field_name(cfg, "kv heads") is not None
    has_vocab = field_name(cfg, "vocabulary") is not None
    if not kv and "patch_size" in cfg and ("image_size" in cfg or not has_vocab):
        return "vision-transformer"  # a vision tower may carry its LM's vocab_size (LLaVA)
    # token types, BERT's position embedding type, or the projection of a contrastive
    # text tower (CLIP's projection_dim, SigLIP's projection_size): bidirectional encoders
    encoder_fields = ("type_vocab_size", "position_embedding_type", "projection_dim")
    if not kv and any(f in cfg for f in (*encoder_fields, "projection_size")):
        return "encoder"
    # BERT's name for attention dropout without any cache (MPNet): no causal LM of the
    # installed transformers' CONFIG_MAPPING has that pair (checked with transformers 5.25)
    if not kv and "attention_probs_dropout_prob" in cfg and "use_cache" not in cfg:
        return "encoder"
    return "decoder"
