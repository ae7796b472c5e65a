"""TW023: a test that loads the file its pytest fixture wrote loads the project's own file.

From rasbt/LLMs-from-scratch (``pkg/llms_from_scratch/tests/test_qwen3.py``): a
session fixture saves a seeded model's ``state_dict()`` under a temporary folder and
returns the path; each test takes the fixture by parameter name and loads it. pytest
passes a fixture's return value to the parameter of the same name, so the path the test
loads is the path the fixture wrote: a load of the project's own checkpoint (a hint, with
the ``weights_only=True`` fix proven: a ``state_dict`` only), not a file from outside.
The twins keep the warning: a fixture that hands over a downloaded file, and a parameter
no fixture of the module provides.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.finding import Proof, Severity
from torchward.analysis.workspace import torchversion

FIXTURE_WRITES = """\
import pytest
import torch


@pytest.fixture(scope="session")
def tiny_weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny_weights.pt"
    if not path.exists():
        model = torch.nn.Linear(4, 4)
        torch.save(model.state_dict(), path)
    return path


def test_reload(tiny_weights):
    model = torch.nn.Linear(4, 4)
    model.load_state_dict(torch.load(tiny_weights))
    model.eval()
"""

FIXTURE_DOWNLOADS = """\
import pytest
import torch
from huggingface_hub import hf_hub_download


@pytest.fixture(scope="session")
def tiny_weights():
    return hf_hub_download("someone/tiny", "tiny_weights.bin")


def test_reload(tiny_weights):
    model = torch.nn.Linear(4, 4)
    model.load_state_dict(torch.load(tiny_weights))
    model.eval()
"""


@pytest.fixture(autouse=True)
def no_interpreter_torch(monkeypatch, tmp_path):
    """The suite's environment has a torch installed: only the project's files count."""
    real = torchversion._site_folders
    monkeypatch.setattr(
        torchversion,
        "_site_folders",
        lambda root: [f for f in real(root) if f.startswith(str(tmp_path))],
    )


def _findings(tmp_path: Path, source: str):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch>=2.2\n")
    test = tmp_path / "tests" / "test_tiny.py"
    test.parent.mkdir()
    test.write_text(source)
    return analyze_source(source, str(test), LintSettings(select=("TW023",))).findings


def test_a_load_of_what_the_tests_fixture_wrote_is_a_hint_with_a_proven_fix(tmp_path: Path):
    (finding,) = _findings(tmp_path, FIXTURE_WRITES)
    assert (finding.span.line, finding.severity) == (16, Severity.HINT)
    assert "The project writes this file itself (`torch.save` in this file:10)" in finding.message
    assert Proof.TENSOR_CHECKPOINT in finding.proofs


@pytest.mark.parametrize(
    "source",
    [
        FIXTURE_DOWNLOADS,
        # the parameter is not the fixture's name: pytest passes something else
        FIXTURE_WRITES.replace("def test_reload(tiny_weights)", "def test_reload(other)").replace(
            "torch.load(tiny_weights)", "torch.load(other)"
        ),
        # a plain function of the same shape is not given the fixture by pytest
        FIXTURE_WRITES.replace('@pytest.fixture(scope="session")\n', ""),
    ],
    ids=["downloaded", "another-parameter", "not-a-fixture"],
)
def test_other_files_stay_a_warning(tmp_path: Path, source: str):
    (finding,) = _findings(tmp_path, source)
    assert finding.severity is Severity.WARNING
    assert Proof.TENSOR_CHECKPOINT not in finding.proofs
