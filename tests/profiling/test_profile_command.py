"""``torchward profile`` end to end, in a subprocess as a user runs it (needs torch).

The command runs on the fake CUDA device (the C++ shim built with g++ on first use) when
it can, otherwise on a fake CPU device with a note; either way it imports only what the
model needs and never runs the script's training loop.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

pytest.importorskip(
    "torch",
    reason="torch is the profile extra's dependency (pip install 'torchward[profile]'); "
    "not installed in this environment",
)

from .models import SMALL_CNN, TINY_GPT, TRAIN_SCRIPT  # noqa: E402


def profile(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchward", "profile", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "gpt.py").write_text(TINY_GPT)
    (tmp_path / "cnn.py").write_text(SMALL_CNN)
    (tmp_path / "train.py").write_text(TRAIN_SCRIPT.format(marker=str(tmp_path / "MARKER")))
    return tmp_path


def test_a_script_is_profiled_without_running_its_training_and_estimate_then_shows_it(project):
    flags = ["--batch-size", "4", "--seq-len", "128", "--gpu", "a100-80gb"]
    result = profile("train.py", *flags, "--format", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["source"] == "measured" and data["model"] == "TinyGPT"
    assert data["mode"] == "train" and data["verdict"] == "fits"
    assert data["params"] == 182016  # TinyGPT(d=64, layers=2) counted by torch
    assert [p["name"] for p in data["phases"]] == [
        "step start",
        "forward",
        "backward",
        "optimizer step",
    ]
    assert max(p["allocated_bytes"] for p in data["phases"]) == data["allocated_bytes"]
    assert not (project / "MARKER").exists()  # neither the top level nor the loop ran
    estimate = subprocess.run(
        [sys.executable, "-m", "torchward", "estimate", "train.py", *flags, "--format", "json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(estimate.stdout)["allocated_bytes"] == data["allocated_bytes"]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the fake CUDA device")
def test_a_factory_runs_on_the_fake_cuda_device_with_flash_attention_under_autocast(project):
    result = profile(
        "gpt.py:make_gpt", "layers=3", "--seq-len", "64", "--dtype", "amp-bf16", "--format",
        "json", cwd=project,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["measured"]["device"] == "cuda (fake, shim)"
    # three layers, a warm-up step and the measured step: the sm80 flash kernel each time
    assert data["measured"]["sdpa_kernels"] == {"flash": 6}
    assert data["config"]["dtype"]["value"] == "amp-bf16"
    weights = data["terms"]["weights"]
    assert data["terms"]["optimizer_state"] >= 2 * weights  # AdamW moments in fp32


def test_terminal_output_says_measured_and_shows_the_phases(project):
    result = profile("cnn.py:make_cnn", "width=8", "--image-size", "32", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("MEASURED")
    assert "phases: step start" in result.stdout
    assert "confidence measured" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere.py:make"], "no such file"),
        (["gpt.py:missing"], "has no attribute 'missing'"),
        (["gpt.py:make_gpt", "d=-3"], "make_gpt(d=-3) failed"),
        (["gpt.py:make_gpt", "--optimizer", "lion"], "invalid choice"),
        (["train.py", "layers=2"], "arguments are for a factory"),
        (["pair.py:make"], "one train step of make failed"),
        (["exits.py:make"], "exits.py:make() failed: SystemExit"),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_status_2(project, args, message):
    # a model whose forward needs two tensors (not inferable) and a factory that exits
    (project / "pair.py").write_text(
        "from torch import nn\n\n"
        "class Pair(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n\n"
        "    def forward(self, a, b):\n"
        "        return self.fc(a) + b\n\n"
        "def make():\n"
        "    return Pair()\n"
    )
    (project / "exits.py").write_text("import sys\n\ndef make():\n    sys.exit(3)\n")
    result = profile(*args, cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_script_without_a_model_says_what_it_looked_for(project):
    (project / "empty.py").write_text("import torch\nprint('hi')\n")
    result = profile("empty.py", cwd=project)
    assert result.returncode == 2
    assert "empty.py: cannot build the model: no construction of it was found" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_step_that_fails_on_an_assumed_input_size_says_it_was_assumed(project):
    """A net for 28x28 inputs, its data not read: the step fails at 224x224, and the
    refusal names the assumed size and the flag that sets it (no torch log noise)."""
    (project / "mnist.py").write_text(
        "import torch\n"
        "from torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(1, 8, 3)\n"
        "        self.fc = nn.Linear(8 * 26 * 26, 10)\n\n"
        "    def forward(self, x):\n"
        "        return self.fc(torch.flatten(self.conv(x), 1))\n\n"
        "def main():\n"
        "    model = Net()\n"
    )
    failed = profile("mnist.py", "--batch-size", "4", cwd=project)
    assert failed.returncode == 2
    assert "one train step of Net failed" in failed.stderr
    assert "assumed: image_size=224 (--image-size N)" in failed.stderr
    assert "Traceback" not in failed.stderr and "fake_tensor.py" not in failed.stderr
    measured = profile("mnist.py", "--batch-size", "4", "--image-size", "28", cwd=project)
    assert measured.returncode == 0, measured.stderr
