"""Script reading: generation options, Accelerate, and the world size a launch sets."""

from __future__ import annotations

import json

from torchward.analysis.job.runconfig import read_script, read_source
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
    for read in ("os.environ['WORLD_SIZE']", "os.environ.get('WORLD_SIZE')"):
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


def _gpus(source: str):
    config, notes = read_source(source, "train.py")
    return config.gpus, notes


def test_a_world_size_getter_with_a_default_runs_one_process_on_a_plain_launch():
    # the getter's default is what ``python train.py`` sees: one process, said at low
    # confidence and naming the flag for a launcher's world size
    for read in ("os.environ.get('WORLD_SIZE', 1)", "os.getenv('WORLD_SIZE', '1')"):
        gpus, notes = _gpus(f"import os\nworld = int({read})\nloss.backward()\n")
        assert gpus is not None and (gpus.value, gpus.confidence) == (1, "low")
        assert gpus.source.startswith("train.py:2 ") and "--gpus" in gpus.source
        assert not any("reads WORLD_SIZE" in n for n in notes)


def test_membership_of_a_launcher_variable_is_false_on_a_plain_launch():
    # ``"WORLD_SIZE" in os.environ`` picks the single-process branch, so the world size
    # handed to the process group is the literal of the ``else``
    gpus, _ = _gpus(
        "import os\nimport torch.distributed as dist\n"
        "if 'WORLD_SIZE' in os.environ:\n    world = int(os.environ['WORLD_SIZE'])\n"
        "else:\n    world = 1\n"
        "dist.init_process_group('gloo', rank=0, world_size=world)\nloss.backward()\n"
    )
    assert gpus is not None and gpus.value == 1 and gpus.source == "train.py:7"
    # any other variable may be set in the user's shell: the branch stays undecided
    gpus, _ = _gpus(
        "import os\nimport torch.distributed as dist\n"
        "if 'MY_WORLD' in os.environ:\n    world = int(os.environ['MY_WORLD'])\n"
        "else:\n    world = 1\n"
        "dist.init_process_group('gloo', rank=0, world_size=world)\nloss.backward()\n"
    )
    assert gpus is None or gpus.value != 1 or gpus.source != "train.py:7"


def test_a_documented_torchrun_does_not_hide_the_plain_launch_it_skips():
    # the DDP set-up runs only when torchrun sets RANK; the docstring's command is how to
    # launch more, not what ``python train.py`` does
    gpus, _ = _gpus(
        '"""torchrun --standalone --nproc_per_node=8 train.py"""\n'
        "import os\nfrom torch.distributed import init_process_group\n"
        "ddp = int(os.environ.get('RANK', -1)) != -1\n"
        "if ddp:\n    init_process_group(backend='nccl')\n"
        "loss.backward()\noptimizer.step()\n"
    )
    assert gpus is not None and (gpus.value, gpus.confidence) == (1, "low")
    assert "torchrun" in gpus.source and "--gpus" in gpus.source


def test_sequences_returned_per_prompt_are_read_from_generate():
    values, _ = _values(
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "m = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "with torch.no_grad():\n"
        "    m.generate(ids, max_new_tokens=16, num_beams=3, num_return_sequences=3)\n"
    )
    assert values["num_return_sequences"] == 3 and values["num_beams"] == 3


def test_the_cache_switch_of_the_models_own_forward_and_config():
    forward = (
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "with torch.no_grad():\n    out = model(ids, use_cache=False)\n"
    )
    assert _values(forward)[0]["use_cache"] is False
    configured = (
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "model.config.use_cache = False\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "model(**batch).loss.backward()\nopt.step()\n"
    )
    values, _ = _values(configured)
    assert values["use_cache"] is False and values["mode"] == "train"
    loaded = "from transformers import AutoModelForCausalLM\n" + (
        "model = AutoModelForCausalLM.from_pretrained('gpt2', use_cache=False)\n"
    )
    assert _values(loaded)[0]["use_cache"] is False


def test_a_forwards_cache_switch_is_not_the_generation_jobs():
    # the scoring forward runs without a cache; ``generate`` keeps the one it always does
    values, _ = _values(
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "with torch.no_grad():\n    scores = model(ids, use_cache=False)\n"
        "    out = model.generate(ids, max_new_tokens=8)\n"
    )
    assert values["mode"] == "generate" and "use_cache" not in values
