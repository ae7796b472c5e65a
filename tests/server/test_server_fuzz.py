"""Property, end to end: random edits of real training scripts never break the server.

Hypothesis types random fragments (incomplete statements, brackets, non-ASCII and astral
characters, line breaks) into the examples/ scripts through a running ``torchward lsp``
with the real engine, incrementally, as an editor would. After every sequence the server
must still answer, publish diagnostics for the final version, and keep every range
inside the edited document in the negotiated position units. Bounded to about 20 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib

import pytest
from harness import REAL_SERVER, fresh_uri, session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from torchward.server.encoding import split_lines

EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"
SCRIPTS = [(EXAMPLES / name).read_text() for name in ("bad_train.py", "good_train.py")]

pieces = st.sampled_from(
    ["", "x", "é", "𝛼", "\n", "(", ")", ":", "loss", "    ", "\t", "#", "def ", "'", "\\"]
)
edit = st.tuples(
    st.integers(0, 120),
    st.integers(0, 60),
    st.integers(0, 3),
    st.integers(0, 60),
    st.lists(pieces, max_size=5).map("".join),
)


@pytest.fixture(scope="module")
def running():
    """One real server (push client, UTF-16) for every example, on its own loop."""
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    editor = loop.run_until_complete(
        stack.enter_async_context(session("neovim-0.7", server=REAL_SERVER))
    )
    yield loop, editor
    loop.run_until_complete(stack.aclose())
    loop.close()


def _inside(editor, uri: str, line: int, column: int) -> types.Position:
    """The position at (line, code-point column), moved inside the client's text."""
    lines = split_lines(editor.texts[uri])
    line = min(line, len(lines) - 1)
    return editor.position(uri, line, min(column, len(lines[line])))


async def _type(editor, uri: str, script: str, edits) -> None:
    editor.open(uri, script)
    for line, column, extra, end_column, text in edits:
        # positions inside the document, as an editor sends them (the server rejects
        # others rather than clamping them: tests/server/test_text_sync.py)
        start = _inside(editor, uri, line, column)
        end = _inside(editor, uri, line + extra, end_column)
        if (end.line, end.character) < (start.line, start.character):
            start, end = end, start
        editor.edit(uri, [types.TextEdit(types.Range(start, end), text)])
    diagnostics = await editor.diagnostics(uri)
    lines = split_lines(editor.texts[uri])
    for diagnostic in diagnostics:
        start, end = diagnostic.range.start, diagnostic.range.end
        for position in (start, end):
            assert 0 <= position.line < len(lines), diagnostic
            assert 0 <= position.character <= editor.codec.units(lines[position.line]), diagnostic
        assert (start.line, start.character) <= (end.line, end.character), diagnostic
    hover = await asyncio.wait_for(editor.hover(uri, types.Position(0, 0)), 10)
    assert hover is None or hover.contents.value
    editor.close(uri)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(script=st.sampled_from(SCRIPTS), edits=st.lists(edit, min_size=1, max_size=8))
def test_random_edits_never_crash_the_server_and_ranges_stay_inside(running, script, edits):
    loop, editor = running
    loop.run_until_complete(_type(editor, fresh_uri("fuzz"), script, edits))
