"""Every plan ``plan`` says fits is one ``estimate`` says fits: over a grid of models × GPUs,
the job each plan describes (the user's configuration with the plan's changes, as the
``estimate`` flags would give it) is sized again from scratch by :func:`estimate`."""

from __future__ import annotations

import pytest
from torchward.estimator.estimate import estimate
from torchward.estimator.planning.prices import bundled_offers
from torchward.estimator.planning.search import Request, config_of, search
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig

JOBS = {
    "gpt2 train": {"model": "gpt2", "mode": "train", "batch_size": 16, "seq_len": 1024},
    "llama-2-7b fine-tune": {
        "model": "meta-llama/Llama-2-7b-hf",
        "mode": "train",
        "batch_size": 8,
        "seq_len": 2048,
        "pretrained": True,
        "eval_batch_size": 32,
    },
    "llama-2-13b train, assumed inputs": {"model": "meta-llama/Llama-2-13b-hf", "mode": "train"},
    "bert-base fp32 train": {
        "model": "bert-base-uncased",
        "mode": "train",
        "batch_size": 64,
        "seq_len": 512,
        "dtype": "fp32",
    },
    "vit-base train": {"model": "google/vit-base-patch16-224", "mode": "train", "batch_size": 128},
    "mistral-7b generate": {"model": "mistralai/Mistral-7B-v0.1", "mode": "generate"},
    "7B by count, 2 GPUs": {"params": "7B", "mode": "train", "gpus": 2, "batch_size": 4},
    # tensor-parallel plans: a 70B forward fits no single GPU; 13B at 4096 tokens on 8 GPUs
    # needs gradient checkpointing unless its layers are split
    "llama-2-70b inference bf16": {
        "model": "meta-llama/Llama-2-70b-hf",
        "mode": "inference",
        "batch_size": 1,
        "seq_len": 4096,
        "dtype": "bf16",
    },
    "llama-2-13b train 4096, 8 GPUs": {
        "model": "meta-llama/Llama-2-13b-hf",
        "mode": "train",
        "batch_size": 1,
        "seq_len": 4096,
        "dtype": "bf16",
        "gpus": 8,
    },
}
TENSOR_PARALLEL_JOBS = {"llama-2-70b inference bf16", "llama-2-13b train 4096, 8 GPUs"}
GPUS = sorted({o.instance.gpu.key for o in bundled_offers()})


def _config(values: dict) -> RunConfig:
    return RunConfig(**{k: Field(v, "test") for k, v in values.items()})


@pytest.mark.parametrize("job", sorted(JOBS))
def test_plan_and_estimate_never_disagree(job):
    base = _config(JOBS[job])
    r = resolve(base)
    checked = split = 0
    for gpu_key in GPUS:
        offers = [o for o in bundled_offers() if o.instance.gpu.key == gpu_key]
        for plan in search(r, offers, Request(max_gpus=16, nodes=2)):
            gpu = plan.offer.instance.gpu
            again = estimate(config_of(base, plan), gpu)
            assert again.verdict == "fits", (job, plan.offer.instance.name, plan.changes)
            assert again.peak == plan.estimate.peak
            checked += 1
            split += plan.parallelism.tensor_parallel > 1
    if JOBS[job]["mode"] == "train":
        assert checked, f"{job}: no plan at all to check"
    if job in TENSOR_PARALLEL_JOBS:
        assert split, f"{job}: no tensor-parallel plan to check"
