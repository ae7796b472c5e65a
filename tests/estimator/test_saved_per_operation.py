"""Training activations counted per operation (issue 27), each term named with its inputs.

What autograd keeps was listed op by op with ``bench/oracle_breakdown.py`` (the calibration
harness at the start of the backward); these tests hold the estimator's per-operation
terms to those lists' rules and ``estimate --explain`` to the same numbers.
"""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout

import attrs
import pytest
from torchward.estimator.activations import (
    cached_keys_per_token,
    fused_attention_per_token,
    norm_casts_per_token,
    saved_per_token,
    saved_terms_per_token,
)
from torchward.estimator.precision import numerics
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig

from torchward.cli import main


def _stack(model: str, dtype: str = "amp-bf16", seq: int = 2048):
    config = RunConfig(
        model=Field(model, "--model"),
        mode=Field("train", "--mode"),
        dtype=Field(dtype, "--dtype"),
        batch_size=Field(4, "--batch-size"),
        seq_len=Field(seq, "--seq-len"),
    )
    return resolve(config).shape.stacks[0]


def _explain(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["estimate", *argv, "--explain"]) == 0
    return out.getvalue()


def _named_terms(text: str) -> dict[str, float]:
    line = next(x for x in text.splitlines() if x.strip().startswith("activations ="))
    inside = re.search(r"attention: (.*?)\) ×", line)
    assert inside, line
    terms = {}
    for part in inside.group(1).split(" + "):
        name, _, value = part.rpartition(" ")
        terms[name] = float(value.replace(",", ""))
    return terms


def test_explain_names_each_saved_operation_and_they_add_up() -> None:
    argv = ("--model", "llama-3.2-1b", "--mode", "train", "--dtype", "amp-bf16")
    argv += ("--batch-size", "4", "--seq-len", "2048")
    terms = _named_terms(_explain(*argv))
    assert {"norms", "norm casts", "attention", "mlp"} <= set(terms)
    stack, n = _stack("llama-3.2-1b"), numerics("amp-bf16")
    expected = saved_per_token(stack, n, eager=False, context=2048, caching=True)
    assert sum(terms.values()) == expected
    # the training forward's KV cache keeps the fp32 rotary keys: 4 bytes × kv width
    assert terms["training KV cache's fp32 rotary keys"] == 4 * stack.kv_width
    # without the cache the term is gone from the formula
    assert "rotary keys" not in " ".join(_named_terms(_explain(*argv, "--use-cache", "false")))


def test_each_projection_reading_a_norm_casts_its_output_under_autocast_only() -> None:
    llama = _stack("llama-3.2-1b")
    # q, k, v and gate, up read two norms: three copies beyond one per norm, 2 bytes each
    assert norm_casts_per_token(llama, numerics("amp-bf16")) == 3 * 2 * llama.hidden
    assert norm_casts_per_token(llama, numerics("bf16")) == 0
    assert norm_casts_per_token(llama, numerics("fp32")) == 0
    fused = attrs.evolve(llama, fused_qkv=True, fused_gate_up=True)
    assert norm_casts_per_token(fused, numerics("amp-bf16")) == 0


def test_the_training_cache_adds_fp32_keys_only_when_the_rotation_upcasts() -> None:
    llama, amp = _stack("llama-3.2-1b"), numerics("amp-bf16")
    assert llama.rope == "upcast"
    assert cached_keys_per_token(llama, amp) == 4 * llama.kv_width
    assert cached_keys_per_token(llama, numerics("bf16")) == 0
    assert cached_keys_per_token(attrs.evolve(llama, rope="kept"), amp) == 0  # OLMo, Cohere
    assert cached_keys_per_token(attrs.evolve(llama, rope=""), amp) == 0  # learned positions


def test_grouped_heads_are_saved_at_their_width_unless_a_sliding_window_needs_a_mask() -> None:
    n = numerics("bf16")
    mistral = _stack("mistral-7b-v0.1", "bf16", 8192)
    q, kv = mistral.q_width, mistral.kv_width
    assert kv < q and min(mistral.cache_windows) == 4096
    # within the window: no mask, q, K, V and the output
    assert fused_attention_per_token(mistral, n, 4096) == 2 * (2 * q + 2 * kv)
    # beyond it: the additive mask row (context × 2 bytes) and K, V expanded to q's width
    assert fused_attention_per_token(mistral, n, 8192) == 2 * (2 * q + 2 * kv) + 2 * 8192 + 4 * q


@pytest.mark.parametrize("model", ["llama-3.2-1b", "gpt2", "bert-base-uncased"])
def test_terms_are_the_saved_bytes(model: str) -> None:
    stack, n = _stack(model), numerics("amp-fp16")
    terms = saved_terms_per_token(stack, n, eager=False, context=512)
    assert sum(terms.values()) == saved_per_token(stack, n, eager=False, context=512)
    assert all(value > 0 for value in terms.values())


def test_a_bert_style_config_without_a_cache_is_an_encoder_with_eager_relative_bias() -> None:
    """MPNet's config names neither ``is_decoder`` nor token types: read as a decoder, it was
    charged a vocabulary's logits and a KV cache (+40% on the oracle)."""
    from torchward.estimator.paramcount import infer_kind

    mpnet = {"vocab_size": 30527, "hidden_size": 768, "num_attention_heads": 12}
    mpnet.update(attention_probs_dropout_prob=0.1, relative_attention_num_buckets=32)
    assert infer_kind(mpnet) == "encoder"
    assert infer_kind(dict(mpnet, use_cache=True)) == "decoder"


def test_t5s_own_loss_keeps_the_fp32_copy_and_a_16_bit_log_softmax() -> None:
    """t5-small under autocast at the loss backward: 2 + 4 + 2 + 4 bytes per logit, not the
    2 + 4 + 8 of transformers' upcasting causal-LM loss."""
    from torchward.estimator.costmodel import _training_activations
    from torchward.estimator.precision import numerics

    config = RunConfig(
        model=Field("t5-small", "--model"),
        mode=Field("train", "--mode"),
        dtype=Field("amp-bf16", "--dtype"),
        batch_size=Field(2, "--batch-size"),
        seq_len=Field(128, "--seq-len"),
    )
    r = resolve(config)
    assert r.shape.own_loss
    saved, upcast, backward = _training_activations(r, numerics("amp-bf16"), 2)
    logits = r.shape.vocab * 2 * 128
    assert upcast == 0 and backward == 4 * logits
    plain = attrs.evolve(r, shape=attrs.evolve(r.shape, own_loss=False))
    saved_hf, upcast_hf, backward_hf = _training_activations(plain, numerics("amp-bf16"), 2)
    assert saved - saved_hf == 2 * logits and backward_hf == 8 * logits and upcast_hf == 4 * logits


def test_eager_inference_peaks_at_the_scores_or_the_mlp_never_both() -> None:
    from torchward.estimator.activations import (
        attention_live_per_token,
        live_per_token,
        scores_per_token,
    )

    stack, n = _stack("bert-base-uncased", "bf16", 512), numerics("bf16")
    scores = scores_per_token(stack, n, 512, training=False)
    at_attention = attention_live_per_token(stack, n) + scores
    assert at_attention > live_per_token(stack, n)  # at 512 tokens the scores dominate
    assert at_attention < live_per_token(stack, n) + scores
