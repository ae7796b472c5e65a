"""[tool.torchward.estimate] overrides, user architectures, local config.json and the HF cache."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.rules.projected_oom import ProjectedOom
from torchward.estimator.runconfig import FIELD_NAMES
from torchward.estimator.settings import ESTIMATE_KEYS

from torchward.cli import main
from torchward.config import load_config
from torchward.errors import ConfigError

OOM = ProjectedOom.INVALID[0].source  # Llama-2-7B, batch 8, seq 2048, bf16: OOM on a T4
MY_LLM = """
[tool.torchward.models.my-llm]
model_type = "llama"
hidden_size = 2048
intermediate_size = 5632
num_hidden_layers = 22
num_attention_heads = 32
num_key_value_heads = 4
vocab_size = 32000
aliases = ["acme/my-llm-1b"]
"""


def _json(*argv: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        status = main([*argv, "--format", "json"])
    assert status == 0, out.getvalue()
    return json.loads(out.getvalue())


def _pyproject(tmp_path, text: str):
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.torchward]\ntarget-gpu = "t4"\n' + text)
    return path


def test_every_run_config_field_has_a_kebab_case_setting():
    assert {field for field, _ in ESTIMATE_KEYS.values()} == set(FIELD_NAMES)
    assert all("_" not in key for key in ESTIMATE_KEYS)


def test_estimate_table_is_validated_naming_file_and_key(tmp_path):
    cases = {
        "batch-size = 0": "estimate.batch-size",
        'dtype = "float16"': "estimate.dtype",
        "batch_size = 4": "estimate.batch_size",
        "checkpointing = 1": "estimate.checkpointing",
        'params = "lots"': "estimate.params",
    }
    for line, key in cases.items():
        path = _pyproject(tmp_path, f"[tool.torchward.estimate]\n{line}\n")
        with pytest.raises(ConfigError) as info:
            load_config(str(path))
        assert str(path) in str(info.value) and f"'{key}'" in str(info.value), str(info.value)
    path = _pyproject(tmp_path, "[tool.torchward.estimate]\nbatch_size = 4\n")
    with pytest.raises(ConfigError, match="did you mean 'batch-size'"):
        load_config(str(path))


def test_settings_lie_between_script_and_flags_and_name_their_source(tmp_path):
    _pyproject(
        tmp_path,
        "[tool.torchward.estimate]\nbatch-size = 1\nseq-len = 256\ncheckpointing = true\n"
        'lora-targets = "all-linear"\n',
    )
    (tmp_path / "train.py").write_text(OOM)
    data = _json("estimate", str(tmp_path / "train.py"), "--seq-len", "512")
    config = data["config"]
    assert config["batch_size"] == {
        "value": 1,
        "source": "pyproject.toml [tool.torchward.estimate]",
        "confidence": "high",
    }
    assert config["seq_len"]["source"] == "--seq-len" and config["seq_len"]["value"] == 512
    assert config["checkpointing"]["value"] is True and config["dtype"]["value"] == "amp-bf16"
    assert config["model"]["source"].endswith("train.py:2")  # the script's, untouched


def test_settings_params_replace_the_scripts_model(tmp_path):
    _pyproject(tmp_path, '[tool.torchward.estimate]\nparams = "1B"\n')
    (tmp_path / "train.py").write_text(OOM)
    data = _json("estimate", str(tmp_path / "train.py"))
    assert data["params"] == 1_000_000_000 and "model" not in data["config"]


def test_tw010_honours_the_overrides(tmp_path, capsys):
    _pyproject(
        tmp_path,
        '[tool.torchward.estimate]\nbatch-size = 1\nseq-len = 128\nquantize = "4bit"\n'
        "lora-rank = 8\ncheckpointing = true\n",
    )
    (tmp_path / "train.py").write_text(OOM)
    assert main(["check", str(tmp_path), "--no-cache", "--select", "TW010"]) == 0
    (tmp_path / "pyproject.toml").write_text('[tool.torchward]\ntarget-gpu = "t4"\n')
    assert main(["check", str(tmp_path), "--no-cache", "--select", "TW010"]) == 1
    capsys.readouterr()


def test_tw010_overrides_through_lint_settings_directly():
    from torchward.estimator.settings import EstimatorSettings

    small = EstimatorSettings(
        (("batch_size", 1), ("seq_len", 64), ("quantize", "4bit"), ("lora_rank", 8))
    )
    report = analyze_source(
        OOM, "train.py", LintSettings(select=("TW010",), target_gpu="t4", estimator=small)
    )
    assert not report.findings
    hash(LintSettings(estimator=small))  # settings stay hashable


def test_user_architecture_in_pyproject_is_counted_and_found_by_alias(tmp_path):
    path = _pyproject(tmp_path, MY_LLM)
    config = load_config(str(path))
    assert [name for name, _ in config.models] == ["my-llm"]
    data = _json(
        "estimate",
        "--config",
        str(path),
        "--model",
        "acme/my-llm-1b",
        "--mode",
        "train",
        "--batch-size",
        "1",
        "--seq-len",
        "512",
        "--dtype",
        "bf16",
    )
    assert (
        data["model"] == "my-llm" and 1_000_000_000 < data["params"] < 1_200_000_000
    )  # TinyLlama 1.1B
    assert any("pyproject.toml" in note for note in data["notes"])


def test_user_architecture_errors_name_the_model(tmp_path):
    path = _pyproject(
        tmp_path, '[tool.torchward.models.broken]\nmodel_type = "llama"\nhidden_size = 64\n'
    )
    with pytest.raises(ConfigError, match="'models'.*broken.*missing structural field"):
        load_config(str(path))
    path = _pyproject(tmp_path, '[tool.torchward.models.weird]\nmodel_type = "no-such-type"\n')
    with pytest.raises(ConfigError, match="weird"):
        load_config(str(path))


def test_models_file_in_catalog_or_flat_format_and_table_entries_win(tmp_path):
    record = {
        "model_type": "gpt2",
        "n_embd": 768,
        "n_layer": 6,
        "n_head": 12,
        "vocab_size": 50257,
        "n_positions": 1024,
    }
    (tmp_path / "arch.json").write_text(
        json.dumps({"models": [{"name": "half-gpt2", "config": record}]})
    )
    path = _pyproject(tmp_path, 'models-file = "arch.json"\n')
    data = _json(
        "estimate",
        "--config",
        str(path),
        "--model",
        "half-gpt2",
        "--mode",
        "inference",
        "--batch-size",
        "1",
        "--seq-len",
        "128",
        "--dtype",
        "fp32",
    )
    assert 80_000_000 < data["params"] < 83_000_000  # distilgpt2's 81.9M (6 layers)
    (tmp_path / "arch.json").write_text(json.dumps({"half-gpt2": record}))
    assert load_config(str(path)).models[0][0] == "half-gpt2"
    (tmp_path / "arch.json").write_text("{not json")
    with pytest.raises(ConfigError, match="'models-file'.*not valid JSON"):
        load_config(str(path))


def _write_config(folder, **extra):
    folder.mkdir(parents=True)
    config = {
        "model_type": "llama",
        "hidden_size": 512,
        "intermediate_size": 1376,
        "num_hidden_layers": 8,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        **extra,
    }
    (folder / "config.json").write_text(json.dumps(config))


def test_a_local_checkpoint_folder_named_by_the_script_is_read(tmp_path):
    _write_config(tmp_path / "checkpoints" / "run1")
    script = tmp_path / "train.py"
    script.write_text(
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('./checkpoints/run1')\n"
    )
    data = _json(
        "estimate", str(script), "--mode", "train", "--batch-size", "2", "--seq-len", "256"
    )
    assert data["config"]["model"]["value"] == str(tmp_path / "checkpoints" / "run1")
    assert 40_000_000 < data["params"] < 60_000_000


def test_the_offline_hf_cache_is_read_and_honours_hf_home(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    _write_config(tmp_path / "hf" / "hub" / "models--acme--tiny-llama" / "snapshots" / "abc123")
    data = _json(
        "estimate",
        "--model",
        "acme/tiny-llama",
        "--mode",
        "inference",
        "--batch-size",
        "1",
        "--seq-len",
        "128",
        "--dtype",
        "bf16",
    )
    assert data["model"] == "acme/tiny-llama" and any("HF cache" in n for n in data["notes"])
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    _write_config(tmp_path / "elsewhere" / "models--acme--other" / "snapshots" / "x")
    assert (
        _json("estimate", "--model", "acme/other", "--mode", "inference")["model"] == "acme/other"
    )


def test_unknown_models_stay_unknown_and_the_error_says_how_to_add_one(capsys):
    assert main(["estimate", "--model", "acme/never-seen", "--gpu", "t4"]) == 2
    assert "[tool.torchward.models]" in capsys.readouterr().err
