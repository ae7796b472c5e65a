"""TW023 on a project that keeps torch below 2.6 with an upper bound only (``torch<2.6``).

Found on PyTorch's own tree: such a requirement was said to "admit any version", which
reads as if a safe torch might be installed. It admits none: ``weights_only`` defaults to
False on every version it allows, and the message says so. The bound is a typed fact of
the requirement (:attr:`TorchVersion.ceiling`), read the same way from every file kind.
"""

from __future__ import annotations

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.workspace import torchversion
from torchward.analysis.workspace.torchversion import ceiling_torch

RESTORE = (
    "import torch\ndef restore(model, path):\n"
    "    model.load_state_dict(torch.load(path))\n    model.eval()\n"
)


@pytest.fixture(autouse=True)
def no_interpreter_torch(monkeypatch, tmp_path):
    """The suite's own environment has a torch installed: only the project's files count."""
    real = torchversion._site_folders
    monkeypatch.setattr(
        torchversion,
        "_site_folders",
        lambda root: [f for f in real(root) if f.startswith(str(tmp_path))],
    )


@pytest.mark.parametrize(
    ("spec", "ceiling"),
    [
        ("<2.6", (2, 6)),
        ("<=2.5.1", (2, 5, 2)),
        (">=2.1,<2.6", (2, 6)),
        ("<3,<2.5", (2, 5)),
        ("==2.5.1", (2, 5, 2)),
        ("==2.5.*", None),  # a prefix: any 2.5 release, still below 2.6 but not read here
        (">=2.1", None),
        ("", None),
    ],
)
def test_the_ceiling_of_a_specifier(spec: str, ceiling):
    assert ceiling_torch(spec) == ceiling


def _message(tmp_path, requirement: str) -> str:
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text(f"numpy\n{requirement}\n")
    script = tmp_path / "train.py"
    script.write_text(RESTORE)
    (finding,) = analyze_source(RESTORE, str(script), LintSettings(select=("TW023",))).findings
    return finding.message


@pytest.mark.parametrize("requirement", ["torch<2.6", "torch<=2.5.1", "torch>=2.1,<2.6"])
def test_an_upper_bound_below_2_6_keeps_torch_below_it(tmp_path, requirement: str):
    assert (
        f"(`{requirement}` in requirements.txt keeps torch below 2.6, where `weights_only` "
        "defaults to False)"
    ) in _message(tmp_path, requirement)


@pytest.mark.parametrize(
    ("requirement", "says"),
    [
        ("torch", "admits any version"),
        ("torch<3", "admits torch < 2.6"),  # an upper bound above 2.6 keeps nothing below it
        ("torch<=2.6", "admits torch < 2.6"),  # 2.6.0 itself is admitted
        ("torch>=2.1,<3", "admits torch < 2.6"),
    ],
)
def test_other_requirements_keep_their_wording(tmp_path, requirement: str, says: str):
    message = _message(tmp_path, requirement)
    assert f"(`{requirement}` in requirements.txt {says})" in message
    assert "keeps torch below 2.6" not in message
