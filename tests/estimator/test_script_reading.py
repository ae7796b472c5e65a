"""Reading a script's run configuration with `ast`: where real scripts keep their values."""

from __future__ import annotations

from pathlib import Path

from torchward.analysis.job.runconfig import read_script, read_source

SCRIPTS = Path(__file__).parent / "scripts"


def _values(config):
    return {name: field.value for name, field in config.fields()}


def test_hf_trainer_script_follows_argparse_defaults_training_arguments_peft_and_deepspeed_json():
    config, notes = read_script(str(SCRIPTS / "hf_trainer.py"))
    values = _values(config)
    assert values["model"] == "meta-llama/Llama-2-7b-hf" and values["mode"] == "train"
    assert (
        values["batch_size"] == 4 and config.batch_size.confidence == "medium"
    )  # argparse default
    assert (
        values["accumulation"] == 8
        and values["dtype"] == "amp-bf16"
        and values["checkpointing"] is True
    )
    assert values["lora_rank"] == 16 and values["lora_targets"] == (
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
    )
    assert values["sharding"] == "zero-2" and values["offload"] == "optimizer"
    assert config.sharding.source.endswith("ds_zero2.json")
    assert config.lora_rank.source.endswith("hf_trainer.py:15")


def test_plain_loop_reads_torchvision_model_dataloader_constant_autocast_and_momentum():
    values = _values(read_script(str(SCRIPTS / "plain_loop.py"))[0])
    assert values == {
        "model": "resnet50",
        "batch_size": 32,
        "dtype": "amp-fp16",
        "optimizer": "sgd-momentum",
        "mode": "train",
        "accumulation": 1,  # nothing accumulates: one step per batch (medium)
        "gpus": 1,  # no distributed launch in the script (medium)
    }


def test_generation_script_reads_json_config_and_bf16_weights():
    values = _values(read_script(str(SCRIPTS / "generate.py"))[0])
    assert (
        values["mode"] == "generate"
        and values["max_new_tokens"] == 512
        and values["dtype"] == "bf16"
    )


def test_lightning_trainer_precision_accumulation_devices_and_strategy():
    values = _values(read_script(str(SCRIPTS / "lightning_train.py"))[0])
    assert values["dtype"] == "amp-bf16" and values["accumulation"] == 4
    assert values["gpus"] == 2 and values["sharding"] == "zero-3" and values["mode"] == "train"


def test_inference_script_is_inference_and_fused_adamw_is_recognised():
    source = (
        "import torch\nfrom transformers import AutoModel\nm = AutoModel.from_pretrained('bert-base-uncased')\n"
        "with torch.inference_mode():\n    m(x)\n"
    )
    assert _values(read_source(source)[0])["mode"] == "inference"
    source = "import torch\nopt = torch.optim.AdamW(params, fused=True)\nloss.backward()\n"
    assert _values(read_source(source)[0])["optimizer"] == "adamw-fused"


def test_a_yaml_file_is_read_only_when_a_parser_is_available(tmp_path):
    (tmp_path / "cfg.yaml").write_text("batch_size: 12\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import yaml\nfrom torch.utils.data import DataLoader\ncfg = yaml.safe_load(open('cfg.yaml'))\n"
        "loader = DataLoader(ds, batch_size=cfg['batch_size'])\n"
    )
    config, notes = read_script(str(script))
    try:
        import yaml  # noqa: F401
    except ImportError:
        assert config.batch_size is None and any("PyYAML" in n for n in notes)
    else:
        assert config.batch_size.value == 12 and config.batch_size.confidence == "medium"


def test_syntax_errors_give_an_empty_config_and_a_note():
    config, notes = read_source("def broken(:\n")
    assert list(config.fields()) == [] and notes


def test_lora_target_modules_none_is_peft_default_not_a_crash(tmp_path):
    """``LoraConfig(target_modules=None)`` (peft picks the modules): read as unsaid; it
    raised TypeError out of the reader (a real file of the development corpus does this)."""
    script = tmp_path / "lora.py"
    script.write_text(
        "from peft import LoraConfig\nconfig = LoraConfig(r=4, target_modules=None)\n"
    )
    config, _ = read_script(str(script))
    assert config.lora_rank is not None and config.lora_rank.value == 4
    assert config.lora_targets is None


def test_a_model_the_counter_cannot_size_is_unknown_not_a_crash():
    """``nn.Linear(dim, dim_out)`` with ``dim_out=None`` (set later in real code): the
    counter raised TypeError out of the reader (five development-corpus files did)."""
    source = (
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, dim=8, dim_out=None):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(dim, dim_out)\n"
        "model = Net()\n"
    )
    config, notes = read_source(source, "net.py")
    # no invented size: either not sized at all (and said), or counted without the layer
    if config.params is None:
        assert config.model is None
        assert any("Net" in n or "could not be counted" in n for n in notes), notes
    else:
        assert config.params.confidence == "low"  # a layer it could not size lowers it


def test_past_the_evaluation_budget_a_value_is_unknown_not_wrong(monkeypatch):
    """One question visits at most ``_STEPS`` bindings (the engine's launch on demand: a
    BERT modelling file took a minute when parameters were followed through same-named
    methods' call sites); past it the answer is "unknown", never a partial value."""
    import ast

    from torchward.analysis.job import launch_demand
    from torchward.analysis.job.runconfig import Values

    source = "a0 = 1\n" + "".join(f"a{i} = a{i - 1} + 1\n" for i in range(1, 15))
    source += "batch_size = a14\n"  # ~45 expressions, 30 deep (the depth guard is 40)
    tree = ast.parse(source)
    use = tree.body[-1].value
    assert Values(tree, "chain.py", [], source).get(use) == (15, "medium")
    monkeypatch.setattr(launch_demand.DemandLaunch, "budget", 10)
    assert Values(tree, "chain.py", [], source).get(use) is None
