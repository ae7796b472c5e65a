"""Gemma 2 / 3 training: what the fixtures' op-by-op lists showed and the terms now count.

``bench/oracle_breakdown.py gemma-2-2b --dtype bf16`` (b1 × s512, start of the backward)
lists per token per layer: four RMSNorms saving their fp32 input and fp32 normalised tensor
(Gemma's ``× (1 + weight)`` is in fp32) and two 16-bit outputs (the sandwich norms feed the
residual add, which saves nothing): 36·h; eager attention's fp32 softmax, its 16-bit cast and
the soft-cap's tanh output: 8 bytes per score element; ``repeat_kv``'s expanded K/V and,
apart from them, the training cache's own K and V. ``gemma-3-1b`` (one KV head) shows no
expanded copy: its ``repeat_kv`` is a view. gemma2-2b-train-bf16-b2-s2048 was −7.6%.
"""

from __future__ import annotations

from torchward.estimator.activations import (
    cached_keys_per_token,
    expands_kv,
    fused_attention_per_token,
    saved_terms_per_token,
)
from torchward.estimator.precision import numerics
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig


def _stack(model: str, dtype: str = "bf16"):
    config = RunConfig(
        model=Field(model, "--model"),
        mode=Field("train", "--mode"),
        dtype=Field(dtype, "--dtype"),
        batch_size=Field(2, "--batch-size"),
        seq_len=Field(2048, "--seq-len"),
    )
    return resolve(config).shape.stacks[0]


def test_gemma2_norms_save_36_h_per_layer_in_pure_bf16() -> None:
    stack = _stack("gemma-2-2b")
    terms = saved_terms_per_token(stack, numerics("bf16"), eager=True, context=512)
    assert terms["norms"] == 36 * stack.hidden


def test_soft_capped_scores_keep_tanh_output_beside_the_softmax_and_its_cast() -> None:
    stack, n = _stack("gemma-2-2b"), numerics("bf16")
    terms = saved_terms_per_token(stack, n, eager=True, context=512)
    # q, expanded k and v, merged heads (4·a·q) + 8 bytes per score element
    assert terms["attention"] == 4 * 2 * stack.q_width + stack.heads * 512 * (4 + 2 + 2)


def test_eager_grouped_attention_leaves_the_cache_its_own_keys_and_values() -> None:
    stack, n = _stack("gemma-2-2b"), numerics("bf16")
    assert 1 < stack.kv_heads < stack.heads
    assert cached_keys_per_token(stack, n, eager=True) == 2 * 2 * stack.kv_width
    assert cached_keys_per_token(stack, n, eager=False) == 0


def test_one_kv_head_is_not_expanded_beside_a_masked_kernel() -> None:
    stack, n = _stack("gemma-3-1b"), numerics("bf16")
    assert stack.kv_heads == 1 and not expands_kv(stack)
    # q, K, V, output and the additive mask of a sliding layer; no q-wide K/V copies
    expected = 2 * (2 * stack.q_width + 2 * stack.kv_width) + 2 * 2048
    assert fused_attention_per_token(stack, n, 2048) == expected


def test_llama_norms_are_unchanged() -> None:
    stack = _stack("llama-3.2-1b")
    assert not stack.unit_offset_norm and stack.post_norms == 0
