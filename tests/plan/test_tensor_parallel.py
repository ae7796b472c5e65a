"""Tensor parallelism in the estimator (estimator/tensor_parallel.py) and in the planner.

The expected bytes are derived here from the checkpoint's config.json fields (Llama 2 7B:
no biases, untied head, RMSNorm weights only), not read back from the code under test."""

from __future__ import annotations

import pytest
from torchward.estimator.estimate import estimate, estimate_resolved
from torchward.estimator.hardware import lookup_gpu
from torchward.estimator.planning.prices import bundled_offers
from torchward.estimator.planning.search import Request, config_of, search
from torchward.estimator.planning.steptime import step_time
from torchward.estimator.planning.variants import global_batch, tensor_parallel_degrees
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig
from torchward.estimator.tensor_parallel import TensorParallelError, degree, why_not

LLAMA = "meta-llama/Llama-2-7b-hf"


def _config(**values) -> RunConfig:
    return RunConfig(**{k: Field(v, "test") for k, v in values.items()})


def _train(t: int, **extra) -> RunConfig:
    values = dict(
        model=LLAMA,
        mode="train",
        batch_size=2,
        seq_len=1024,
        dtype="bf16",
        optimizer="adamw",
        gpus=t,
        tensor_parallel=t,
    )
    return _config(**{**values, **extra})


