"""Property: any sequence of edits keeps the text model exact and every range inside the document.

Random incremental edits (in UTF-16 or UTF-8 units, over ASCII, non-ASCII, astral and
CRLF text; positions past a line or the document are rejected, not clamped) are applied to the server's :class:`Document` and, independently, to a plain
string; the two must agree. Findings of the real engine on a training script are moved
through the same edits, and every range the diagnostics bridge then builds must lie
inside the edited document.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from torchward.analysis import (
    Confidence,
    Evidence,
    Finding,
    LintSettings,
    Severity,
    Span,
    analyze_source,
)
from torchward.server.diagnostics import diagnostics_for
from torchward.server.documents import Document, PositionOutOfRange
from torchward.server.encoding import ColumnCodec, split_lines
from torchward.server.results import AnalysisState, DocumentResult

TRAINING = """\
import torch
def train(model, loader, optimizer):
    losses = []  # pérdidas 𝛼
    for x, y in loader:\r
        loss = torch.nn.functional.cross_entropy(model(x), y)
        losses.append(loss)
        loss.backward()
"""
# the engine's findings, whatever they are today, plus fixed ones that span lines and
# end at a line's end, so that the property never holds vacuously
FINDINGS = analyze_source(TRAINING.replace("\r", ""), "t.py", LintSettings()).findings + (
    Finding(
        "TW900",
        "x",
        Severity.WARNING,
        Confidence.HIGH,
        Span(3, 4, 6, 27),
        "m",
        evidence=(Evidence(Span(2, 0, 2, 35), "e"),),
    ),
    Finding("TW901", "y", Severity.NOTE, Confidence.HIGH, Span(7, 8, 7, 23), "m"),
)

pieces = st.sampled_from(["", "x", "é", "𝛼", "\n", "\r\n", "(", "loss", "    ", "\t", "#"])
edit = st.tuples(
    st.integers(0, 12),
    st.integers(0, 90),
    st.integers(0, 3),
    st.integers(0, 40),
    st.lists(pieces, max_size=4).map("".join),
)


def _offset(text: str, line: int, units: int, codec: ColumnCodec) -> int:
    lines = split_lines(text)
    if line >= len(lines):
        return len(text)
    offset = 0
    for index in range(line):
        offset += len(lines[index])
        offset += 2 if text.startswith("\r\n", offset) else 1
    return offset + codec.from_client(lines[line], units)


def _inside(text: str, position: types.Position, codec: ColumnCodec) -> bool:
    lines = split_lines(text)
    return 0 <= position.line < len(lines) and 0 <= position.character <= codec.units(
        lines[position.line]
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.lists(edit, max_size=12), encoding=st.sampled_from(["utf-16", "utf-8"]))
def test_random_edits_keep_text_exact_and_ranges_inside_the_document(edits, encoding):
    codec = ColumnCodec(encoding)
    document = Document("file:///t.py", TRAINING, 1)
    state = AnalysisState(good=FINDINGS, result=DocumentResult(1, 0, FINDINGS))
    expected = TRAINING
    for version, (line, column, extra_lines, end_column, text) in enumerate(edits, start=2):
        start = types.Position(line, column)
        end = types.Position(line + extra_lines, end_column)
        if not (_inside(expected, start, codec) and _inside(expected, end, codec)) or (
            _offset(expected, end.line, end.character, codec)
            < _offset(expected, start.line, start.character, codec)
        ):
            # outside the text: rejected, never clamped (the copies would drift apart)
            change = types.TextDocumentContentChangePartial(
                range=types.Range(start, end), text=text
            )
            with pytest.raises(PositionOutOfRange):
                document.apply_changes([change], version, codec)
            assert document.text == expected
            continue
        begin = _offset(expected, start.line, start.character, codec)
        finish = max(_offset(expected, end.line, end.character, codec), begin)
        expected = expected[:begin] + text + expected[finish:]
        change = types.TextDocumentContentChangePartial(range=types.Range(start, end), text=text)
        state.follow(document.apply_changes([change], version, codec))
        assert document.text == expected
    lines = split_lines(document.text)
    assert len(state.result.findings) <= len(FINDINGS)
    for diagnostic in diagnostics_for(document, state.result, codec):
        for position in (diagnostic.range.start, diagnostic.range.end):
            assert 0 <= position.line < len(lines)
            assert 0 <= position.character <= codec.units(lines[position.line])
        assert (diagnostic.range.start.line, diagnostic.range.start.character) <= (
            diagnostic.range.end.line,
            diagnostic.range.end.character,
        )
