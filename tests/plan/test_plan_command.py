"""``torchward plan``: the bundled examples, the JSON schema of docs/plan.md, the filters,
the SkyPilot block and the exit statuses."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import jsonschema
import pytest

from torchward.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "bad_train.py")
DOC = (ROOT / "docs" / "plan.md").read_text(encoding="utf-8")
SCHEMA = json.loads(
    re.search(r"<!-- plan-schema -->\s*```json\n(.*?)```\s*<!-- /plan-schema -->", DOC, re.S)[1]
)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", *argv])
    return code, out.getvalue(), err.getvalue()


def _json(*argv: str) -> dict:
    code, out, _ = _run(*argv, "--format", "json")
    assert code == 0
    data = json.loads(out)
    jsonschema.Draft7Validator(SCHEMA).validate(data)
    return data


def test_the_bundled_example_gets_at_least_three_priced_and_dated_plans():
    data = _json(EXAMPLE)
    assert len(data["plans"]) >= 3
    for plan in data["plans"]:
        assert plan["price"]["usd_per_hour"] > 0 and plan["price"]["date"]
        assert plan["price"]["source"].startswith("skypilot-org/skypilot-catalog@")
    assert sum(p["fastest"] for p in data["plans"]) == 1
    assert [p["rank"] for p in data["plans"]] == list(range(1, len(data["plans"]) + 1))


def test_the_schema_rejects_what_it_should():
    data = _json("--model", "gpt2", "--mode", "train", "--batch-size", "8")
    broken = json.loads(json.dumps(data))
    broken["plans"][0]["memory"]["verdict"] = "tight"
    try:
        jsonschema.Draft7Validator(SCHEMA).validate(broken)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("a plan that does not fit passed the schema")


def test_the_table_marks_times_as_modelled_and_names_its_assumptions():
    code, out, _ = _run("--model", "gpt2", "--mode", "train", "--batch-size", "8")
    assert code == 0
    assert "fastest" in out
    assert "modelled, not measured" in out and "MFU of 40%" in out
    assert "prices: skypilot-org/skypilot-catalog@" in out


def test_the_table_shows_the_modelled_run_of_each_plan():
    job = ("--model", "gpt2", "--mode", "train", "--batch-size", "8", "--steps", "20000")
    first = _json(*job)["plans"][0]
    code, out, _ = _run(*job, "--top", "1")
    assert code == 0 and "run~" in out.splitlines()[1]
    row = out.splitlines()[2]
    hours, usd = first["run"]["hours"], first["run"]["usd"]
    length = f"{hours:.1f} h" if hours >= 0.1 else f"{hours * 60:.0f} min"
    assert f"{length}, ${usd:,.2f}" in row


def test_filters_keep_only_what_they_name():
    data = _json("--model", "gpt2", "--mode", "train", "--gpu", "h100", "--max-gpus", "2")
    assert data["plans"]
    assert {p["gpu"] for p in data["plans"]} <= {"h100-sxm", "h100-pcie", "h100-nvl"}
    assert all(p["gpus"] <= 2 for p in data["plans"])
    none = _run("--model", "gpt2", "--cloud", "azure")  # not in the bundled table
    assert none[0] == 2 and "no priced instance" in none[2]


def test_budget_and_max_hours_bound_the_modelled_run():
    job = ("--model", "meta-llama/Llama-2-7b-hf", "--mode", "train", "--steps", "5000")
    every = _json(*job)["plans"]
    timed = sorted(p["run"]["usd"] for p in every if p["run"]["usd"] is not None)
    assert len(timed) < len(every)  # A10G has no published peak: no time, no run cost
    limit = timed[len(timed) // 2]
    cheap = _json(*job, "--budget", str(limit))["plans"]
    assert 0 < len(cheap) < len(timed)
    assert all(p["run"]["usd"] <= limit for p in cheap)
    quick = _json(*job, "--max-hours", "1")["plans"]
    assert all(p["run"]["hours"] <= 1 for p in quick)


def test_skypilot_block_names_the_cheapest_instance():
    data = _json("--model", "gpt2", "--mode", "train")
    code, out, _ = _run("--model", "gpt2", "--mode", "train", "--format", "skypilot")
    first = data["plans"][0]
    assert code == 0
    assert "resources:\n" in out
    assert f"  instance_type: {first['instance']}\n" in out
    assert f"  cloud: {first['provider']}\n" in out
    assert f"num_nodes: {first['nodes']}" in out


def test_exit_statuses_follow_estimate(tmp_path):
    assert _run("--model", "no-such-model-anywhere")[0] == 2
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    assert _run(str(broken))[0] == 1
    # a module whose activations are not modelled: no plan, but no verdict is not an oom
    good = str(ROOT / "examples" / "good_train.py")
    assert _run(good)[0] == 0
    assert _run(good, "--fail-on-oom")[0] == 0
    # a job nothing priced can hold: --fail-on-oom says so
    huge = ("--params", "900B", "--mode", "train", "--max-gpus", "1")
    assert _run(*huge)[0] == 0
    assert _run(*huge, "--fail-on-oom")[0] == 1


def test_a_script_whose_model_cannot_be_sized_gets_no_plan_and_says_why(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('nobody/unheard-of-model')\n"
        "optimizer = torch.optim.AdamW(model.parameters())\n"
        "for batch in loader:\n"
        "    model(**batch).loss.backward()\n"
        "    optimizer.step()\n"
    )
    code, out, _ = _run(str(script), "--format", "json")
    data = json.loads(out)
    jsonschema.Draft7Validator(SCHEMA).validate(data)
    assert code == 0 and data["plans"] == []
    assert (
        data["notes"][0].startswith("unknown: ") and "nobody/unheard-of-model" in data["notes"][0]
    )


def test_gpus_instances_shows_price_date_and_source():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["gpus", "--instances", "--format", "json"]) == 0
    priced = [i for i in json.loads(out.getvalue())["instances"] if i["price"]]
    assert priced
    assert all(i["price"]["date"] and i["price"]["source"] for i in priced)


def test_json_output_of_a_script_that_freezes_layers(tmp_path):
    # regression: the job's configuration holds non-JSON values (what the script freezes);
    # the plan's JSON writes them the way `estimate --format json` does
    script = tmp_path / "freeze.py"
    script.write_text(
        "import torch\n"
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2').cuda()\n"
        "for param in model.transformer.h[:6].parameters():\n"
        "    param.requires_grad = False\n"
        "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
        "loader = torch.utils.data.DataLoader(dataset, batch_size=8)\n"
        "for x, y in loader:\n"
        "    model(x, labels=y).loss.backward()\n"
        "    optimizer.step()\n"
    )
    data = _json(str(script))
    assert data["config"]["frozen"]["value"]["frozen"] == ["transformer.h[:6]"]
    assert data["plans"]


def test_tensor_parallel_plans_pass_the_schema_and_estimate_sizes_them_alike():
    data = _json(
        "--model", "meta-llama/Llama-2-70b-hf", "--mode", "inference", "--dtype", "bf16",
        "--batch-size", "1", "--seq-len", "4096", "--cloud", "aws",
    )  # fmt: skip
    split = [p for p in data["plans"] if p["parallelism"]["tensor_parallel"] > 1]
    assert split and all(p["parallelism"]["name"] == "tp" for p in split)
    chosen = split[0]
    assert chosen["changes"]["tensor_parallel"] == chosen["parallelism"]["tensor_parallel"]
    assert chosen["step_time"]["tensor_parallel_seconds"] > 0
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in chosen["changes"].items()]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(
            ["estimate", "--model", "meta-llama/Llama-2-70b-hf", "--mode", "inference",
             "--dtype", "bf16", "--batch-size", "1", "--seq-len", "4096", *flags,
             "--gpu", chosen["gpu"], "--format", "json"]
        )  # fmt: skip
    assert code == 0, err.getvalue()
    again = json.loads(out.getvalue())
    assert again["verdict"] == "fits"
    assert again["peak_bytes"] == chosen["memory"]["peak_bytes"]
    broken = json.loads(json.dumps(data))
    broken["plans"][0]["parallelism"]["name"] = "pipeline"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(broken)
    del broken["plans"][0]["parallelism"]["tensor_parallel"]
    broken["plans"][0]["parallelism"]["name"] = "tp"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(broken)


def test_a_degree_the_model_cannot_take_is_a_usage_error():
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(["estimate", "--model", "gpt2", "--mode", "train", "--tensor-parallel", "5"])
    assert code == 2
    assert "tensor parallelism of degree 5" in err.getvalue()
    code, _, err_text = _run("--model", "gpt2", "--mode", "train", "--tensor-parallel", "5")
    assert code == 2 and "does not divide the attention heads (12)" in err_text


def test_an_offload_plan_says_what_it_puts_in_host_memory():
    job = ("--model", "meta-llama/Llama-2-7b-hf", "--mode", "train", "--batch-size", "1")
    job = (*job, "--seq-len", "1024", "--gpu", "a6000", "--max-gpus", "1")
    (plan,) = _json(*job)["plans"]
    assert plan["parallelism"]["name"] == "zero-3-offload-params"
    offload = plan["offload"]
    assert offload["host_bytes_per_node"] > 6.7e9 * 12
    host = plan["price"]["host_memory_gib"]
    assert offload["checked"] is (host is not None)
    code, out, _ = _run(*job, "--format", "skypilot")
    assert code == 0
    gib = offload["host_bytes_per_node"] / 2**30
    assert f"# offload: {gib:.1f} GiB per node of optimizer state and parameters" in out
