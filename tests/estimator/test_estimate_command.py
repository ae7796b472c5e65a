"""`torchward estimate`, `gpus`, `models`: the JSON shape, remedies, and named assumptions."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from torchward.cli import main

SCRIPTS = Path(__file__).parent / "scripts"
REQUIRED = {
    "model",
    "params",
    "mode",
    "gpu",
    "usable_bytes",
    "peak_bytes",
    "low_bytes",
    "high_bytes",
    "allocated_bytes",
    "verdict",
    "terms",
    "config",
    "remedies",
}
TERMS = {
    "weights",
    "gradients",
    "optimizer_state",
    "master_weights",
    "activations",
    "kv_cache",
    "temporaries",
    "cuda_context",
    "fragmentation",
}


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


def _json(*argv: str) -> dict:
    status, text = _run(*argv, "--format", "json")
    assert status == 0, text
    return json.loads(text)


def test_json_has_the_documented_shape_and_terms_sum_to_the_peak():
    data = _json(
        "estimate",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100-80gb",
        "--mode",
        "train",
        "--batch-size",
        "4",
        "--seq-len",
        "2048",
        "--dtype",
        "bf16",
    )
    assert REQUIRED <= set(data) and set(data["terms"]) == TERMS
    assert sum(data["terms"].values()) == data["peak_bytes"]
    assert data["low_bytes"] <= data["peak_bytes"] <= data["high_bytes"]
    assert data["config"]["batch_size"] == {
        "value": 4,
        "source": "--batch-size",
        "confidence": "high",
    }
    for remedy in data["remedies"]:
        assert set(remedy) == {"title", "saving_bytes", "peak_bytes", "verdict", "cost"}


def test_an_oom_lists_remedies_largest_saving_first_and_a_stack_that_fits():
    data = _json(
        "estimate",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100-80gb",
        "--mode",
        "train",
        "--batch-size",
        "4",
        "--seq-len",
        "2048",
        "--dtype",
        "bf16",
        "--optimizer",
        "adamw",  # with the optimizer assumed, the interval reaches SGD: "may not fit"
    )
    assert data["verdict"] == "oom"
    savings = [r["saving_bytes"] for r in data["remedies"]]
    assert savings == sorted(savings, reverse=True) and savings[0] > 0
    assert data["stacked_remedies"][-1]["verdict"] in ("fits", "tight")


def test_missing_inputs_are_named_never_silently_defaulted():
    data = _json("estimate", "--model", "gpt2", "--gpu", "t4")
    assert {"mode", "batch_size", "seq_len", "dtype"} <= set(data["missing"])
    assert data["config"]["batch_size"]["source"] == "assumed"
    assert data["confidence"] == "low"


def test_max_batch_size_fits_and_one_more_does_not():
    data = _json(
        "estimate",
        "--model",
        "gpt2",
        "--gpu",
        "t4",
        "--mode",
        "train",
        "--batch-size",
        "8",
        "--seq-len",
        "512",
        "--dtype",
        "amp-fp16",
        "--optimizer",
        "adamw",
        "--attention",
        "sdpa",
    )
    top = data["max_batch_size"]
    assert top >= 8
    at_max = _json(
        "estimate",
        "--model",
        "gpt2",
        "--gpu",
        "t4",
        "--mode",
        "train",
        "--batch-size",
        str(top),
        "--seq-len",
        "512",
        "--dtype",
        "amp-fp16",
        "--optimizer",
        "adamw",
        "--attention",
        "sdpa",
    )
    beyond = _json(
        "estimate",
        "--model",
        "gpt2",
        "--gpu",
        "t4",
        "--mode",
        "train",
        "--batch-size",
        str(top + 1),
        "--seq-len",
        "512",
        "--dtype",
        "amp-fp16",
        "--optimizer",
        "adamw",
        "--attention",
        "sdpa",
    )
    assert at_max["peak_bytes"] <= at_max["usable_bytes"] < beyond["peak_bytes"]


def test_params_only_borrows_a_structure_and_says_so():
    data = _json("estimate", "--params", "7B", "--gpu", "8xh100", "--mode", "train")
    assert data["params"] == 7_000_000_000 and data["gpus"] == 8
    assert any("borrowed" in note for note in data["notes"])


def test_script_values_carry_file_and_line_and_flags_override_them():
    script = str(SCRIPTS / "hf_trainer.py")
    data = _json("estimate", script, "--gpu", "a10g", "--seq-len", "1024", "--batch-size", "2")
    assert data["config"]["lora_rank"]["source"].endswith("hf_trainer.py:15")
    assert data["config"]["sharding"]["value"] == "zero-2"
    assert data["config"]["batch_size"]["source"] == "--batch-size"


def test_terminal_output_has_a_breakdown_chart_and_the_verdict():
    status, text = _run(
        "estimate", "--model", "resnet50", "--gpu", "t4", "--mode", "train", "--batch-size", "32"
    )
    assert status == 0 and "█" in text and "FITS" in text


def test_unknown_model_and_gpu_are_usage_errors():
    assert _run("estimate", "--model", "no-such-model-xyz", "--gpu", "t4")[0] == 2
    assert _run("estimate", "--model", "gpt2", "--gpu", "no-such-gpu-xyz")[0] == 2
    assert _run("estimate", "--gpu", "t4")[0] == 2


def test_gpus_and_models_list_the_catalogs_as_json():
    gpus = _json("gpus", "--instances")
    assert len(gpus["gpus"]) >= 45 and len(gpus["instances"]) >= 60
    assert len(_json("models")["models"]) >= 120
