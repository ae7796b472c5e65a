"""Editing a helper module re-lints the open training script that imports it.

The real server (``python -m torchward.server``) over LSP: ``train.py`` calls
``train_step`` from ``helpers.py`` in its loop. Whether that loop resets the gradients is
decided by the helper's text, so the script's TW003 must appear and disappear as the
helper is edited in the editor (unsaved), and again when the helper changes on disk
(``workspace/didChangeWatchedFiles``) — the script itself is never touched.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from harness import REAL_SERVER, TIMEOUT_S, session, uri_of
from lsprotocol import types

pytestmark = pytest.mark.asyncio

HELPERS = """\
import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def train_step(model, inputs, targets, optimizer):
    loss = criterion(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()
"""
RESETTING = HELPERS.replace(
    "    loss.backward()\n", "    optimizer.zero_grad()\n    loss.backward()\n"
)
TRAIN = """\
import torch

from helpers import train_step


def main(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for inputs, targets in loader:
        train_step(model, inputs, targets, optimizer)
"""


async def _codes_become(editor, uri: str, wanted: bool) -> set[str]:
    """The codes of ``uri`` once TW003 is (``wanted``) or is not shown, pushed or pulled."""
    deadline = time.monotonic() + TIMEOUT_S
    codes: set[str] = set()
    while time.monotonic() < deadline:
        if editor.pulls:
            report = await editor.pull(uri)
            codes = {d.code for d in report.items}
        else:
            published = editor.client.published.get(uri)
            codes = {d.code for d in published.diagnostics} if published else set()
        if ("TW003" in codes) is wanted:
            return codes
        await asyncio.sleep(0.02)
    raise AssertionError(f"TW003 {'never appeared' if wanted else 'stayed'}: {sorted(codes)}")


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
async def test_editing_the_helper_relints_the_open_script(client, tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(TRAIN)
    train, helpers = uri_of(tmp_path / "train.py"), uri_of(tmp_path / "helpers.py")
    async with session(client, server=REAL_SERVER, folders=[tmp_path]) as editor:
        editor.open(train, TRAIN)
        await _codes_become(editor, train, wanted=True)

        editor.open(helpers, HELPERS)
        editor.replace_all(helpers, RESETTING)  # typed, not saved
        await _codes_become(editor, train, wanted=False)

        editor.replace_all(helpers, HELPERS)  # typed back
        await _codes_become(editor, train, wanted=True)

        editor.close(helpers)  # back to the disk text (which never reset)
        (tmp_path / "helpers.py").write_text(RESETTING)  # changed on disk by another tool
        editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(helpers, types.FileChangeType.Changed)]
            )
        )
        await _codes_become(editor, train, wanted=False)
        assert editor.texts[train] == TRAIN  # the script was never edited


MODELS = """\
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3)
        self.head = nn.Linear(16, 10)


MODELS = {"backbone": Backbone}
"""


async def test_the_workspace_index_lists_models_and_registries(tmp_path):
    """``torchward/workspaceIndex`` shows what importers can use: nn.Module classes with
    the submodules they register, and registries with their keys."""
    (tmp_path / "models.py").write_text(MODELS)
    async with session(
        "vscode-1.96", server=REAL_SERVER, folders=[tmp_path], options={"workspaceScan": "index"}
    ) as editor:
        answer = await asyncio.wait_for(
            editor.client.protocol.send_request_async("torchward/workspaceIndex", {"wait": True}),
            TIMEOUT_S,
        )
        (entry,) = [f for f in answer.files if f.module == "models"]
        assert [(m.name, list(m.submodules)) for m in entry.models] == [
            ("Backbone", ["stem", "head"])
        ]
        assert {name: list(keys) for name, keys in entry.registries._asdict().items()} == {
            "MODELS": ["backbone"]
        }
