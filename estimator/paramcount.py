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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "DECODER_TYPES",
    "ENCODER_DECODER_TYPES",
    "ENCODER_TYPES",
    "decoder_params",
    "decoder_shape",
    "encoder_decoder_params",
    "encoder_params",
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


def _first(cfg: Config, *names: str, default: Any = None) -> Any:
    for name in names:
        if cfg.get(name) is not None:
            return cfg[name]
    return default


def decoder_shape(model_type: str, cfg: Config) -> dict[str, Any]:
    """The structural numbers of a decoder LM, with ``model_type``'s conventions applied."""
    s = dict(_BASE, **_CONVENTIONS[model_type])
    h = _first(cfg, "hidden_size", "n_embd", "d_model")
    heads = _first(cfg, "num_attention_heads", "n_head")
    s.update(
        vocab=cfg["vocab_size"],
        hidden=h,
        heads=heads,
        layers=_first(cfg, "num_hidden_layers", "n_layer", "num_layers"),
        head_dim=_first(cfg, "head_dim", default=h // heads),
        intermediate=_first(
            cfg, "intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", default=4 * h
        ),
    )
    s["kv_heads"] = _first(cfg, "num_key_value_heads", "num_kv_heads", default=heads)
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
    if model_type in ("deepseek_v2", "deepseek_v3"):
        s["mla"] = {
            k: cfg.get(k)
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
        expert_intermediate=_first(cfg, "moe_intermediate_size", "intermediate_size"),
        shared_intermediate=0,
        shared_gate=False,
        router_bias=False,
        dense_layers=0,
        dense_intermediate=cfg.get("intermediate_size"),
    )
    if model_type == "qwen2_moe":
        moe["shared_intermediate"] = cfg.get("shared_expert_intermediate_size", 0)
        moe["shared_gate"] = True
    if model_type in ("deepseek_v2", "deepseek_v3"):
        moe["shared_intermediate"] = cfg.get("n_shared_experts", 0) * moe["expert_intermediate"]
        moe["dense_layers"] = cfg.get("first_k_dense_replace", 0)
        moe["router_bias"] = cfg.get("topk_method") == "noaux_tc"  # e_score_correction_bias
    return moe


def _mlp(h: int, inner: int, gated: bool, bias: bool) -> int:
    if gated:
        return 3 * h * inner + (2 * inner + h if bias else 0)
    return 2 * h * inner + (inner + h if bias else 0)


def _attention(s: Mapping[str, Any]) -> int:
    h, heads, kv, hd = s["hidden"], s["heads"], s["kv_heads"], s["head_dim"]
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
    n = _attention(s) + s["norms"] * s["norm"] * h
    moe = s["moe"]
    gated = s["mlp"] == "gated"
    if moe is None or index < moe["dense_layers"]:
        inner = moe["dense_intermediate"] if moe else s["intermediate"]
        return n + _mlp(h, inner, gated, s["mlp_bias"])
    experts = moe["active"] if active else moe["experts"]
    n += experts * _mlp(h, moe["expert_intermediate"], gated, s["mlp_bias"])
    n += h * moe["experts"] + (moe["experts"] if moe["router_bias"] else 0)
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
    """BERT-style encoders, counted as the bare ``AutoModel`` (with BERT's pooler)."""
    h = cfg.get("hidden_size", cfg.get("dim"))
    inner = cfg.get("intermediate_size", cfg.get("hidden_dim"))
    layers = cfg.get("num_hidden_layers", cfg.get("n_layers"))
    n = cfg["vocab_size"] * h + 2 * h  # word embeddings + embedding LayerNorm
    if cfg.get("position_biased_input", True):
        n += cfg.get("max_position_embeddings", 512) * h
    n += cfg.get("type_vocab_size", 0) * h
    layer = 4 * (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h) + 2 * h
    n += layers * layer
    if model_type == "deberta-v2":
        buckets = cfg.get("position_buckets", -1)
        span = buckets if buckets > 0 else cfg.get("max_relative_positions", 512)
        n += 2 * span * h + 2 * h  # shared relative embeddings + their LayerNorm
    if cfg.get("add_pooling_layer", model_type in ("bert", "roberta", "xlm-roberta")):
        n += h * h + h
    return n


def encoder_decoder_params(model_type: str, cfg: Config) -> int:
    """T5 / Flan-T5, BART and Whisper, as their ``...ForConditionalGeneration`` class."""
    if model_type == "t5":
        return _t5(cfg)
    d, vocab = cfg["d_model"], cfg["vocab_size"]
    ffn_e, ffn_d = cfg["encoder_ffn_dim"], cfg["decoder_ffn_dim"]
    attn = 4 * d * d + (3 if model_type == "whisper" else 4) * d  # Whisper's k_proj has no bias
    enc_layer = attn + 2 * d + (d * ffn_e + ffn_e) + (ffn_e * d + d) + 2 * d
    dec_layer = 2 * attn + 3 * 2 * d + (d * ffn_d + ffn_d) + (ffn_d * d + d)
    n = cfg["encoder_layers"] * enc_layer + cfg["decoder_layers"] * dec_layer
    if model_type == "bart":
        positions = cfg["max_position_embeddings"] + 2  # learned, offset 2
        n += (
            vocab * d + 2 * positions * d + 2 * (2 * d)
        )  # shared embeddings, layernorm_embedding x2
        return n
    # Whisper: conv front end, sinusoidal encoder positions stored as a parameter,
    # learned decoder positions, final LayerNorms, output projection tied.
    mels = cfg.get("num_mel_bins", 80)
    n += (mels * d * 3 + d) + (d * d * 3 + d)
    n += cfg["max_source_positions"] * d + cfg["max_target_positions"] * d
    return n + vocab * d + 2 * (2 * d)


def _t5(cfg: Config) -> int:
    d, inner = cfg["d_model"], cfg["num_heads"] * cfg["d_kv"]
    d_ff, vocab = cfg["d_ff"], cfg["vocab_size"]
    gated = str(cfg.get("feed_forward_proj", "relu")).startswith("gated")
    ff = (3 if gated else 2) * d * d_ff
    attn = 4 * d * inner
    enc_layers = cfg["num_layers"]
    dec_layers = cfg.get("num_decoder_layers") or enc_layers
    rel_bias = cfg.get("relative_attention_num_buckets", 32) * cfg["num_heads"]
    n = vocab * d  # shared embedding
    n += enc_layers * (attn + ff + 2 * d) + rel_bias + d
    n += dec_layers * (2 * attn + ff + 3 * d) + rel_bias + d
    if not cfg.get("tie_word_embeddings", True):
        n += vocab * d
    return n
