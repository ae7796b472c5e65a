"""A real generic client: Emacs 28's eglot (1.9) drives ``torchward lsp``.

eglot drops the value a command returns, has no code lens or inlay hints, and cannot
follow a ``command:`` link: "Explain TW001" must be *shown* by the server
(``window/showMessage`` here: eglot 1.9 has no ``window/showDocument``), and the GPU fit
must be reachable as a code action. Skipped where Emacs with eglot is not installed
(``apt-get install emacs-nox elpa-eglot``).
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
TIMEOUT_S = 180

TRAINING = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM


def main(dataset):
    model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(dataset, batch_size=8)
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        losses.append(loss)
        loss.backward()
        optimizer.step()
"""


@pytest.fixture(scope="module")
def emacs() -> str:
    found = shutil.which("emacs")
    if found is None:
        pytest.skip("Emacs is not installed (apt-get install emacs-nox elpa-eglot)")
    probe = subprocess.run(
        [found, "--batch", "--eval", "(require 'eglot)"], capture_output=True, timeout=60
    )
    if probe.returncode != 0:
        pytest.skip("eglot is not installed (apt-get install elpa-eglot)")
    return found


def test_eglot_shows_explain_and_reaches_the_gpu_fit(emacs, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.torchward]\ntarget-gpu = "A100 80GB"\n')
    (project / ".git").mkdir()  # a project root eglot recognises
    script = project / "train.py"
    script.write_text(TRAINING)
    result = tmp_path / "seen.json"
    env = dict(os.environ, HOME=str(tmp_path))
    command = [emacs, "--batch", "-l", str(HERE / "explain.el"), str(result), str(script)]
    command += [sys.executable, "-m", "torchward", "lsp"]
    run = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    seen = json.loads(result.read_text()) if result.exists() else {"error": "no result"}
    report = (
        f"steps: {seen.get('steps')}\nerror: {seen.get('error')}\nexit {run.returncode}\n"
        f"stderr: {run.stderr[-4000:]}\nmessages: {seen.get('messages', '')[-4000:]}"
    )
    assert seen.get("error") is None, report
    assert any("TW001" in text for text in seen["diagnostics"]), report
    explain = seen["explain"]
    assert "torchward: TW001" in explain and "TW001.md" in explain, report
    assert "torchward: show GPU fit" in seen["actions"], report
    assert "Peak ≈" in seen["gpu_fit"] and "A100 80GB" in seen["gpu_fit"], report
