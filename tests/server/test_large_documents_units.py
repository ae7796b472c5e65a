"""Units of the on-save mode (server/onsave.py): the edit log, catching an overtaken
analysis up, and the size policy."""

from __future__ import annotations

import attrs
from lsprotocol import types
from torchward.analysis import Confidence, FileReport, Finding, LintSettings, Severity, Span
from torchward.server.configuration import DEFAULT_LARGE_FILE_LINES, settings_from_wire
from torchward.server.documents import MAX_LOGGED_EDITS, Document, EditLog
from torchward.server.encoding import ColumnCodec
from torchward.server.onsave import ON_SAVE, catch_up, is_large, snapshot_fields
from torchward.server.scheduler import Outcome, Snapshot

TEXT = "a = 1\nb = 2\nprint(b)\n"


def _insert_line_at_top(document: Document, version: int) -> None:
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="# new\n"
    )
    document.apply_changes([change], version, ColumnCodec())


def _outcome(document: Document, version: int, generation: int = 0) -> Outcome:
    finding = Finding(
        "TW900", "print", Severity.WARNING, Confidence.HIGH, Span(3, 0, 3, 8), "print here"
    )
    snapshot = Snapshot(
        "file:///x.py",
        "/x.py",
        version,
        generation,
        TEXT,
        LintSettings(),
        **snapshot_fields(document, limit=2),
    )
    return Outcome(snapshot, FileReport("/x.py", (finding,)), None, 0.1)


def test_the_edit_log_returns_the_shifts_after_a_version():
    document = Document("file:///x.py", TEXT, 1)
    _insert_line_at_top(document, 2)
    _insert_line_at_top(document, 3)
    assert [s.delta for s in document.edits.shifts_after(1)] == [1, 1]
    assert [s.delta for s in document.edits.shifts_after(2)] == [1]
    assert document.edits.shifts_after(3) == []
    assert document.edits.shifts_after(0) is None  # before the document was opened


def test_the_edit_log_is_bounded_and_knows_how_far_back_it_reaches():
    log = EditLog(0)
    for version in range(1, MAX_LOGGED_EDITS + 2):
        log.record(version, [])
    assert log.floor > 0
    assert log.shifts_after(log.floor - 1) is None
    assert log.shifts_after(log.floor) == []


def test_replacing_the_text_without_a_version_restarts_the_log():
    document = Document("file:///x.py", TEXT, 4)
    _insert_line_at_top(document, 5)
    document.replace_text("x = 1\n" + TEXT)
    assert document.edits.shifts_after(4) is None


def test_an_overtaken_analysis_is_moved_to_the_current_version():
    document = Document("file:///x.py", TEXT, 1)
    outcome = _outcome(document, 1)
    _insert_line_at_top(document, 2)
    _insert_line_at_top(document, 3)
    caught_up = catch_up(outcome, (3, 0))
    assert caught_up is not None and caught_up.carried
    assert caught_up.snapshot.version == 3
    assert [f.span.line for f in caught_up.report.findings] == [5]


def test_an_overtaken_analysis_is_not_moved_across_a_settings_change_or_when_small():
    document = Document("file:///x.py", TEXT, 1)
    outcome = _outcome(document, 1)
    _insert_line_at_top(document, 2)
    assert catch_up(outcome, (2, 1)) is None  # another generation: its own analysis follows
    assert catch_up(outcome, None) is None  # closed
    small = attrs.evolve(outcome, snapshot=attrs.evolve(outcome.snapshot, on_save=None))
    assert catch_up(small, (2, 0)) is None  # analysed as you type: the newest text is


def test_the_size_policy_and_its_notice():
    assert is_large(25_001, 25_000) and not is_large(25_000, 25_000)
    assert not is_large(10**6, 0)  # 0: never
    document = Document("file:///x.py", TEXT, 1)
    assert snapshot_fields(document, limit=2)["on_save"].kind == ON_SAVE
    assert snapshot_fields(document, limit=4)["on_save"] is None  # LSP: 4 lines, the last empty


def test_the_limit_setting_is_validated():
    settings, errors = settings_from_wire({"largeFileLines": 100})
    assert settings.large_file_lines == 100 and not errors
    for bad in (-1, "many", 1.5, True):
        settings, errors = settings_from_wire({"largeFileLines": bad})
        assert settings.large_file_lines == DEFAULT_LARGE_FILE_LINES and len(errors) == 1
