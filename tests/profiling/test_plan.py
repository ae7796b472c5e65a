"""The static half of ``torchward profile`` (no torch): recipes, jobs, the cache, estimate.

These run on the base install: what to build and which step to measure are read from
source, and ``torchward estimate`` finds a stored measurement without importing torch.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap

import pytest
from torchward.analysis.job.runconfig import read_source

from torchward.profile import cache, plan
from torchward.profile.request import ModelRecipe, ProfileJob, ProfileResult

from .models import TINY_GPT, TRAIN_SCRIPT


def recipe_of(source: str, path) -> ModelRecipe:
    path.write_text(source)
    config, _ = read_source(source, str(path))
    return plan.script_recipe(str(path), source, config)


def test_script_recipe_writes_in_resolved_values_and_leaves_out_the_training(tmp_path):
    (tmp_path / "gpt.py").write_text(TINY_GPT)
    recipe = recipe_of(TRAIN_SCRIPT.format(marker="m"), tmp_path / "train.py")
    assert recipe.kind == "script" and recipe.label == "TinyGPT"
    # args.layers is an argparse default (written in); WIDTH a constant the prelude defines
    assert recipe.expression == "TinyGPT(d=WIDTH, layers=2)"
    prelude = "\n".join(recipe.prelude)
    assert "from gpt import TinyGPT" in prelude and "WIDTH = 64" in prelude
    assert "LAYERS = 2" not in prelude  # read by the argparse default only: not needed
    assert "write_text" not in prelude.split("def main")[0]  # the top-level marker line
    assert not any(s.startswith(("for ", "if __name__")) for s in recipe.prelude)
    compile(prelude, "prelude", "exec")  # what the worker will run is valid Python


def test_names_the_construction_needs_bring_their_assignments_in_module_order(tmp_path):
    source = textwrap.dedent(
        """
        import json
        from torch import nn
        from dataclasses import dataclass

        @dataclass
        class Config:
            width: int = 8

        class Net(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.fc = nn.Linear(cfg.width, cfg.width)

        dataset = json.load(open("huge.json"))
        base = Config(width=16)
        config = Config(width=base.width * 2)
        if __name__ == "__main__":
            net = Net(config)
        """
    )
    recipe = recipe_of(source, tmp_path / "net.py")
    assert recipe.expression == "Net(config)"
    # the assignment the construction needs, with the value the static reader read for it
    # (``base.width * 2``: 32); the data loading never
    assigns = [s for s in recipe.prelude if s.startswith(("base =", "config =", "dataset ="))]
    assert assigns == ["config = Config(width=32)"]


def test_a_construction_inside_main_block_uses_that_blocks_assignments(tmp_path):
    source = textwrap.dedent(
        """
        from torch import nn

        class Net(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.fc = nn.Linear(width, width)

        if __name__ == "__main__":
            width = compute_width()
            model = Net(width)
        """
    )
    with pytest.raises(plan.PlanError) as raised:  # compute_width is defined nowhere
        recipe_of(source, tmp_path / "net.py")
    assert "net.py:11: cannot build the model `Net(width)`" in str(raised.value)
    assert "`compute_width`" in str(raised.value)
    source = source.replace(
        "from torch import nn", "from torch import nn\nfrom sizes import compute_width"
    )
    recipe = recipe_of(source, tmp_path / "net.py")
    assert "width = compute_width()" in recipe.prelude  # the worker reports it if it fails


def test_a_script_without_a_model_says_what_was_looked_for_and_what_to_do(tmp_path):
    with pytest.raises(plan.PlanError) as raised:
        recipe_of("import torch\nprint('hello')\n", tmp_path / "nothing.py")
    message = str(raised.value)
    assert "no construction of it was found" in message
    assert "torchvision, timm or transformers" in message
    assert "torchward profile FILE.py:FUNCTION" in message  # what the user can do


def test_factory_arguments_are_literals_or_text():
    assert plan.parse_arguments(["layers=12", "name=tiny", "p=0.1", "sizes=(1, 2)"]) == {
        "layers": 12,
        "name": "tiny",
        "p": 0.1,
        "sizes": (1, 2),
    }
    with pytest.raises(plan.PlanError):
        plan.parse_arguments(["12"])
    with pytest.raises(plan.PlanError):
        plan.factory_recipe("no_colon", {})


def test_the_job_comes_from_the_run_configuration_and_names_what_was_assumed(tmp_path):
    source = textwrap.dedent(
        """
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pass
        """
    )
    config, _ = read_source(source, str(tmp_path / "t.py"))
    planned = plan.job_of(config)
    assert planned.job.optimizer == "sgd-momentum" and planned.job.dtype == "amp-bf16"
    assert "batch_size" in planned.assumed
    recipe = plan.recipe_for_config(config)
    assert recipe.kind == "config" and recipe.model_type == "gpt2"


def test_an_optimizer_torch_optim_lacks_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot be profiled"):
        ProfileJob(optimizer="adamw-8bit")


def fake_result(job: ProfileJob, allocated: int = 3 * 2**30) -> ProfileResult:
    return ProfileResult(
        model="TinyGPT",
        params=123_456,
        job=job,
        allocated_bytes=allocated,
        peak_phase="backward",
        phases=(("step start", 2**30), ("backward", allocated)),
        terms={"weights": 2**30, "activations": allocated - 2**30},
        device="cuda (fake, shim)",
        seconds=1.5,
        torch_version="2.13.0",
    )


def test_the_cache_key_follows_the_model_source_and_the_job(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "gpt.py").write_text(TINY_GPT)
    script = tmp_path / "train.py"
    recipe = recipe_of(TRAIN_SCRIPT.format(marker="m"), script)
    job = ProfileJob(batch_size=4, seq_len=128)
    stored = cache.store(recipe, job, fake_result(job), script)
    assert stored is not None and stored.parent == tmp_path / ".torchward_cache" / "profiles"
    assert cache.lookup(recipe, job, script).allocated_bytes == 3 * 2**30
    assert cache.lookup(recipe, ProfileJob(batch_size=8, seq_len=128), script) is None
    # the model's code lives in the sibling module: editing it invalidates the entry
    (tmp_path / "gpt.py").write_text(TINY_GPT.replace("4 * d", "8 * d"))
    assert cache.lookup(recipe, job, script) is None


def run_cli(*args, cwd) -> subprocess.CompletedProcess:
    code = (
        "import sys\nfrom torchward.cli import main\nstatus = main(sys.argv[1:])\n"
        "print('TORCH_LOADED' if 'torch' in sys.modules else 'NO_TORCH', file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_estimate_shows_the_cached_measurement_of_the_same_model_and_job(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "gpt.py").write_text(TINY_GPT)
    script = tmp_path / "train.py"
    source = TRAIN_SCRIPT.format(marker=str(tmp_path / "MARKER"))
    recipe = recipe_of(source, script)
    flags = ["--batch-size", "4", "--seq-len", "128", "--gpu", "a100-80gb"]
    before = run_cli("estimate", "train.py", *flags, "--format", "json", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert json.loads(before.stdout).get("source") != "measured"
    config, _ = read_source(source, str(script))
    from torchward.estimator.runconfig import Field, RunConfig

    config = config.merged(
        RunConfig(batch_size=Field(4, "--batch-size"), seq_len=Field(128, "--seq-len"))
    )
    from torchward.estimator.hardware import lookup_gpu

    job = plan.job_of(config, lookup_gpu("a100-80gb")).job
    cache.store(recipe, job, fake_result(job), script)
    after = run_cli("estimate", "train.py", *flags, "--format", "json", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    data = json.loads(after.stdout)
    assert data["source"] == "measured" and data["confidence"] == "measured"
    assert data["allocated_bytes"] == 3 * 2**30 and data["verdict"] == "fits"
    assert data["peak_bytes"] > data["allocated_bytes"]  # + fragmentation + CUDA context
    assert "NO_TORCH" in after.stderr  # the base install reads the cache without torch
    other = run_cli("estimate", "train.py", "--batch-size", "8", "--format", "json", cwd=tmp_path)
    assert json.loads(other.stdout).get("source") != "measured"  # another job
    terminal = run_cli("estimate", "train.py", *flags, cwd=tmp_path)
    assert "MEASURED" in terminal.stdout
    assert not (tmp_path / "MARKER").exists()


def test_profile_help_says_it_runs_user_code_and_loads_no_torch(tmp_path):
    result = run_cli("profile", "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "IMPORTS AND RUNS YOUR CODE" in " ".join(result.stdout.split())
    assert "NO_TORCH" in result.stderr


def test_no_module_of_the_base_install_imports_the_torch_half_of_the_profile():
    """The server, estimator and analysis may use the static half (plan, cache, report)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    torch_modules = {"worker", "steps", "counter", "emulation", "build"}
    violations = []
    for folder in ("analysis", "estimator", "server", "torchward/commands", "torchward/reporters"):
        for path in (root / folder).rglob("*.py"):
            if path.name == "profile.py" and path.parent.name == "commands":
                continue  # the profile command itself, run only on request
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.ImportFrom):
                    names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                for name in names:
                    parts = name.split(".")
                    if (
                        parts[0] == "torch"
                        or ("profile" in parts and parts[-1] in torch_modules)
                        or name == "torchward.guard"
                    ):
                        violations.append(f"{path.relative_to(root)}:{node.lineno}: {name}")
    assert violations == []


TOP_LEVEL_ARGS = """\
import argparse

import timm
import wandb
from hellaswag import iterate_examples

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="resnet26d")
parser.add_argument("--num-classes", default=100, type=int)
parser.add_argument("--pretrained", action="store_true")
args = parser.parse_args()
safe_name = args.model.replace("/", "_")
output_dir = f"output/{safe_name}"
EPOCHS = 10

model = timm.create_model(args.model, pretrained=args.pretrained, num_classes=args.num_classes)
model.cuda()
for x in iterate_examples("val"):
    wandb.log({"x": x})
"""


def test_top_level_arguments_are_written_in_and_never_parsed(tmp_path):
    recipe = recipe_of(TOP_LEVEL_ARGS, tmp_path / "train.py")
    assert recipe.label == "resnet26d"
    # the argparse defaults, and no trained weights (the same architecture, no download)
    assert recipe.expression == (
        "timm.create_model('resnet26d', pretrained=False, num_classes=100)"
    )
    prelude = "\n".join(recipe.prelude)
    assert "parse_args" not in prelude and "output_dir" not in prelude
    # only what the construction needs: not the logging, not the evaluation's helpers
    assert recipe.prelude == ("import timm",)


def test_a_torchvision_model_chosen_by_its_argparse_default(tmp_path):
    source = textwrap.dedent(
        """
        import argparse
        import torchvision.models as models

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("-a", "--arch", default="resnet18")
            parser.add_argument("--pretrained", action="store_true")
            args = parser.parse_args()
            if args.pretrained:
                model = models.__dict__[args.arch](pretrained=True)
            else:
                model = models.__dict__[args.arch]()
            model = model.cuda()

        if __name__ == "__main__":
            main()
        """
    )
    recipe = recipe_of(source, tmp_path / "main.py")
    assert recipe.label == "resnet18"
    assert recipe.expression == "models.__dict__['resnet18']()"
    assert recipe.prelude == ("import torchvision.models as models",)


def test_a_model_the_reader_cannot_count_is_still_found_and_its_chain_left_out(tmp_path):
    source = textwrap.dedent(
        """
        import argparse
        import torch
        from torch import nn

        def make_mlp(width, depth):
            layers = [nn.Linear(784, width)]
            for _ in range(depth):
                layers += [nn.Linear(width, width), nn.ReLU()]
            return nn.Sequential(*layers)

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--width", type=int, default=512)
            args = parser.parse_args()
            model_config = ModelConfig(width=args.width)
            model = make_mlp(args.width, 3).to("cuda")
            model = DDP(model)
        """
    )
    recipe = recipe_of(source, tmp_path / "train.py")
    assert recipe.label == "make_mlp"
    assert recipe.expression == "make_mlp(512, 3)"  # not ModelConfig, not the DDP wrapper
    assert "from torch import nn" in recipe.prelude


def test_a_value_that_comes_from_loaded_data_is_a_refusal_naming_it(tmp_path):
    source = textwrap.dedent(
        """
        from torch import nn
        from torchvision import datasets

        class Net(nn.Module):
            def __init__(self, classes):
                super().__init__()
                self.fc = nn.Linear(8, classes)

        def main():
            train_set = datasets.CIFAR10("data", download=True)
            model = Net(len(train_set.classes))
        """
    )
    with pytest.raises(plan.PlanError) as raised:
        recipe_of(source, tmp_path / "train.py")
    message = str(raised.value)
    assert "train.py:12: cannot build the model `Net(len(train_set.classes))`" in message
    assert "`train_set`" in message and "data or a file it loads" in message
