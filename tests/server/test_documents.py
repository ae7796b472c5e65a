"""Unit tests of the server's text model: lines, encodings, edits and how findings follow them."""

from __future__ import annotations

import pytest
from lsprotocol import types
from torchward.analysis import (
    Applicability,
    Confidence,
    Edit,
    Evidence,
    Finding,
    Fix,
    Severity,
    Span,
)
from torchward.server.documents import Document, LineShift
from torchward.server.encoding import ColumnCodec, split_lines
from torchward.server.results import shift_findings
from torchward.server.suppression import suppression_edit


def change(start, end, text):
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(*start), types.Position(*end)), text=text
    )


def finding(line, column=4, end_column=9, fixes=True):
    span = Span(line, column, line, end_column)
    return Finding(
        "TW900",
        "print-call",
        Severity.WARNING,
        Confidence.HIGH,
        span,
        "m",
        evidence=(Evidence(Span(1, 0, 1, 3), "e"),),
        fixes=(Fix("f", Applicability.SAFE, (Edit(span, "log"),)),) if fixes else (),
    )


def test_lines_split_only_at_lsp_line_breaks():
    assert split_lines("a\r\nb\rc\nd\x0ce\u2028f") == ["a", "b", "c", "d\x0ce\u2028f"]
    assert split_lines("") == [""]
    assert split_lines("x\n") == ["x", ""]


@pytest.mark.parametrize("encoding, expected", [("utf-16", 4), ("utf-8", 7), ("utf-32", 3)])
def test_columns_convert_in_both_directions(encoding, expected):
    codec = ColumnCodec(encoding)
    line = "é𝛼x"
    assert codec.to_client(line, 3) == expected
    assert codec.from_client(line, expected) == 3
    assert codec.to_client(line, 99) == codec.units(line)  # clamped to the line


def test_a_position_inside_a_surrogate_pair_rounds_forward():
    assert ColumnCodec("utf-16").from_client("𝛼x", 1) == 1


def test_incremental_changes_apply_in_order_and_report_line_shifts():
    document = Document("file:///t.py", "a\nb\nc\n", 1)
    codec = ColumnCodec()
    shifts = document.apply_changes(
        [change((1, 0), (1, 0), "x\ny\n"), change((0, 0), (1, 0), "")], 3, codec
    )
    assert document.text == "x\ny\nb\nc\n"
    assert document.version == 3
    assert shifts == [LineShift(2, 2, 2, 0, 0), LineShift(1, 2, -1, 0, 0)]


def test_changes_on_crlf_and_non_ascii_lines_land_on_the_right_characters():
    document = Document("file:///t.py", "é𝛼 = 1\r\nx = 2\r\n", 1)
    document.apply_changes([change((0, 3), (0, 4), "b")], 2, ColumnCodec("utf-16"))
    assert document.text == "é𝛼b= 1\r\nx = 2\r\n"
    document.apply_changes([change((1, 0), (1, 1), "yy")], 3, ColumnCodec("utf-8"))
    assert document.lines == ["é𝛼b= 1", "yy = 2", ""]


def test_a_full_change_reports_the_changed_block_from_common_prefix_and_suffix():
    document = Document("file:///t.py", "a\nb\nc\nd\n", 1)
    (shift,) = document.apply_changes(
        [types.TextDocumentContentChangeWholeDocument(text="a\nX\nY\nc\nd\n")], 2, ColumnCodec()
    )
    assert (shift.first, shift.last, shift.delta) == (2, 2, 1)


def test_findings_below_an_edit_move_and_findings_above_stay():
    moved = shift_findings((finding(1), finding(5)), [LineShift(3, 3, 2, 0, 0)])
    assert [f.span.line for f in moved] == [1, 7]
    assert moved[1].fixes[0].edits[0].span.line == 7


def test_a_finding_on_an_edited_line_stays_but_loses_its_fixes():
    (kept,) = shift_findings((finding(3),), [LineShift(3, 3, 0, 12, 12)])
    assert kept.span.line == 3 and kept.fixes == ()


def test_a_finding_whose_code_was_replaced_or_deleted_is_dropped():
    assert shift_findings((finding(3),), [LineShift(3, 3, 0, 0, 20)]) == ()
    assert shift_findings((finding(3),), [LineShift(2, 4, -2, 0, 0)]) == ()


@pytest.mark.parametrize(
    "line, expected",
    [
        ("    x = f()", "    x = f()  # torchward: ignore[TW001]"),
        ("    x = f()   ", "    x = f()  # torchward: ignore[TW001]"),
        ("    x = f()  # noqa: E501", "    x = f()  # noqa: E501  # torchward: ignore[TW001]"),
        (
            "    x = f()  # torchward: ignore[TW002]",
            "    x = f()  # torchward: ignore[TW002, TW001]",
        ),
        ("    x = f()  # torchward: ignore[TW001]", None),
        ("    x = f()  # torchward: ignore", None),
        ("    x = f() + \\", None),
    ],
)
def test_suppression_comments_append_or_merge(line, expected):
    edit = suppression_edit(line, 1, "TW001")
    if expected is None:
        assert edit is None
    else:
        assert line[: edit.span.column] + edit.text + line[edit.span.end_column :] == expected
