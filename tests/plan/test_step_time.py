"""The roofline step time against published training throughputs, and its parts.

tests/plan/data/published_throughputs.json cites each figure; the model must come within
30% of every one at its assumed MFU. Catalog models go through the planner's own path
(:func:`step_time` of a resolved job on one GPU: the compute part, since these runs
overlap their data-parallel communication); the others through :func:`flops_per_token`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torchward.estimator.hardware import lookup_gpu
from torchward.estimator.planning import hardware_extra
from torchward.estimator.planning.steptime import (
    ASSUMED_MFU,
    flops_per_token,
    peak_tflops,
    step_time,
    transformer_size,
)
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig

DATA = json.loads((Path(__file__).parent / "data" / "published_throughputs.json").read_text())
CASES = DATA["throughputs"]


def _job(model: str, seq: int, checkpointing: bool, **extra) -> RunConfig:
    values = {
        "model": model,
        "mode": "train",
        "batch_size": 1,
        "seq_len": seq,
        "dtype": "amp-bf16",
        "optimizer": "adamw",
        "checkpointing": checkpointing,
        **extra,
    }
    return RunConfig(**{k: Field(v, "test") for k, v in values.items()})


def _modelled(case: dict) -> float:
    gpu = lookup_gpu(case["gpu"])
    peak = peak_tflops(gpu, "amp-bf16")
    if case["kind"] == "tflops_per_gpu":
        return peak * ASSUMED_MFU
    if "model" in case:
        r = resolve(_job(case["model"], case["seq_len"], case["checkpointing"]))
        step = step_time(r, gpu, per_node=1, nodes=1)
        return step.tokens / step.seconds
    flops = flops_per_token(
        case["params"],
        case["layers"],
        case["hidden"],
        case["seq_len"],
        checkpointing=case["checkpointing"],
    )
    return peak * 1e12 * ASSUMED_MFU / flops


def test_at_least_five_published_figures_each_with_a_source():
    assert len(CASES) >= 5
    for case in CASES:
        assert case["source"] and case["published"] > 0 and case["derivation"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_modelled_throughput_within_30_percent_of_published(case):
    ratio = _modelled(case) / case["published"]
    assert 0.7 <= ratio <= 1.3, f"{case['name']}: modelled / published = {ratio:.2f}"


def test_checkpointing_adds_one_forward_and_lora_drops_weight_gradients():
    n, layers, hidden, seq = 1e9, 24, 2048, 1024
    plain = flops_per_token(n, layers, hidden, seq)
    assert plain == 6 * n + 12 * layers * hidden * seq
    assert flops_per_token(n, layers, hidden, seq, checkpointing=True) - plain == pytest.approx(
        2 * n + 4 * layers * hidden * seq
    )
    assert plain - flops_per_token(n, layers, hidden, seq, lora=True) == pytest.approx(2 * n)


def _llama(**extra):
    return resolve(_job("meta-llama/Llama-2-7b-hf", 2048, False, **extra))


def test_ddp_all_reduce_moves_twice_the_gradients_over_the_gpu_link():
    gpu = lookup_gpu("a100-sxm4-80gb")
    r = _llama(gpus=8, sharding="ddp")
    step = step_time(r, gpu, per_node=8, nodes=1)
    params = step_time(_llama(), gpu, per_node=1, nodes=1)
    assert params.comm_s == 0
    link = hardware_extra.link_gb_per_s("a100-sxm4-80gb") * 1e9
    fp32_gradients = transformer_size(r)[0] * 4  # amp keeps fp32 weights, so fp32 gradients
    assert step.comm_s == pytest.approx(2 * 7 / 8 * fp32_gradients / link, rel=1e-9)


def test_fsdp_communicates_more_than_ddp_and_nodes_use_the_slower_network():
    gpu = lookup_gpu("a100-sxm4-80gb")
    ddp = step_time(_llama(gpus=8, sharding="ddp"), gpu, per_node=8, nodes=1)
    fsdp = step_time(_llama(gpus=8, sharding="fsdp"), gpu, per_node=8, nodes=1)
    two_nodes = step_time(_llama(gpus=16, sharding="ddp"), gpu, per_node=8, nodes=2)
    assert fsdp.comm_s > ddp.comm_s
    assert two_nodes.comm_s > 10 * ddp.comm_s  # 100 Gbit/s shared by 8 GPUs vs NVLink
    assert two_nodes.seconds == pytest.approx(max(two_nodes.compute_s, two_nodes.comm_s))


def test_no_step_time_without_a_peak_figure_or_a_transformer():
    assert peak_tflops(lookup_gpu("a10g"), "amp-bf16") is None
    assert step_time(_llama(), lookup_gpu("a10g"), per_node=1, nodes=1) is None
    cnn = resolve(RunConfig(model=Field("resnet50", "test"), mode=Field("train", "test")))
    assert step_time(cnn, lookup_gpu("a100-sxm4-80gb"), per_node=1, nodes=1) is None
