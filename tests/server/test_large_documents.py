"""Documents over ``largeFileLines``: analysed when opened and saved, not as you type.

The real server over LSP, with the stand-in rules (TW900 print, TW901 breakpoint) and a
limit of a few lines, for a pushing client, a pulling client that can be refreshed and
one that cannot: every pull is answered at once with the findings moved by the edits,
nothing typed is analysed until the file is saved, and the user is told why.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from harness import TIMEOUT_S, fresh_uri, session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIMIT = 6
LARGE = """\
def train(model, loader):
    for x in loader:
        print(x)
        model(x)


def evaluate(model, loader):
    for x in loader:
        model(x)
"""
SMALL = "def f(x):\n    print(x)\n"
CLIENTS = ["vscode-1.65", "vscode-1.96", "neovim-0.11"]  # push, pull + refresh, pull


def _findings(diagnostics) -> list[tuple[str, int]]:
    return sorted((str(d.code), d.range.start.line) for d in diagnostics if d.code)


def _notices(diagnostics) -> list[types.Diagnostic]:
    return [d for d in diagnostics if (d.data or {}).get("problem") == "analysed-on-save"]


def _save(editor, uri: str) -> None:
    editor.client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri), editor.texts[uri])
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editors_with_limit():
    sessions = {}
    async with session(CLIENTS[0], options={"largeFileLines": LIMIT}) as push:
        sessions[CLIENTS[0]] = push
        async with session(CLIENTS[1], options={"largeFileLines": LIMIT}) as pull:
            sessions[CLIENTS[1]] = pull
            async with session(CLIENTS[2], options={"largeFileLines": LIMIT}) as plain:
                sessions[CLIENTS[2]] = plain
                yield sessions


@pytest.mark.parametrize("client", CLIENTS)
async def test_edits_move_the_findings_and_only_saving_analyses(client, editors_with_limit):
    editor = editors_with_limit[client]
    uri = fresh_uri("large")
    editor.open(uri, LARGE)
    opened = await editor.diagnostics(uri)
    assert _findings(opened) == [("TW900", 2)]
    (notice,) = _notices(opened)
    assert notice.severity == types.DiagnosticSeverity.Information
    assert "analysed when you save" in notice.message and "largeFileLines" in notice.message
    assert notice.range.start.line == 0

    # two lines above the finding, one of them a new finding: the old one moves, the new
    # one is not found until the file is saved
    editor.type_text(uri, 0, 0, "breakpoint()\n\n")
    typed = await editor.diagnostics(uri)
    assert _findings(typed) == [("TW900", 4)]
    assert len(_notices(typed)) == 1
    for _ in range(3):  # every later keystroke too: answered at once, nothing re-analysed
        editor.type_text(uri, 1, 0, "#")
        assert _findings(await editor.diagnostics(uri)) == [("TW900", 4)]

    _save(editor, uri)
    saved = await _until(editor, uri, lambda d: ("TW901", 0) in _findings(d))
    assert _findings(saved) == [("TW900", 4), ("TW901", 0)]
    assert len(_notices(saved)) == 1


@pytest.mark.parametrize("client", CLIENTS)
async def test_a_small_document_is_analysed_as_you_type(client, editors_with_limit):
    editor = editors_with_limit[client]
    uri = fresh_uri("small")
    editor.open(uri, SMALL)
    opened = await editor.diagnostics(uri)
    assert _findings(opened) == [("TW900", 1)] and not _notices(opened)
    editor.type_text(uri, 0, 0, "breakpoint()\n")
    typed = await editor.diagnostics(uri)
    assert _findings(typed) == [("TW900", 2), ("TW901", 0)] and not _notices(typed)


async def test_the_user_is_told_once_per_document(editors_with_limit):
    editor = editors_with_limit["vscode-1.65"]
    uri = fresh_uri("told")
    editor.open(uri, LARGE)
    await editor.diagnostics(uri)
    for _ in range(3):
        editor.type_text(uri, 0, 0, "#\n")
        await editor.diagnostics(uri)
    name = uri.rsplit("/", 1)[-1]
    shown = [m for m in editor.client.messages if name in m.message]
    assert len(shown) == 1
    assert shown[0].type == types.MessageType.Info
    assert "analysed when you save" in shown[0].message


@pytest.mark.parametrize("client", CLIENTS)
async def test_typing_before_the_first_analysis_lands_still_gets_it(client, editors_with_limit):
    """The analysis started by opening is overtaken by edits at once: its findings are
    moved through them and shown for the newest version, never dropped."""
    editor = editors_with_limit[client]
    uri = fresh_uri("overtaken")
    editor.open(uri, LARGE)
    for _ in range(5):
        editor.type_text(uri, 0, 0, "\n")
    assert _findings(await editor.diagnostics(uri)) == [("TW900", 7)]


async def test_the_limit_is_a_setting_and_zero_turns_it_off():
    async with session("vscode-1.65", options={"largeFileLines": 0}) as editor:
        uri = fresh_uri("unlimited")
        editor.open(uri, LARGE)
        assert not _notices(await editor.diagnostics(uri))
        editor.type_text(uri, 0, 0, "breakpoint()\n")
        typed = await editor.diagnostics(uri)
        assert _findings(typed) == [("TW900", 3), ("TW901", 0)]


async def test_a_bad_limit_is_reported_and_the_default_used():
    async with session("vscode-1.65", options={"largeFileLines": -3}) as editor:
        uri = fresh_uri("badlimit")
        editor.open(uri, LARGE)
        await editor.diagnostics(uri)
        assert any("largeFileLines" in m.message for m in editor.client.messages)


async def _until(editor, uri, condition):
    """The diagnostics of the current version once ``condition`` holds (a save does not
    change the version: push clients get a second publish for it, pull clients re-pull)."""

    async def wait():
        while True:
            diagnostics = await editor.diagnostics(uri)
            if condition(diagnostics):
                return diagnostics
            await asyncio.sleep(0.02)

    return await asyncio.wait_for(wait(), TIMEOUT_S)
