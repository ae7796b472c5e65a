"""Item 5 of issue 11 for every Python file: a file with no training run still tells the
editor why there is no estimate and what to do (a neutral status item in VS Code, the
statusline in Neovim), distinguishing a file without PyTorch from a PyTorch file that
trains nothing (a model definition, a data module)."""

from __future__ import annotations

import asyncio

import pytest
from harness import fresh_uri, session
from test_hover_and_estimates import _fits_for, _plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

NO_TORCH = (
    "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n"
)
MODEL_ONLY = """\
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, 10)

    def forward(self, x):
        return self.proj(x)
"""


async def _why(editor, uri: str) -> tuple[dict, str]:
    messages = editor.client.messages
    messages.clear()
    answer = _plain(await editor.command("torchward.whyNoJob", uri))
    for _ in range(200):
        if messages:
            break
        await asyncio.sleep(0.01)
    assert messages, "the reason is shown to the user"
    return answer, messages[0].message


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
@pytest.mark.parametrize(
    "text, reason, step",
    [
        (NO_TORCH, "this file does not use PyTorch", "nothing to do here"),
        (MODEL_ONLY, "no training run found in this file", "open the script that trains"),
    ],
    ids=["no-torch", "model-only"],
)
async def test_a_file_without_a_training_run_says_why_and_what_to_do(client, text, reason, step):
    async with session(client, options={"targetGpu": "A100 80GB"}) as editor:
        uri = fresh_uri("module")
        editor.open(uri, text)
        await editor.diagnostics(uri)
        (fit,) = await _fits_for(editor, uri, 1)
        assert fit["status"] == "none"
        assert fit["reason"].startswith(reason) and fit["hint"].startswith(step)
        answer, message = await _why(editor, uri)
        assert answer == {
            "uri": uri,
            "status": "none",
            "reason": fit["reason"],
            "hint": fit["hint"],
        }
        assert message == f"torchward: no training job — {fit['reason']}. Next step: {fit['hint']}."
