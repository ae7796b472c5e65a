"""Hover with the rule's documentation; the GPU fit from the real estimator.

The stand-in rules server (fake_rules.py) replaces only the rules: estimates come from
torchward.estimator, so these figures are the estimator's, checked loosely (gpt2 has
124M parameters; the peak lies inside its interval and fits an 80 GB card).
"""

from __future__ import annotations

import asyncio

import pytest
from harness import fresh_uri, session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = """\
def train(model, loader):
    for x in loader:
        print(x)
"""
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
URI = "file:///work/project/train.py"


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
async def test_hover_on_a_flagged_range_shows_the_message_and_the_rule_documentation(
    client, editors
):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    await editor.diagnostics(uri)
    hover = await editor.hover(uri, types.Position(2, 10))
    outside = await editor.hover(uri, types.Position(0, 2))
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "**TW900** print-call — Stand-in rule: print() call." in hover.contents.value
    assert "[Explain TW900](" in hover.contents.value
    assert "print() in training code" not in hover.contents.value  # the editor shows it already
    assert hover.range == types.Range(types.Position(2, 8), types.Position(2, 13))
    assert outside is None


async def test_estimate_request_answers_the_estimators_figures_for_the_target_gpu():
    async with session("vscode-1.96", options={"targetGpu": "A100 80GB"}) as editor:
        editor.open(URI, GPT2)
        await editor.diagnostics(URI)
        answer = _plain(
            await editor.client.protocol.send_request_async("torchward/estimate", {"uri": URI})
        )
        missing = await editor.client.protocol.send_request_async(
            "torchward/estimate", {"uri": "file:///x.py"}
        )
    assert answer["status"] == "ok" and "A100" in answer["gpu"] and answer["verdict"] == "fits"
    low, high = answer["interval"]
    assert low <= answer["peak"] <= high and 0 < answer["percent"] < 100
    assert answer["model"] == "gpt2" and 120e6 < answer["params"] < 130e6
    assert _plain(answer["lines"]) == {"model": 9, "batch_size": 11, "mode": 15}
    assert _plain(answer["terms"])["weights"] > 0
    assert _plain(missing)["status"] == "error"


async def test_a_script_without_a_model_has_nothing_to_estimate(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.96")
    editor.open(uri, SCRIPT)
    await editor.diagnostics(uri)
    answer = _plain(
        await editor.client.protocol.send_request_async("torchward/estimate", {"uri": uri})
    )
    assert answer["status"] == "none" and answer["peak"] is None and answer["reason"]


async def _fits_for(editor, uri: str, count: int) -> list[dict]:
    for _ in range(500):
        fits = [_plain(f) for f in editor.client.gpu_fits if _plain(f)["uri"] == uri]
        if len(fits) >= count:
            return fits
        await asyncio.sleep(0.01)
    return [_plain(f) for f in editor.client.gpu_fits if _plain(f)["uri"] == uri]


async def test_gpu_fit_is_notified_once_per_document_until_the_gpu_changes(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.65")
    editor.open(uri, GPT2)
    await editor.diagnostics(uri)
    await _fits_for(editor, uri, 1)
    editor.type_text(uri, 0, 0, "\n")
    await editor.diagnostics(uri)
    await asyncio.sleep(0.1)
    fits = await _fits_for(editor, uri, 1)
    assert [(f["status"], f["gpu"]) for f in fits] == [("ok", None)], (
        "no GPU chosen: a peak, no verdict"
    )
    answer = await editor.command("torchward.selectGpu", "H100 80GB")
    assert _plain(answer)["status"] == "ok" and "H100" in _plain(answer)["name"]
    latest = (await _fits_for(editor, uri, 2))[-1]
    assert "H100" in latest["gpu"] and latest["verdict"] == "fits" and latest["percent"] > 0


async def test_selecting_an_unknown_gpu_is_refused_with_close_names():
    async with session("vscode-1.65", options={"targetGpu": "A100 80GB"}) as editor:
        editor.open(URI, GPT2)
        await editor.diagnostics(URI)
        await _fits_for(editor, URI, 1)
        answer = _plain(await editor.command("torchward.selectGpu", "A100 800GB"))
        await asyncio.sleep(0.2)
        assert answer["status"] == "error" and "did you mean" in answer["error"]
        assert len(await _fits_for(editor, URI, 1)) == 1


async def test_gpu_fit_says_disabled_when_the_estimator_is_switched_off():
    async with session("vscode-1.65", options={"estimator": False}) as editor:
        editor.open(URI, GPT2)
        await editor.diagnostics(URI)
        fits = await _fits_for(editor, URI, 1)
    assert [f["status"] for f in fits] == ["disabled"]


def _plain(value):
    """Custom messages arrive as pygls' generic objects; compare them as dicts."""
    if isinstance(value, dict) or value is None:
        return value
    if hasattr(value, "_asdict"):
        return value._asdict()
    return dict(vars(value))
