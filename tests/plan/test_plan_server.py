"""``torchward.plan`` in the editor: the command (``workspace/executeCommand``), the code lens
on the training entry and the hover table, with the real estimator and planner."""

from __future__ import annotations

import asyncio
import pathlib
import sys

import pytest
from lsprotocol import types

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "server"))

from harness import fresh_uri, session  # noqa: E402

pytestmark = pytest.mark.asyncio

GPT2 = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

BATCH_SIZE = 8


def main(dataset):
    model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
"""
LOOP_LINE = 11  # `for x, y in loader:`, 0-based: where the peak lens is


def _plain(value):
    """Answers arrive as pygls' generic (named-tuple) objects: compare them as plain data."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


async def _estimated(editor, uri: str) -> None:
    editor.open(uri, GPT2)
    await editor.diagnostics(uri)
    for _ in range(500):
        if any(_plain(f)["uri"] == uri for f in editor.client.gpu_fits):
            return
        await asyncio.sleep(0.01)


async def _lenses(editor, uri: str) -> list[types.CodeLens]:
    found = await editor.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri))
    )
    return list(found or [])


async def test_plan_command_lens_and_hover():
    async with session("vscode-1.96", options={"targetGpu": "A100 80GB"}) as editor:
        uri = fresh_uri()
        await _estimated(editor, uri)
        before = await _lenses(editor, uri)
        assert [lens.command.command for lens in before] == ["torchward.selectGpu"]
        answer = _plain(await editor.command("torchward.plan", uri))
        assert answer["status"] == "ok" and answer["plans"]
        first = answer["plans"][0]
        assert first["memory"]["verdict"] == "fits" and first["price"]["date"]
        assert answer["summary"].startswith(f"cheapest fit: {first['gpus']}× {first['gpu_name']}")
        assert "/h" in answer["summary"] and "s/step" in answer["summary"]
        lenses = await _lenses(editor, uri)
        (plan,) = [lens for lens in lenses if lens.command.command == "torchward.choosePlan"]
        assert plan.range.start.line == LOOP_LINE
        assert plan.command.title == answer["summary"]
        assert plan.command.command == "torchward.choosePlan"
        assert list(plan.command.arguments) == [uri, 1]
        hover = await editor.hover(uri, types.Position(LOOP_LINE, 4))
        text = hover.contents.value
        assert "**torchward plan**" in text and first["instance"] in text
        assert "modelled, not measured" in text
        elsewhere = await editor.hover(uri, types.Position(5, 0))
        assert elsewhere is None or "**torchward plan**" not in elsewhere.contents.value
        chosen = _plain(await editor.command("torchward.choosePlan", uri, 1))
        assert chosen["status"] == "ok" and chosen["gpu"] == first["instance"]
        assert chosen["remedies"] == first["remedies"]
        # the document is estimated again on the chosen instance; its old plan is gone
        for _ in range(500):
            fits = [_plain(f) for f in editor.client.gpu_fits if _plain(f)["uri"] == uri]
            if len(fits) >= 2:
                break
            await asyncio.sleep(0.01)
        assert first["gpu_name"].split()[1] in fits[-1]["gpu"]
        after = await _lenses(editor, uri)
        assert [lens.command.command for lens in after] == ["torchward.selectGpu"]


async def test_plan_without_an_estimate_says_why():
    async with session("neovim-0.7") as editor:
        answer = _plain(await editor.command("torchward.plan", "file:///nowhere.py"))
        choose = _plain(await editor.command("torchward.choosePlan", "file:///nowhere.py"))
    assert answer["status"] == "error" and answer["reason"]
    assert choose["status"] == "error" and "plan this document first" in choose["reason"]
