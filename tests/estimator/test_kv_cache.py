"""The KV cache is counted only when it exists, at its real size (issue 27).

``use_cache`` comes from the call (or ``--use-cache``), then the model's config.json, then
the transformers default (on). GQA / MQA caches keep their KV heads only, MLA its latent;
a sliding layer keeps its window while decoding; beams multiply the rows.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

from torchward.estimator.estimate import estimate
from torchward.estimator.runconfig import Field, RunConfig
from torchward.estimator.shape import cache_windows

from torchward.cli import main


def _phases(model: str, mode: str, **fields) -> dict[str, dict[str, float]]:
    config = RunConfig(
        model=Field(model, "--model"),
        mode=Field(mode, "--mode"),
        dtype=Field("bf16", "--dtype"),
        **{k: Field(v, "--" + k.replace("_", "-")) for k, v in fields.items()},
    )
    return {p.name: p.parts for p in estimate(config).phases}


def test_llama_3_8b_generation_cache_is_two_kv_heads_wide_per_layer():
    phases = _phases("llama-3-8b", "generate", batch_size=4, seq_len=4096, max_new_tokens=512)
    # 2 (K and V) × 32 layers × 8 KV heads × 128 head_dim × tokens × 4 rows × 2 bytes
    assert phases["prefill"]["kv_cache"] == 2 * 32 * 8 * 128 * 4096 * 4 * 2
    assert phases["decode"]["kv_cache"] == 2 * 32 * 8 * 128 * (4096 + 512) * 4 * 2


def test_beams_multiply_the_cached_rows():
    one = _phases("llama-3-8b", "generate", batch_size=2, seq_len=1024, max_new_tokens=64)
    four = _phases(
        "llama-3-8b", "generate", batch_size=2, seq_len=1024, max_new_tokens=64, num_beams=4
    )
    assert four["decode"]["kv_cache"] == 4 * one["decode"]["kv_cache"]


def test_a_plain_forward_without_the_cache_returns_none():
    on = _phases("llama-3-8b", "inference", batch_size=4, seq_len=2048)
    off = _phases("llama-3-8b", "inference", batch_size=4, seq_len=2048, use_cache=False)
    assert on["forward"]["kv_cache"] == 2 * 32 * 8 * 128 * 2048 * 4 * 2
    assert off["forward"]["kv_cache"] == 0
    assert off["forward"]["weights"] == on["forward"]["weights"]


def test_the_use_cache_flag_is_honoured_by_estimate_for_a_forward():
    def peak(*extra: str) -> int:
        out = io.StringIO()
        argv = ["estimate", "--model", "llama-3-8b", "--mode", "inference", "--batch-size", "4"]
        with redirect_stdout(out):
            assert main([*argv, "--seq-len", "2048", "--format", "json", *extra]) == 0
        data = json.loads(out.getvalue())
        return data["terms"]["kv_cache"]

    assert peak("--use-cache", "true") == 2 * 32 * 8 * 128 * 2048 * 4 * 2
    assert peak("--use-cache", "false") == 0


def test_the_config_json_use_cache_field_is_the_fallback(tmp_path):
    from torchward.estimator.architecture import lookup_model

    fields = dict(lookup_model("llama-3-8b").config, model_type="llama", use_cache=False)
    (tmp_path / "config.json").write_text(json.dumps(fields))
    off = _phases(str(tmp_path), "inference", batch_size=1, seq_len=512)
    assert off["forward"]["kv_cache"] == 0
    called = _phases(str(tmp_path), "inference", batch_size=1, seq_len=512, use_cache=True)
    assert called["forward"]["kv_cache"] > 0  # the call wins over the config
    generated = _phases(str(tmp_path), "generate", batch_size=1, seq_len=512, max_new_tokens=8)
    assert "decode (no cache)" in generated  # generate copies config.use_cache


def test_mla_caches_its_latent_not_the_heads():
    phases = _phases("deepseek-v2-lite", "generate", batch_size=1, seq_len=1000, max_new_tokens=24)
    # 27 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 1024 tokens × 2 bytes
    assert phases["decode"]["kv_cache"] == 27 * (512 + 64) * 1024 * 2


def test_sliding_layers_keep_their_window_while_decoding_but_the_prompt_after_prefill():
    phases = _phases("mistral-7b-v0.1", "generate", batch_size=1, seq_len=8192, max_new_tokens=8)
    per_token = 2 * 32 * 8 * 128 * 2
    assert phases["prefill"]["kv_cache"] == per_token * 8192
    assert phases["decode"]["kv_cache"] == per_token * 4096


def test_gemma_2_alternates_sliding_and_full_layers():
    windows = cache_windows("gemma2", {"sliding_window": 4096}, 42)
    assert windows[:4] == (4096, 0, 4096, 0) and windows.count(0) == 21
    phases = _phases("gemma-2-9b", "generate", batch_size=1, seq_len=8000, max_new_tokens=192)
    per_layer_token = 2 * 8 * 256 * 2
    assert phases["decode"]["kv_cache"] == per_layer_token * (21 * 8192 + 21 * 4096)


def test_layer_types_name_the_layers_without_a_kv_cache():
    config = {
        "sliding_window": 128,
        "layer_types": ["linear_attention", "full_attention", "sliding_attention"],
    }
    assert cache_windows("some_hybrid", config, 3) == (-1, 0, 128)
    # a window the family does not use (Qwen2's use_sliding_window: false)
    assert cache_windows("qwen2", {"sliding_window": 4096, "use_sliding_window": False}, 4) == ()


def test_a_seq2seq_decoder_caches_its_own_tokens_and_the_encoded_prompt():
    phases = _phases("t5-base", "generate", batch_size=2, seq_len=512, max_new_tokens=64)
    # 12 decoder layers × 2 × 768 wide: self-attention over 64 generated tokens,
    # cross-attention over the 512 prompt tokens
    assert phases["decode"]["kv_cache"] == 12 * 2 * 768 * 2 * 2 * (64 + 512)


def test_sampled_sequences_multiply_the_rows_unless_beams_do():
    base = dict(batch_size=2, seq_len=1024, max_new_tokens=64)
    one = _phases("llama-3-8b", "generate", **base)
    three = _phases("llama-3-8b", "generate", num_return_sequences=3, **base)
    assert three["prefill"]["kv_cache"] == 3 * one["prefill"]["kv_cache"]
    # with beam search the inputs are expanded by the beams; the returned sequences are
    # chosen among them
    beams = _phases("llama-3-8b", "generate", num_beams=4, num_return_sequences=2, **base)
    assert beams["prefill"]["kv_cache"] == 4 * one["prefill"]["kv_cache"]


def test_the_num_return_sequences_flag_reaches_the_estimate():
    out = io.StringIO()
    argv = ["estimate", "--model", "llama-3-8b", "--mode", "generate", "--batch-size", "2"]
    with redirect_stdout(out):
        assert main([*argv, "--num-return-sequences", "3", "--explain"]) == 0
    assert "× batch 2 × num_return_sequences 3 ×" in out.getvalue()


def test_beams_and_sampled_sequences_multiply_the_last_position_logits_too():
    """generate keeps fp32 last-position scores per row: rows = batch × beams (or × sampled
    sequences), in the prefill (one copy) and while decoding (two: this step's and the
    previous); beam search three at both (the logits copy, its log-softmax and their sum
    with the running beam scores: transformers' _beam_search)."""
    from torchward.estimator.costmodel import workspace_bytes

    base = dict(batch_size=2, seq_len=1024, max_new_tokens=64)
    vocab = 128_256  # Llama 3
    work = workspace_bytes(None)
    cases = (({}, 2, 1, 2), ({"num_beams": 4}, 8, 3, 3), ({"num_return_sequences": 3}, 6, 1, 2))
    for extra, rows, at_prefill, decoding in cases:
        phases = _phases("llama-3-8b", "generate", **base, **extra)
        assert phases["prefill"]["temporaries"] - work == at_prefill * 4 * vocab * rows, extra
        assert phases["decode"]["temporaries"] - work == decoding * 4 * vocab * rows, extra


def test_a_seq2seq_prefill_is_the_encoder_pass_and_decoding_keeps_the_encoded_prompt():
    """The decoder's cache (with the encoded prompt's cross-attention K/V) fills after the
    encoder's pass, when only the encoder's output is left (bench/oracle_memory.py: pegasus
    generate measured 0.415 GiB, estimated +14.8% when both were counted at the prefill)."""
    phases = _phases("t5-base", "generate", batch_size=2, seq_len=512, max_new_tokens=64)
    assert phases["prefill"]["kv_cache"] == 0
    # one layer's live set for one token, plus the encoded prompt: 768 wide × 512 × 2 × 2 B
    assert phases["decode"]["activations"] >= 768 * 512 * 2 * 2


def test_t5s_shared_position_bias_is_live_in_its_encoders_pass():
    """T5 hands its relative position bias (heads × s², one for the batch and the layers) to
    SDPA as an additive mask: the bias and the layer's mask are live beside the layer's
    intermediates (mt5 generate on the oracle: -6.3% without them)."""
    short = _phases("t5-base", "generate", batch_size=1, seq_len=256, max_new_tokens=8)
    long = _phases("t5-base", "generate", batch_size=1, seq_len=512, max_new_tokens=8)
    # doubling the prompt doubles the per-token terms and quadruples the bias's
    linear = 2 * short["prefill"]["activations"]
    bias_256 = 2 * 2 * 12 * 256 * 256  # 2 tensors × 2 bytes × 12 heads × s²
    assert long["prefill"]["activations"] - linear == 4 * bias_256 - 2 * bias_256
