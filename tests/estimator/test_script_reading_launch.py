"""Script reading: generation options, Accelerate, and the world size a launch sets."""

from __future__ import annotations

import json

from torchward.analysis.runconfig import read_script, read_source
from torchward.estimator.estimate import estimate
from torchward.estimator.hardware import lookup_hardware
from torchward.estimator.runconfig import RunConfig


def _values(source: str, path: str = "train.py") -> tuple[dict, list[str]]:
    config, notes = read_source(source, path)
    return {name: field.value for name, field in config.fields()}, notes


def test_generation_config_beams_and_use_cache():
    values, _ = _values(
        "import torch\nfrom transformers import AutoModelForCausalLM, GenerationConfig\n"
        "m = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "cfg = GenerationConfig(num_beams=4, max_new_tokens=64)\n"
        "with torch.no_grad():\n    m.generate(ids, generation_config=cfg, use_cache=False)\n"
    )
    assert (
        values["mode"] == "generate" and values["num_beams"] == 4 and values["max_new_tokens"] == 64
    )
    assert values["use_cache"] is False


def test_generation_without_a_cache_recomputes_instead_of_caching():
    base = RunConfig().with_values(
        "test",
        model="llama-2-7b",
        mode="generate",
        batch_size=4,
        seq_len=1024,
        max_new_tokens=1024,
        dtype="bf16",
    )
    gpu = lookup_hardware("a100-80gb").gpu
    cached = estimate(base, gpu)
    uncached = estimate(base.with_values("test", use_cache=False), gpu)
    assert cached.terms["kv_cache"] > 0 and uncached.terms["kv_cache"] == 0
    assert uncached.peak_phase.name == "decode (no cache)"
    assert (
        estimate(base.with_values("test", num_beams=4), gpu).terms["kv_cache"]
        == 4 * cached.terms["kv_cache"]
    )


def test_accelerator_mixed_precision_and_accumulation():
    values, _ = _values(
        "from accelerate import Accelerator\n"
        "accelerator = Accelerator(mixed_precision='fp16', gradient_accumulation_steps=8)\n"
        "accelerator.backward(loss)\n"
    )
    assert (
        values["dtype"] == "amp-fp16" and values["accumulation"] == 8 and values["mode"] == "train"
    )


def test_world_size_from_process_group_spawn_and_lightning_nodes():
    assert (
        _values(
            "import torch.distributed as dist\ndist.init_process_group('nccl', world_size=8)\n"
        )[0]["gpus"]
        == 8
    )
    assert _values("import torch.multiprocessing as mp\nmp.spawn(main, nprocs=4)\n")[0]["gpus"] == 4
    values, _ = _values(
        "import lightning as L\nt = L.Trainer(devices=4, num_nodes=2, strategy='fsdp')\n"
    )
    assert values["gpus"] == 8 and values["sharding"] == "fsdp"


def test_world_size_env_reads_are_a_named_signal_never_a_number():
    for read in (
        "os.environ.get('WORLD_SIZE', 1)",
        "os.getenv('WORLD_SIZE', '1')",
        "os.environ['WORLD_SIZE']",
    ):
        values, notes = _values(f"import os\nworld = int({read})\nloss.backward()\n")
        assert "gpus" not in values
        assert any(n.startswith("train.py:2: the script reads WORLD_SIZE") for n in notes), notes
    values, notes = _values(
        "import os\nworld = int(os.environ['WORLD_SIZE'])\n"
        "import torch.distributed as dist\ndist.init_process_group(world_size=2)\n"
    )
    assert values["gpus"] == 2 and not notes


def test_a_launcher_comment_is_not_a_world_size():
    values, notes = _values(
        '"""Run: torchrun --nproc_per_node=8 train.py"""\n# torchrun --nproc_per_node 8\n'
        "loss.backward()\n"
    )
    assert "gpus" not in values and not notes


def test_deepspeed_train_batch_size_names_the_world_size(tmp_path):
    (tmp_path / "ds.json").write_text(
        json.dumps(
            {
                "train_batch_size": 64,
                "train_micro_batch_size_per_gpu": 2,
                "gradient_accumulation_steps": 4,
                "zero_optimization": {"stage": 3},
            }
        )
    )
    (tmp_path / "train.py").write_text(
        "import deepspeed\nengine, *_ = deepspeed.initialize(model=m, config='ds.json')\n"
    )
    config, _ = read_script(str(tmp_path / "train.py"))
    assert config.gpus.value == 8 and config.gpus.source.endswith("ds.json (train_batch_size)")
    assert config.sharding.value == "zero-3" and config.batch_size.value == 2