def _llama_counts(t: int) -> tuple[int, int]:
    """(all parameters, parameters one GPU of a degree-``t`` group holds), from config.json."""
    c = resolve(_train(1)).arch.config
    h, layers, inter, vocab = (
        c["hidden_size"],
        c["num_hidden_layers"],
        c["intermediate_size"],
        c["vocab_size"],
    )
    q = h  # num_attention_heads × head_dim
    kv = c["num_key_value_heads"] * (h // c["num_attention_heads"])
    split = layers * (2 * h * q + 2 * h * kv + 3 * h * inter)  # q, o, k, v; gate, up, down
    whole = 2 * vocab * h + (2 * layers + 1) * h  # embeddings, untied head, RMSNorm weights
    return split + whole, split // t + whole


def _term(e, phase: str, term: str) -> float:
    return next(p for p in e.phases if p.name == phase).parts[term]


@pytest.mark.parametrize("t", [2, 4, 8])
def test_split_layers_weights_gradients_and_state_divide_by_the_degree(t):
    full, one_gpu = _llama_counts(t)
    base = estimate(_train(1), None)
    split = estimate(_train(t), None)
    assert resolve(_train(1)).shape.params == full  # the derivation matches the catalog
    for term in ("weights", "gradients", "optimizer_state"):
        per_param = _term(base, "optimizer step", term) / full
        assert _term(split, "optimizer step", term) == pytest.approx(per_param * one_gpu)
    assert one_gpu > full / t  # the embeddings, head and norms stay whole


def test_data_parallel_sharding_divides_over_the_replicas_only():
    _, one_gpu = _llama_counts(2)
    fsdp = estimate(_train(2, gpus=8, sharding="fsdp"), None)  # 4 replicas of 2 GPUs
    alone = estimate(_train(2), None)
    per_param = _term(alone, "optimizer step", "optimizer_state") / one_gpu
    assert _term(fsdp, "optimizer step", "optimizer_state") == pytest.approx(
        per_param * one_gpu / 4
    )


def test_activations_split_inside_the_blocks_and_stay_whole_outside():
    acts = {t: _term(estimate(_train(t), None), "backward start", "activations") for t in (1, 2, 4)}
    # activations = whole + split / t: three degrees pin both parts
    split = 2 * (acts[1] - acts[2])
    whole = acts[1] - split
    assert acts[2] - acts[4] == pytest.approx(split / 4)
    c = resolve(_train(1)).arch.config
    tokens = 2 * 1024
    # whole on every GPU: the logits (16-bit) and their fp32 log-softmax, and each layer's
    # input (the residual stream, 16-bit) that the split blocks read
    logits = (2 + 4) * c["vocab_size"] * tokens
    inputs = c["num_hidden_layers"] * 2 * c["hidden_size"] * tokens
    assert whole >= logits + inputs
    # split: at least the MLP's intermediates (gate and up outputs, 16-bit) of every layer
    assert split >= c["num_hidden_layers"] * 2 * 2 * c["intermediate_size"] * tokens


def test_the_kv_cache_divides_by_the_degree():
    def cache(t: int) -> float:
        job = _config(model=LLAMA, mode="generate", batch_size=4, seq_len=512, dtype="bf16")
        job = job.with_values("test", tensor_parallel=t, gpus=t, max_new_tokens=256)
        return _term(estimate(job, None), "decode", "kv_cache")

    assert cache(4) == pytest.approx(cache(1) / 4)


def test_degrees_a_model_cannot_take_are_refused():
    falcon = resolve(_config(model="tiiuae/falcon-7b", mode="train")).shape  # 71 heads, MQA
    assert "key/value heads" in why_not(falcon, 2) or "attention heads" in why_not(falcon, 2)
    llama = resolve(_train(1)).shape
    assert why_not(llama, 3) is not None and why_not(llama, 4) is None
    with pytest.raises(TensorParallelError):
        estimate(_train(3, gpus=3), None)
    with pytest.raises(TensorParallelError, match="multiple"):
        estimate(_train(4, gpus=6), None)


def test_degrees_are_planned_on_nvlink_nodes_only():
    r = resolve(_train(1))
    assert tensor_parallel_degrees(r, lookup_gpu("h100-sxm"), 8) == [2, 4, 8]
    assert tensor_parallel_degrees(r, lookup_gpu("a10g"), 8) == []  # PCIe
    assert tensor_parallel_degrees(r, lookup_gpu("h100-sxm"), 1) == []


def test_step_time_adds_the_all_reduces_of_every_layer():
    gpu = lookup_gpu("h100-sxm")
    c = resolve(_train(1)).arch.config
    one = step_time(resolve(_train(1, gpus=1)), gpu, per_node=1, nodes=1)
    four = step_time(resolve(_train(4)), gpu, per_node=4, nodes=1)
    # 2 forward + 2 backward all-reduces of batch × seq × hidden (bf16) per layer, a ring over
    # 4 GPUs sending 2·3/4 of it each, over NVLink 4 (450 GB/s one way)
    per = 2 * 3 / 4 * 2 * 1024 * c["hidden_size"] * 2
    assert four.tensor_parallel_s == pytest.approx(4 * c["num_hidden_layers"] * per / 450e9)
    assert four.seconds == pytest.approx(four.compute_s + four.tensor_parallel_s)
    # each GPU computes a quarter of the layers, all of the (replicated) LM head
    assert one.compute_s / 4 < four.compute_s < one.compute_s / 3
    assert four.tokens == one.tokens  # one replica: the same samples per step
    checkpointed = step_time(resolve(_train(4, checkpointing=True)), gpu, per_node=4, nodes=1)
    assert checkpointed.tensor_parallel_s == pytest.approx(four.tensor_parallel_s * 6 / 4)


def test_the_planner_offers_tensor_parallel_plans_the_estimator_sizes_alike():
    base = _config(model="meta-llama/Llama-2-70b-hf", mode="inference", batch_size=1, seq_len=4096)
    base = base.with_values("test", dtype="bf16")
    plans = search(resolve(base), bundled_offers(), Request(max_gpus=8))
    split = [p for p in plans if p.parallelism.tensor_parallel > 1]
    assert split, "a 70B model in bf16 fits no single GPU: only tensor-parallel plans can"
    for plan in split:
        again = estimate(config_of(base, plan), plan.offer.instance.gpu)
        assert again.verdict == "fits" and again.peak == plan.estimate.peak
        assert plan.offer.instance.count % plan.parallelism.tensor_parallel == 0


def test_a_degree_is_kept_only_when_it_needs_fewer_remedies():
    # Llama 2 13B, 4096 tokens, 8 × A100 40GB: FSDP fits only with gradient checkpointing;
    # tensor parallel 8 fits without it, so both are offered (the cost ranks them)
    base = _train(1, gpus=8, batch_size=1, seq_len=4096)
    base = base.with_values("test", model="meta-llama/Llama-2-13b-hf", gpus=8)
    offers = [o for o in bundled_offers() if o.instance.name == "p4d.24xlarge"]
    plans = search(resolve(base), offers, Request(max_gpus=8))

    def remedies(plan) -> list[str]:  # what the plan gives up, not how it splits the batch
        return [t for t in plan.rung.titles if "(global batch" not in t]

    by_degree = {p.parallelism.tensor_parallel: p for p in plans}
    assert sorted(by_degree) == [1, 8]
    assert remedies(by_degree[1]) == ["gradient checkpointing"]
    assert remedies(by_degree[8]) == []
    for plan in plans:
        gpu = plan.offer.instance.gpu
        assert estimate_resolved(resolve(config_of(base, plan)), gpu).verdict == "fits"


def test_plans_of_a_tensor_parallel_job_keep_its_global_batch():
    # the job as given: 8 GPUs in 4 pairs, 2 samples each → 8 samples per step
    base = _train(2, gpus=8, batch_size=2, seq_len=1024)
    r = resolve(base)
    assert global_batch(r) == 8
    offers = [o for o in bundled_offers() if o.instance.count == 8]
    plans = search(r, offers, Request(max_gpus=8))
    assert plans
    for plan in plans:
        changed = resolve(config_of(base, plan))
        assert degree(changed.config) == plan.parallelism.tensor_parallel  # 1 resets it
        assert global_batch(changed) == 8, (plan.offer.instance.name, plan.changes)
