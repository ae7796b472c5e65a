"""The Measure lens is shown only where torch imports in the interpreter the measurement
runs in; elsewhere the lens says how to install it (issue 30: a Measure that failed 0.7 s
after the click). Real interpreters: a virtual environment made here without torch, and
the interpreter running the tests."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import venv

import pytest
from harness import REAL_SERVER, session, uri_of
from lsprotocol import types
from torchward.server.profiling import INSTALL_TITLE, INSTALL_TORCH, MEASURE_TITLE
from torchward.server.torch_probe import CPU_INDEX, check, has_nvidia_gpu, install_command

# a training script with its own model class: the kind of file Measure is offered for
SCRIPT = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512))

    def forward(self, x):
        return self.body(x)


model = Net()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(100):
    x = torch.randn(32, 512)
    model(x).sum().backward()
    optimizer.step()
"""


@pytest.fixture(scope="module")
def without_torch(tmp_path_factory):
    """A real interpreter without torch: a fresh virtual environment (no pip, no packages)."""
    folder = tmp_path_factory.mktemp("venv-without-torch")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    return str(python)


def test_the_install_command_is_the_cpu_build_without_a_gpu():
    assert install_command("/v/bin/python", gpu=False) == (
        f"/v/bin/python -m pip install torch --index-url {CPU_INDEX}"
    )
    assert install_command("/v/bin/python", gpu=True) == "/v/bin/python -m pip install torch"
    assert install_command("/my env/python", gpu=True).startswith('"/my env/python" -m pip')


def test_the_probe_finds_torch_without_importing_it(without_torch, tmp_path, monkeypatch):
    assert check(without_torch).importable is False
    expected = importlib.util.find_spec("torch") is not None
    assert check(sys.executable).importable is expected
    assert check(str(tmp_path / "no-such-python")).importable is None  # no judgement
    # a torch.py in the working directory is not torch
    (tmp_path / "torch.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert check(without_torch).importable is False


async def _titles(editor, uri: str) -> list[tuple[str, str]]:
    lenses = await editor.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri))
    )
    return [(lens.command.title, lens.command.command) for lens in lenses or []]


async def _lenses_after_the_estimate(editor, uri: str) -> list[tuple[str, str]]:
    for _ in range(500):  # the peak lens shows once the estimate is in
        titles = await _titles(editor, uri)
        if any(title.startswith(("Peak", "torchward: no job")) for title, _ in titles):
            return titles
        await asyncio.sleep(0.02)
    raise AssertionError(f"no estimate lens: {titles}")


@pytest.mark.asyncio
async def test_without_torch_the_lens_says_how_to_install_it(without_torch, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHWARD_PROFILE_PYTHON", without_torch)  # the measurement's interpreter
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    uri = uri_of(script)
    async with session("neovim-0.7", server=REAL_SERVER, folders=[tmp_path]) as editor:
        editor.open(uri, SCRIPT)
        await editor.diagnostics(uri)
        titles = await _lenses_after_the_estimate(editor, uri)
        assert (INSTALL_TITLE, INSTALL_TORCH) in titles, titles
        assert not any(title == MEASURE_TITLE for title, _ in titles), titles
        # a generic client drops the command's answer: the server shows how to install
        answer = await editor.command(INSTALL_TORCH, uri)
        answer = answer if isinstance(answer, dict) else dict(vars(answer))
        assert answer["importable"] is False and answer["python"] == without_torch
        assert answer["command"] == install_command(without_torch, has_nvidia_gpu())
        (shown,) = [m.message for m in editor.client.messages]
        assert shown.startswith(f"torchward: Measure needs torch in {without_torch}.")
        assert answer["command"] in shown
        # quiet: the editor shows it itself (the VS Code extension, with a Copy button)
        await editor.command(INSTALL_TORCH, uri, {"quiet": True})
        assert len(editor.client.messages) == 1


@pytest.mark.asyncio
async def test_with_torch_the_lens_offers_measure(tmp_path, monkeypatch):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in this interpreter (the profile extra)")
    monkeypatch.delenv("TORCHWARD_PROFILE_PYTHON", raising=False)  # the server's own: has torch
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    uri = uri_of(script)
    async with session("neovim-0.7", server=REAL_SERVER, folders=[tmp_path]) as editor:
        editor.open(uri, SCRIPT)
        await editor.diagnostics(uri)
        titles = await _lenses_after_the_estimate(editor, uri)
        assert (MEASURE_TITLE, "torchward.measure") in titles, titles
        assert not any(command == INSTALL_TORCH for _, command in titles), titles
