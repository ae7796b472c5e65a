"""Hover with the rule's documentation; the GPU-fit seam while there is no estimator."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from harness import fresh_uri, session

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = """\
def train(model, loader):
    for x in loader:
        print(x)
"""
URI = "file:///work/project/train.py"


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
async def test_hover_on_a_flagged_range_shows_the_message_and_the_rule_documentation(client, editors):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    await editor.diagnostics(uri)
    hover = await editor.hover(uri, types.Position(2, 10))
    outside = await editor.hover(uri, types.Position(0, 2))
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "**TW900**" in hover.contents.value
    assert "# TW900 print-call" in hover.contents.value
    assert "print() in training code" in hover.contents.value
    assert hover.range == types.Range(types.Position(2, 8), types.Position(2, 13))
    assert outside is None


async def test_estimate_request_answers_unavailable_without_inventing_numbers():
    async with session("vscode-1.96", options={"targetGpu": "A100 80GB"}) as editor:
        editor.open(URI, SCRIPT)
        await editor.diagnostics(URI)
        answer = await editor.client.protocol.send_request_async("torchward/estimate", {"uri": URI})
        missing = await editor.client.protocol.send_request_async("torchward/estimate", {"uri": "file:///x.py"})
    answer = _plain(answer)
    assert answer["status"] == "unavailable" and answer["gpu"] == "A100 80GB"
    assert answer["peak"] is None and answer["interval"] is None and answer["percent"] is None
    assert answer["reason"]
    assert _plain(missing)["status"] == "error"


async def test_gpu_fit_is_notified_once_per_document_until_the_estimate_changes(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.65")
    editor.open(uri, SCRIPT)
    await editor.diagnostics(uri)
    editor.type_text(uri, 0, 0, "\n")
    await editor.diagnostics(uri)
    await asyncio.sleep(0.05)
    fits = [_plain(f) for f in editor.client.gpu_fits]
    assert [(f["uri"], f["status"]) for f in fits] == [(uri, "unavailable")]
    answer = await editor.command("torchward.selectGpu", "H100 80GB")
    assert answer == {"gpu": "H100 80GB", "status": "unavailable"}
    for _ in range(200):
        if len(editor.client.gpu_fits) == 2:
            break
        await asyncio.sleep(0.01)
    latest = _plain(editor.client.gpu_fits[-1])
    assert latest["gpu"] == "H100 80GB" and latest["status"] == "unavailable"


async def test_gpu_fit_says_disabled_when_the_estimator_is_switched_off():
    async with session("vscode-1.65", options={"estimator": False}) as editor:
        editor.open(URI, SCRIPT)
        await editor.diagnostics(URI)
        await asyncio.sleep(0.05)
    assert [_plain(f)["status"] for f in editor.client.gpu_fits] == ["disabled"]


def _plain(value):
    """Custom messages arrive as pygls' generic objects; compare them as dicts."""
    if isinstance(value, dict):
        return value
    if hasattr(value, "_asdict"):
        return value._asdict()
    return dict(vars(value))
