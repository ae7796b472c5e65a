"""The cost model: the peak is a maximum over phases, terms move the way PyTorch moves them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from torchward.estimator.estimate import estimate
from torchward.estimator.hardware import lookup_gpu
from torchward.estimator.runconfig import RunConfig

GIB = 2**30
T4_RUNS = Path("/work/shared/calibration/t4_measured_peaks.json")


def _est(gpu="a100-80gb", **values):
    return estimate(RunConfig().with_values("test", **values), lookup_gpu(gpu) if gpu else None)


def _phase(e, name):
    return next(p for p in e.phases if p.name == name).total


def test_training_peak_is_the_largest_phase_not_the_sum_of_terms():
    e = _est(
        model="llama-3-8b",
        mode="train",
        batch_size=1,
        seq_len=512,
        dtype="bf16",
        optimizer="adamw",
        attention="sdpa",
    )
    assert e.allocated == max(round(p.total) for p in e.phases)
    summed = sum(v for k, v in e.terms.items() if k not in ("cuda_context", "fragmentation"))
    assert summed == pytest.approx(e.allocated, rel=1e-6)
    assert e.peak_phase.name == "optimizer step"


def test_bf16_adamw_optimizer_step_is_about_five_times_the_bf16_weights():
    e = _est(
        model="llama-3-8b",
        mode="train",
        batch_size=1,
        seq_len=128,
        dtype="bf16",
        optimizer="adamw",
        attention="sdpa",
    )
    weights = e.terms["weights"]
    assert _phase(e, "optimizer step") == pytest.approx(5 * weights, rel=0.02)


def test_fused_adamw_removes_the_foreach_temporary():
    common = dict(
        model="llama-3-8b", mode="train", batch_size=1, seq_len=128, dtype="bf16", attention="sdpa"
    )
    foreach, fused = _est(optimizer="adamw", **common), _est(optimizer="adamw-fused", **common)
    assert _phase(foreach, "optimizer step") - _phase(fused, "optimizer step") == pytest.approx(
        foreach.terms["weights"], rel=0.01
    )


def test_activations_grow_with_batch_and_checkpointing_shrinks_them():
    common = dict(
        model="llama-2-7b",
        mode="train",
        seq_len=2048,
        dtype="bf16",
        optimizer="adamw",
        attention="sdpa",
    )
    one, four = _est(batch_size=1, **common), _est(batch_size=4, **common)
    assert _phase(four, "backward start") > _phase(one, "backward start")
    ckpt = _est(batch_size=4, checkpointing=True, **common)
    saved = lambda e: next(p for p in e.phases if p.name == "backward start").parts["activations"]  # noqa: E731
    assert saved(ckpt) < 0.35 * saved(four)


def test_eager_attention_charges_the_quadratic_scores_and_sdpa_does_not():
    common = dict(
        model="llama-2-7b",
        mode="train",
        batch_size=1,
        seq_len=4096,
        dtype="bf16",
        optimizer="adamw",
    )
    assert (
        _est(attention="eager", **common).allocated
        > _est(attention="sdpa", **common).allocated + 8 * GIB
    )


def test_generation_peak_is_the_prefill_for_a_long_prompt():
    e = _est(
        model="llama-3-8b",
        mode="generate",
        batch_size=16,
        seq_len=8192 - 256,
        max_new_tokens=256,
        dtype="bf16",
        attention="sdpa",
        gpu="h100",
    )
    assert e.peak_phase.name == "prefill"
    assert 38 * GIB < _phase(e, "prefill") < 50 * GIB  # MEMORY-MODEL.md: ≈ 45 GiB
    assert 27 * GIB < _phase(e, "decode") < 35 * GIB  # ≈ 31 GiB with the full 16 GiB cache


def test_kv_cache_is_per_kv_head_so_gqa_caches_less():
    common = dict(
        mode="generate",
        batch_size=8,
        seq_len=4000,
        max_new_tokens=96,
        dtype="bf16",
        attention="sdpa",
    )
    mha = _est(model="llama-2-7b", **common).phases[-1].parts["kv_cache"]
    gqa = _est(model="mistral-7b", **common).phases[-1].parts["kv_cache"]
    assert mha == pytest.approx(4 * gqa, rel=0.01)  # 32 vs 8 KV heads


def test_zero3_divides_weights_gradients_and_state_by_the_world_size():
    common = dict(
        model="llama-2-13b",
        mode="train",
        batch_size=1,
        seq_len=512,
        dtype="bf16",
        optimizer="adamw",
        attention="sdpa",
    )
    one, eight = _est(**common), _est(sharding="zero-3", gpus=8, **common)
    # DeepSpeed keeps fp32 moments (8 bytes/param) where pure-bf16 torch.optim keeps 4
    assert eight.terms["optimizer_state"] == pytest.approx(
        one.terms["optimizer_state"] * 2 / 8, rel=0.01
    )
    assert eight.terms["weights"] < one.terms["weights"] / 4
    assert _phase(eight, "optimizer step") < _phase(one, "optimizer step") / 3


def test_lora_trains_a_small_fraction_and_qlora_quantises_the_base():
    common = dict(
        model="llama-2-7b",
        mode="train",
        batch_size=1,
        seq_len=512,
        dtype="bf16",
        optimizer="adamw",
        attention="sdpa",
    )
    full, lora = _est(**common), _est(lora_rank=16, **common)
    qlora = _est(lora_rank=16, quantize="4bit", **common)
    assert lora.terms["optimizer_state"] < full.terms["optimizer_state"] / 50
    assert qlora.terms["weights"] < lora.terms["weights"] / 3


def test_missing_inputs_are_named_and_widen_the_interval():
    known = _est(
        model="gpt2",
        mode="train",
        batch_size=8,
        seq_len=512,
        dtype="amp-bf16",
        optimizer="adamw",
        attention="sdpa",
    )
    unknown = estimate(RunConfig().with_values("test", model="gpt2"), lookup_gpu("a100-80gb"))
    assert {"batch_size", "seq_len", "dtype"} <= set(unknown.resolved.missing)
    assert unknown.confidence == "low" and known.confidence == "high"
    assert (unknown.high - unknown.low) > 3 * (known.high - known.low)


def test_verdicts_fits_tight_and_oom():
    assert (
        _est(
            model="gpt2",
            mode="inference",
            batch_size=1,
            seq_len=128,
            dtype="bf16",
            attention="sdpa",
        ).verdict
        == "fits"
    )
    assert (
        _est(
            model="llama-2-70b",
            mode="inference",
            batch_size=1,
            seq_len=128,
            dtype="bf16",
            attention="sdpa",
        ).verdict
        == "oom"
    )


def test_estimating_takes_milliseconds_and_is_deterministic():
    start = time.perf_counter()
    first = [
        _est(model="llama-3-8b", mode="train", batch_size=b, seq_len=1024).peak
        for b in range(1, 21)
    ]
    assert (time.perf_counter() - start) / 20 < 0.05
    assert first == [
        _est(model="llama-3-8b", mode="train", batch_size=b, seq_len=1024).peak
        for b in range(1, 21)
    ]


@pytest.mark.skipif(not T4_RUNS.exists(), reason="shared/calibration is not mounted")
def test_t4_measured_peaks_are_within_the_datasets_tolerance():
    data = json.loads(T4_RUNS.read_text())
    for run in data["runs"]:
        c = run["config"]
        values = dict(
            model=run["model"],
            mode="train",
            batch_size=c["batch_size"],
            dtype="amp-fp16",
            optimizer="adamw",
            attention="eager",
        )
        values.update({k: c[k] for k in ("seq_len", "image_size") if k in c})
        e = _est(gpu="t4", **values)
        error = (e.peak - run["measured_peak_bytes"]) / run["measured_peak_bytes"]
        assert abs(error) < data["tolerance"], (run["model"], c, error)
