"""Every feature through standard LSP, for clients that only speak the protocol (eglot,
Helix, Sublime LSP, Zed): a command's result is *shown* (``window/showDocument`` or
``window/showMessage``), since such clients drop its return value; the hover's Explain
link is a file they can open; the GPU fit is a source action; selectGpu asks with
``window/showMessageRequest``."""

from __future__ import annotations

import asyncio
import pathlib

import pytest
from harness import fresh_uri, session
from pygls.uris import to_fs_path
from test_hover_and_estimates import GPT2, _fits_for

pytestmark = pytest.mark.asyncio

SCRIPT = "def train(model, loader):\n    for x in loader:\n        print(x)\n"


async def _until(predicate, timeout: float = 20.0):
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


async def test_explain_without_show_document_is_shown_as_a_message():
    async with session("neovim-0.7", client_name="Eglot", show_document=False) as editor:
        await editor.command("torchward.explain", "TW900")
        await _until(lambda: editor.client.messages)
        (message,) = editor.client.messages
        assert message.message.startswith("torchward: TW900 print-call: ")
        assert "TW900.md" in message.message, "where the full text is"
        assert not editor.client.shown_documents


async def test_explain_with_show_document_opens_the_rule_and_says_nothing_else():
    async with session("neovim-0.7", client_name="Eglot", show_document=True) as editor:
        await editor.command("torchward.explain", "TW900")
        await _until(lambda: editor.client.shown_documents)
        assert editor.client.shown_documents[0].uri.endswith("/TW900.md")
        assert not editor.client.messages


async def test_the_hover_links_explain_to_a_file_a_generic_client_can_open():
    async with session("neovim-0.7", client_name="Eglot") as editor:
        uri = fresh_uri()
        editor.open(uri, SCRIPT)
        (finding,) = await editor.diagnostics(uri)
        hover = (await editor.hover(uri, finding.range.start)).contents.value
        assert "command:" not in hover
        link = hover.split("[Explain TW900](", 1)[1].split(")", 1)[0]
        assert link.startswith("file://") and link.endswith("/TW900.md")
        assert pathlib.Path(to_fs_path(link)).read_text(encoding="utf-8").startswith("# TW900")


async def test_the_gpu_fit_is_a_source_action_whose_command_shows_the_breakdown():
    options = {"targetGpu": "A100 80GB"}
    async with session("neovim-0.7", client_name="Eglot", options=options) as editor:
        uri = fresh_uri()
        editor.open(uri, GPT2)
        await editor.diagnostics(uri)
        await _fits_for(editor, uri, 1)
        actions = await editor.code_actions(uri, [])
        (show,) = [a for a in actions if a.kind == "source.showGpuFit.torchward"]
        assert show.command.command == "torchward.showGpuFit"
        await editor.command(show.command.command, *show.command.arguments)
        await _until(lambda: editor.client.messages)
        text = editor.client.messages[-1].message
        assert "Peak ≈" in text and "A100 80GB" in text
    async with session(
        "neovim-0.7", client_name="Eglot", options=options, show_document=True
    ) as editor:
        uri = fresh_uri()
        editor.open(uri, GPT2)
        await editor.diagnostics(uri)
        await _fits_for(editor, uri, 1)
        await editor.command("torchward.showGpuFit", uri)
        await _until(lambda: editor.client.shown_documents)
        page = pathlib.Path(to_fs_path(editor.client.shown_documents[0].uri)).read_text()
        assert page.startswith("# torchward GPU fit") and "| weights |" in page


async def test_select_gpu_without_a_name_asks_with_a_message_request():
    async with session("neovim-0.7", client_name="Eglot") as editor:
        editor.client.answer_message_request = "H100 80GB"
        answer = await editor.command("torchward.selectGpu")
        (request,) = editor.client.message_requests
        assert "H100 80GB" in [a.title for a in request.actions]
        answer = answer if isinstance(answer, dict) else dict(answer._asdict())
        assert answer["status"] == "ok" and answer["gpu"] == "H100 80GB"
        editor.client.answer_message_request = None
        cancelled = await editor.command("torchward.selectGpu")
        cancelled = cancelled if isinstance(cancelled, dict) else dict(cancelled._asdict())
        assert cancelled["status"] == "cancelled" and cancelled["gpu"] == "H100 80GB"
