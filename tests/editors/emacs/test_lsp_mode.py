"""A real generic client: Emacs 28's lsp-mode (8.0) with docs/editors.md's configuration.

The snippet is read from the documentation and loaded as a user's init file would load
it (only the server command is the test's), so the documented configuration is the one
that runs. lsp-mode 8.0 shows code lenses but has no ``window/showDocument`` and no inlay
hints: "Explain TW001", picked from the code actions, must be *shown* by the server
(``window/showMessage``), and the GPU fit is the lens above the training loop. Skipped
where Emacs with lsp-mode is not installed (``apt-get install emacs-nox elpa-lsp-mode``).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
from test_eglot import TRAINING

HERE = pathlib.Path(__file__).parent
DOCS = HERE.parents[2] / "docs" / "editors.md"
TIMEOUT_S = 180


@pytest.fixture(scope="module")
def emacs() -> str:
    found = shutil.which("emacs")
    if found is None:
        pytest.skip("Emacs is not installed (apt-get install emacs-nox elpa-lsp-mode)")
    probe = subprocess.run(
        [found, "--batch", "--eval", "(require 'lsp-mode)"], capture_output=True, timeout=60
    )
    if probe.returncode != 0:
        pytest.skip("lsp-mode is not installed (apt-get install elpa-lsp-mode)")
    return found


def documented_snippet() -> str:
    """The elisp block of docs/editors.md's "Emacs: lsp-mode" section."""
    section = DOCS.read_text().split("## Emacs: lsp-mode", 1)[1]
    return re.search(r"```elisp\n(.*?)```", section, re.DOTALL).group(1)


def test_the_documented_snippet_starts_torchward_lsp():
    snippet = documented_snippet()
    assert '(lsp-stdio-connection \'("torchward" "lsp"))' in snippet
    assert ":server-id 'torchward" in snippet


def test_lsp_mode_shows_diagnostics_explain_and_the_gpu_fit_lens(emacs, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.torchward]\ntarget-gpu = "A100 80GB"\n')
    (project / ".git").mkdir()  # a project root lsp-mode recognises
    script = project / "train.py"
    script.write_text(TRAINING)
    server = " ".join(json.dumps(part) for part in [sys.executable, "-m", "torchward", "lsp"])
    config = tmp_path / "init-torchward.el"
    config.write_text(documented_snippet().replace('\'("torchward" "lsp")', f"'({server})"))
    result = tmp_path / "seen.json"
    env = dict(os.environ, HOME=str(tmp_path))
    command = [emacs, "--batch", "-l", str(HERE / "lsp_mode.el"), str(result), str(script)]
    command.append(str(config))
    run = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    seen = json.loads(result.read_text()) if result.exists() else {"error": "no result"}
    report = (
        f"steps: {seen.get('steps')}\nerror: {seen.get('error')}\nexit {run.returncode}\n"
        f"stderr: {run.stderr[-4000:]}\nmessages: {seen.get('messages', '')[-4000:]}"
    )
    assert seen.get("error") is None, report
    assert seen["servers"] == ["torchward"], report
    assert any(text.startswith("TW001 ") for text in seen["diagnostics"]), report
    assert "Explain TW001" in " ".join(seen["actions"]), report
    assert "torchward: TW001" in seen["explain"] and "TW001.md" in seen["explain"], report
    peak = [title for title in seen["lenses"] if title.startswith("Peak ≈")]
    assert peak and " on A100 80GB" in peak[0], report
