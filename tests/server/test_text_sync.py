"""The server's copy of a document equals the client's after every edit, through the real server.

Random incremental edits — with form feeds, U+2028/U+2029, the other characters
``str.splitlines`` wrongly breaks at (``\\x1c``-``\\x1e``, ``\\x85``), lone ``\\r``,
``\\r\\n``, surrogate pairs and combining marks — are sent to ``torchward lsp`` over
stdio by clients negotiating UTF-16 (pull and push), UTF-8 and UTF-32 positions. After
every ``didChange`` the test asks the server for its text (``torchward/documentState``)
and compares it with its own; at the end of each sequence every diagnostic range must lie
inside the client's document.

The client's model here is written independently of the server's code (its own line
splitting and unit counting), so a shared mistake cannot hide. An edit outside the
document is rejected, never clamped: the document is set aside with an error logged and
its diagnostics cleared, and the next whole text resynchronises it.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from harness import REAL_SERVER, TIMEOUT_S, fresh_uri, session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOCUMENT_STATE = "torchward/documentState"

START = (
    "import torch\x0c\n"
    "# pérdidas 𝛼 e\u0301\u2028 still the comment line\n"
    "def train(model, loader, optimizer):\r\n"
    "    losses = []\x1c\x1d\x1e\x85 \u2029\r"
    "    for x, y in loader:\n"
    "        loss = torch.nn.functional.cross_entropy(model(x), y)  # 🔥\n"
    "        losses.append(loss)\n"
    "        loss.backward()\n"
)
PIECES = [
    "",
    "x",
    "é",
    "e\u0301",  # a combining mark: two code points, one glyph
    "𝛼",  # astral: a surrogate pair in UTF-16, four bytes in UTF-8
    "🔥",
    "\x0c",
    "\u2028",
    "\u2029",
    "\x1c",
    "\x1e",
    "\x85",
    "\r",
    "\n",
    "\r\n",
    "\t",
    "    ",
    "loss",
    "(",
    "#",
    "print(x)\n",
]


# -- the client's model, independent of torchward.server.encoding ---------------------
def line_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each line without its terminator: only \\n, \\r\\n, \\r end one."""
    bounds, start, index = [], 0, 0
    while index < len(text):
        char = text[index]
        if char == "\r" or char == "\n":
            bounds.append((start, index))
            index += 2 if text.startswith("\r\n", index) else 1
            start = index
        else:
            index += 1
    bounds.append((start, len(text)))
    return bounds


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def position_of(text: str, offset: int, encoding: str) -> types.Position:
    for number, (start, end) in enumerate(line_bounds(text)):
        if start <= offset <= end:
            return types.Position(number, units(text[start:offset], encoding))
    raise AssertionError("offset inside a line terminator")


def offset_of(text: str, position: types.Position, encoding: str) -> int:
    start, end = line_bounds(text)[position.line]
    offset, consumed = start, 0
    while consumed < position.character:
        consumed += units(text[offset], encoding)
        offset += 1
    assert consumed == position.character and offset <= end
    return offset


