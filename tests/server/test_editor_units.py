"""Units behind issue 11: the log the editor shows, the wire form of diagnostics, and
findings that an edit cannot touch staying as they are."""

from __future__ import annotations

import logging

from lsprotocol import types
from torchward.analysis import Confidence, Finding, Severity, Span
from torchward.server.diagnostics import WireDiagnostic, wire_converter
from torchward.server.documents import LineShift
from torchward.server.launcher import EDITOR_FORMAT, FILE_FORMAT, BenignRaces
from torchward.server.results import shift_findings


def _record(message: str, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("pygls.protocol.json_rpc", level, __file__, 1, message, ("7",), None)


def test_the_cancel_race_warning_is_dropped_and_other_warnings_are_kept():
    races = BenignRaces()
    assert not races.filter(_record('Cancel notification for unknown message id "%s"'))
    assert races.filter(_record("Error sending data"))
    assert races.filter(_record('Cancel notification for unknown message id "%s"', logging.ERROR))


def test_an_editor_stamps_the_time_itself_a_log_file_gets_it_from_us():
    assert "asctime" not in EDITOR_FORMAT and "asctime" in FILE_FORMAT


def test_a_wire_diagnostic_is_sent_as_its_precomputed_form_and_an_echo_with_int_severity_too():
    converter = wire_converter()
    start = types.Range(types.Position(0, 0), types.Position(0, 1))
    wire = {"range": "precomputed", "message": "m"}
    sent = WireDiagnostic(range=start, message="m", wire=wire)
    params = types.PublishDiagnosticsParams("file:///a.py", [sent], 1)
    assert converter.unstructure(params)["diagnostics"] == [wire]
    echoed = types.Diagnostic(range=start, message="m", severity=2)  # structured as a plain int
    assert converter.unstructure(echoed)["severity"] == 2


def _finding(line: int) -> Finding:
    return Finding(
        "TW900", "print-call", Severity.WARNING, Confidence.HIGH, Span(line, 4, line, 9), "m"
    )


def test_findings_an_edit_cannot_touch_are_kept_as_the_same_objects():
    before, at, after = _finding(2), _finding(5), _finding(9)
    same_line_count = shift_findings((before, at, after), [LineShift(5, 5, 0, 0, 1)])
    assert same_line_count[0] is before and same_line_count[2] is after
    inserted = shift_findings((before, at, after), [LineShift(5, 5, 1, 0, 0)])
    assert inserted[0] is before and inserted[2].span.line == 10
    untouched = (before,)
    assert shift_findings(untouched, [LineShift(7, 7, 3, 0, 0)]) is untouched
