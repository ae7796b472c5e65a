"""Mixture-of-experts cost (issue 12): every expert's weights resident, activations by the
top-k routing, read from the config's own fields — and the measured MoE fixtures.

The fixtures (``tests/calibration/fixtures/fake_cuda_peaks.json``: OLMoE, Qwen1.5-MoE,
Mixtral, Qwen3-MoE) run transformers' default ``grouped_mm`` experts on the fake device
(``tests/calibration/calib_harness.py: emulate_device_capability``); their families are held out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_calibration_accuracy import HELD_OUT_FAMILIES, comparison
from torchward.estimator.estimate import estimate
from torchward.estimator.runconfig import RunConfig

MOE_FAMILIES = {"olmoe", "qwen2-moe", "qwen3-moe", "mixtral"}


def _moe_config(tmp_path: Path, **changes) -> str:
    config = {
        "model_type": "olmoe",
        "hidden_size": 1024,
        "num_hidden_layers": 8,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "intermediate_size": 512,
        "vocab_size": 32000,
        "num_experts": 16,
        "num_experts_per_tok": 2,
    }
    config.update(changes)
    folder = tmp_path / ("_".join(f"{k}{v}" for k, v in changes.items()) or "base")
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config), "utf-8")
    return str(folder)


def _train(model: str):
    job = RunConfig().with_values(
        "test", model=model, mode="train", batch_size=8, seq_len=2048, dtype="bf16"
    )
    return estimate(job.with_values("test", optimizer="adamw", attention="sdpa"))


def test_moe_families_are_held_out_and_measured():
    assert MOE_FAMILIES <= HELD_OUT_FAMILIES
    from torchward.estimator.architecture import lookup_model

    rows = [r for r in comparison(held_out=True) if lookup_model(r["model"]).is_moe]
    assert {lookup_model(r["model"]).family for r in rows} == MOE_FAMILIES
    assert {r["mode"] for r in rows} == {"train", "inference", "generate"}
    for row in rows:
        assert -0.05 <= row["error"] <= 0.05, row


def test_all_experts_are_resident_and_activations_follow_top_k(tmp_path):
    base = _train(_moe_config(tmp_path))
    more_experts = _train(_moe_config(tmp_path, num_experts=64))
    more_active = _train(_moe_config(tmp_path, num_experts_per_tok=8))
    four = _train(_moe_config(tmp_path, num_experts_per_tok=4))
    weights = lambda e: max(p.parts["weights"] for p in e.phases)  # noqa: E731
    # every expert's weights (and their gradients and Adam state) are on the device
    assert weights(more_experts) > 3 * weights(base)
    assert weights(more_active) == weights(base)
    # activations are saved for the experts each token is routed to, not for all of them
    acts = lambda e: max(p.parts["activations"] for p in e.phases)  # noqa: E731
    # each routed copy of a token saves its expert's MLP: linear in top-k (2 → 8 is three
    # times 2 → 4), and 16 × 1024 tokens × 8 layers × 6 more copies is gigabytes
    assert acts(more_active) - acts(base) == pytest.approx(3 * (acts(four) - acts(base)))
    assert acts(more_active) - acts(base) > 16384 * 8 * 6 * 2 * 1024
    assert acts(more_experts) == pytest.approx(acts(base), rel=0.01)


def test_moe_intermediate_size_and_shared_experts_are_read_from_the_config(tmp_path):
    plain = _train(_moe_config(tmp_path))
    wider = _train(_moe_config(tmp_path, moe_intermediate_size=2048))
    assert wider.resolved.shape.params > plain.resolved.shape.params
    shared = _train(
        _moe_config(tmp_path, model_type="qwen2_moe", shared_expert_intermediate_size=4096)
    )
    assert shared.resolved.shape.stacks[0].moe["shared_intermediate"] == 4096
    assert shared.allocated > plain.allocated


def test_the_load_balancing_loss_keeps_every_layer_s_router_logits(tmp_path):
    plain = _train(_moe_config(tmp_path))
    aux = _train(_moe_config(tmp_path, output_router_logits=True))
    # 8 × 2048 tokens × 8 layers × 16 experts × (logits + their softmax) in bf16
    extra = 8 * 2048 * 8 * 16 * 2 * 2
    assert aux.allocated - plain.allocated == pytest.approx(extra, rel=0.01)
