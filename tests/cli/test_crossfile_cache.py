"""``torchward check`` over a project: its cache records the modules each result read.

A script's findings depend on the helper modules it imports (their text is analysed at
its calls), so a cached result of ``train.py`` must be recomputed when ``helpers.py``
changes, when a module an import names is created (its absence was read too), and when
one is deleted — and only then: a module the script does not import changes nothing.
After every edit the cached run prints exactly what a ``--no-cache`` run prints.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from torchward.cli import main

FIXTURE = Path(__file__).parents[1] / "analysis" / "fixtures" / "crossfile" / "project"
LOSSES = """\
import torch.nn.functional as F


def weighted_loss(model, inputs, targets):
    return F.cross_entropy(model(inputs).softmax(dim=1), targets)
"""
TRAIN_WITH_LOSSES = """\
import torch

from losses import weighted_loss
from models import Classifier


def fit(loader):
    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for inputs, targets in loader:
        optimizer.zero_grad()
        weighted_loss(model, inputs, targets).backward()
        optimizer.step()
"""
# (file, new text or None to delete, whether the report changes), applied in order
EDITS = [
    ("helpers.py", "zero_grad", True),  # the helper resets: the script's TW003 goes
    ("finetune.py", TRAIN_WITH_LOSSES, False),  # a correct loop; its loss module is absent
    ("losses.py", LOSSES, True),  # ... created: its softmax before cross_entropy is found
    ("losses.py", None, True),  # ... deleted again
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    # the project declares torch >= 2.6, so train.py's implicit torch.load is no finding and
    # no scan of the project's modules for its writer: without it the installed torch
    # decides, and where none is installed every new module is (rightly) read for a save
    (root / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\ndependencies = ['torch>=2.6']\n"
    )
    monkeypatch.chdir(root)
    monkeypatch.delenv("TORCHWARD_CACHE_DIR", raising=False)
    return root


def _run(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["check", ".", "--format", "json", "--exit-zero", *args])
    return out.getvalue()


def _apply(root: Path, name: str, text: str | None) -> None:
    path = root / name
    if text is None:
        path.unlink()
    elif text == "zero_grad":
        path.write_text(
            path.read_text().replace(
                "    loss.backward()\n", "    optimizer.zero_grad()\n    loss.backward()\n"
            )
        )
    else:
        path.write_text(text)


def test_cached_runs_follow_every_module_a_result_read(project: Path):
    previous = _run()
    assert '"TW003"' in previous
    for name, text, changes in EDITS:
        _apply(project, name, text)
        cached, fresh = _run(), _run("--no-cache")
        assert cached == fresh, f"stale cached result after editing {name}"
        assert (fresh != previous) is changes, f"editing {name}: the report changed: {changes}"
        previous = fresh
    codes = {(Path(f["path"]).name, f["code"]) for f in json.loads(previous)}
    assert ("train.py", "TW003") not in codes


def test_a_module_nobody_imports_invalidates_nothing(project: Path, analysed: list[str]):
    _run()
    analysed.clear()
    (project / "notes.py").write_text("print('not imported')\n")
    _run()
    assert analysed == ["notes.py"]
    _apply(project, "helpers.py", "zero_grad")
    _run()
    assert sorted(analysed[1:]) == ["helpers.py", "train.py"]  # and not models.py, data.py