def valid_offsets(text: str) -> list[int]:
    """Offsets that are positions: not between the \\r and \\n of one terminator."""
    return [
        offset
        for offset in range(len(text) + 1)
        if not (0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n")
    ]


# one edit: where (fractions of the valid offsets, so they fit any text) and what
edits = st.tuples(
    st.floats(0, 1), st.floats(0, 1), st.lists(st.sampled_from(PIECES), max_size=3).map("".join)
)
# one didChange: one to three edits, applied in order (each against the previous result)
notifications = st.lists(edits, min_size=1, max_size=3)


def pick(text: str, fraction: float) -> int:
    offsets = valid_offsets(text)
    return offsets[min(int(fraction * len(offsets)), len(offsets) - 1)]


async def server_state(editor, uri: str) -> dict:
    state = await asyncio.wait_for(
        editor.client.protocol.send_request_async(DOCUMENT_STATE, {"uri": uri}), TIMEOUT_S
    )
    return state._asdict() if hasattr(state, "_asdict") else state  # pygls answers an Object


async def run_edits(editor, encoding: str, script) -> None:
    uri = fresh_uri("sync")
    text, version = START, 1
    editor.open(uri, text)
    editor.texts[uri] = text
    for changes in script:
        sent = []
        for first, second, new_text in changes:
            start, end = sorted((pick(text, first), pick(text, second)))
            change_range = types.Range(
                position_of(text, start, encoding), position_of(text, end, encoding)
            )
            assert offset_of(text, change_range.start, encoding) == start
            text = text[:start] + new_text + text[end:]
            sent.append(types.TextDocumentContentChangePartial(range=change_range, text=new_text))
        version += 1
        editor.texts[uri], editor.versions[uri] = text, version
        editor.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri), sent
            )
        )
        state = await server_state(editor, uri)
        assert state["inSync"], "the server rejected an edit that was inside the document"
        assert (state["version"], state["text"]) == (version, text)
        assert state["lineCount"] == len(line_bounds(text))
    bounds = line_bounds(text)
    for diagnostic in await editor.diagnostics(uri):
        for position in (diagnostic.range.start, diagnostic.range.end):
            assert 0 <= position.line < len(bounds), diagnostic
            start, end = bounds[position.line]
            assert 0 <= position.character <= units(text[start:end], encoding), diagnostic
    editor.close(uri)


CLIENTS = {
    "utf-16-pull": ("vscode-1.96", None),
    "utf-16-push": ("vscode-1.65", None),
    "utf-8-pull": ("neovim-0.11", ["utf-8"]),
    "utf-32-push": ("neovim-0.7", ["utf-32"]),
}


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(CLIENTS))
async def client(request):
    name, encodings = CLIENTS[request.param]
    async with session(name, server=REAL_SERVER, position_encodings=encodings) as editor:
        encoding = str(getattr(editor.codec, "encoding", "utf-16"))
        assert encoding == (encodings[0] if encodings else "utf-16")
        yield editor, encoding


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=st.lists(notifications, min_size=1, max_size=12))
async def test_the_servers_text_equals_the_clients_after_every_edit(client, script):
    editor, encoding = client
    await run_edits(editor, encoding, script)


async def test_an_edit_outside_the_document_is_rejected_and_the_next_full_text_resyncs(client):
    editor, encoding = client
    uri = fresh_uri("lost")
    text = "print(1)\nx = 'é𝛼'\n"
    editor.open(uri, text)
    await editor.diagnostics(uri)
    lines = len(line_bounds(text))
    bad = [
        types.Range(types.Position(lines, 0), types.Position(lines, 0)),  # past the last line
        types.Range(types.Position(1, 40), types.Position(1, 40)),  # past the end of line 1
    ]
    for index, change_range in enumerate(bad):
        editor.versions[uri] += 1
        editor.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=editor.versions[uri], uri=uri),
                [types.TextDocumentContentChangePartial(range=change_range, text="zz")],
            )
        )
        state = await server_state(editor, uri)
        assert state["inSync"] is False and state["text"] == text  # not clamped, not applied
        assert any(
            m.type == types.MessageType.Error and "out of sync" in m.message and uri in m.message
            for m in editor.client.log_messages
        )
        assert any("lost track of the text" in m.message for m in editor.client.messages)
        assert await editor.diagnostics(uri) == []
        # a whole text (here: a save with its text, then a full change) brings it back
        if index == 0:
            editor.client.text_document_did_save(
                types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri), text=text)
            )
        else:
            editor.replace_all(uri, text)
        state = await server_state(editor, uri)
        assert state["inSync"] is True and state["text"] == text
    editor.type_text(uri, 1, 0, "y = 1\n")
    state = await server_state(editor, uri)
    assert state["text"] == editor.texts[uri] and state["version"] == editor.versions[uri]
