"""The planner's search: what it keeps, what it gives up, and what it never does."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchward.estimator.estimate import estimate_resolved
from torchward.estimator.planning.prices import bundled_offers
from torchward.estimator.planning.search import Request, search
from torchward.estimator.planning.variants import global_batch
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig

from torchward.commands.estimate import read_script_like_check

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _job(**values):
    values = {"mode": "train", **values}
    return resolve(RunConfig(**{k: Field(v, "test") for k, v in values.items()}))


def _offers(*names):
    return [o for o in bundled_offers() if not names or o.instance.name in names]


def test_plans_are_ranked_cheapest_first_and_every_one_fits_with_its_headroom():
    plans = search(_job(model="gpt2", batch_size=8, seq_len=1024), _offers())
    assert len(plans) >= 3
    costs = [p.usd_per_1k_steps for p in plans if p.usd_per_1k_steps is not None]
    assert costs == sorted(costs)
    for p in plans:
        gpu = p.offer.instance.gpu
        assert p.estimate.verdict == "fits"
        assert p.estimate.peak <= gpu.usable_bytes * 0.95


def test_a_job_that_fits_as_it_is_gets_no_remedy():
    plans = search(_job(model="gpt2", batch_size=4, seq_len=512), _offers("gpu_1x_h100_sxm5"))
    assert [(p.parallelism.name, p.rung.titles) for p in plans] == [("single", ())]


def test_every_plan_keeps_the_scripts_global_batch():
    r = _job(model="meta-llama/Llama-2-7b-hf", batch_size=8, seq_len=2048, gpus=2, accumulation=2)
    assert global_batch(r) == 32
    plans = search(r, _offers(), Request(max_gpus=16, nodes=2))
    assert plans
    for p in plans:
        c = p.changes
        assert c["batch_size"] * c["accumulation"] * p.gpus == 32


def test_lora_only_for_a_script_that_loads_trained_weights_and_only_where_full_does_not_fit():
    job = {"model": "meta-llama/Llama-2-7b-hf", "batch_size": 8, "seq_len": 2048}
    unknown = search(_job(**job), _offers())
    assert all(p.rung.family == "full" for p in unknown)
    finetune = search(_job(**job, pretrained=True), _offers())
    assert any(p.rung.family in ("lora", "qlora") for p in finetune)
    by_offer = {}
    for p in finetune:
        by_offer.setdefault((p.offer.instance.name, p.nodes), []).append(p.rung.family)
    assert all(len(families) == 1 for families in by_offer.values())  # never both


def test_no_plan_where_the_estimator_gives_no_verdict():
    # examples/good_train.py trains a module it defines: its activations are not modelled
    config, _notes = read_script_like_check(str(EXAMPLES / "good_train.py"))
    r = resolve(config)
    gpu = bundled_offers()[0].instance.gpu
    assert estimate_resolved(r, gpu).verdict == "unknown"
    assert search(r, _offers()) == []


@pytest.mark.parametrize("max_gpus", [1, 2, 4])
def test_max_gpus_bounds_every_plan(max_gpus):
    r = _job(model="meta-llama/Llama-2-13b-hf", batch_size=8, seq_len=2048)
    plans = search(r, _offers(), Request(max_gpus=max_gpus, nodes=2))
    assert all(p.gpus <= max_gpus for p in plans)


def test_pruning_never_loses_a_plan_an_exhaustive_walk_finds():
    # the search rules a rung out with one estimate of its leanest parallelism; walking every
    # (rung, parallelism) pair instead must find exactly the same plans
    from torchward.estimator.planning import search as module

    def exhaustive(ladder, options, gpu, headroom, sized_on, host_ok):
        for index, rung in enumerate(ladder):
            for parallel in options:
                changes = {**dict(rung.changes), **dict(parallel.changes)}
                est = sized_on(changes, gpu)
                if module._fits(est, gpu, headroom) and host_ok(changes):
                    return index, rung, parallel, est
        return None

    r = _job(model="meta-llama/Llama-2-7b-hf", batch_size=8, seq_len=2048, pretrained=True)
    request = Request(max_gpus=16, nodes=2)

    def found():
        plans = search(r, _offers(), request)
        return sorted(
            (p.offer.instance.name, p.nodes, p.parallelism.name, p.rung.titles) for p in plans
        )

    pruned = found()
    original = module._first_fit
    module._first_fit = exhaustive
    try:
        assert found() == pruned
    finally:
        module._first_fit = original


def _on_host_ram(gib):
    import attrs

    (a6000,) = _offers("gpu_1x_a6000")
    return [attrs.evolve(a6000, host_memory_gib=gib)]


def test_an_offload_plan_must_fit_the_instances_host_ram():
    # Llama 2 7B on one 48 GB card: only with its optimizer and parameters in CPU memory
    r = _job(model="meta-llama/Llama-2-7b-hf", batch_size=1, seq_len=1024)
    (unknown,) = search(r, _on_host_ram(None))
    assert unknown.parallelism.name == "zero-3-offload-params" and unknown.rung.titles == ()
    # amp: fp32 weights (4 bytes) and Adam moments (8) of 6.7 B parameters
    assert unknown.host_bytes > 6.7e9 * 12 and not unknown.host_checked
    just = unknown.host_bytes / 2**30 / (1 - 0.05)
    (roomy,) = search(r, _on_host_ram(just * 1.001))
    assert roomy.parallelism.name == "zero-3-offload-params" and roomy.host_checked
    assert roomy.host_bytes == unknown.host_bytes
    short = search(r, _on_host_ram(just * 0.999))
    # too little host RAM: the parameters stay on the GPU, so the plan needs remedies
    assert all(p.parallelism.name != "zero-3-offload-params" or p.rung.titles for p in short)
    assert all(p.host_bytes is None or p.host_bytes <= just * 0.999 * 2**30 * 0.95 for p in short)


def test_plans_that_offload_nothing_need_no_host_ram():
    plans = search(_job(model="gpt2", batch_size=8, seq_len=1024), _on_host_ram(1))
    assert plans and all(p.host_bytes is None for p in plans if "offload" not in p.parallelism.name)
