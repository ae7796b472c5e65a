"""A file shows at most one note by default (issue 14: notes are advice, never noise)."""

from pathlib import Path

from torchward.analysis.engine import analyze_source
from torchward.analysis.finding import Severity
from torchward.analysis.settings import LintSettings

BAD = Path(__file__).resolve().parents[2] / "examples" / "bad_train.py"


def _notes(settings: LintSettings) -> list[tuple[int, str]]:
    report = analyze_source(BAD.read_text(), str(BAD), settings)
    return [(f.span.line, f.code) for f in report.findings if f.severity is Severity.NOTE]


def test_only_the_first_note_of_a_file_is_shown_by_default():
    every = _notes(LintSettings(notes_per_file=None))
    assert len(every) >= 2, "bad_train.py is expected to carry several notes"
    assert _notes(LintSettings()) == every[:1]


def test_warnings_and_errors_are_never_capped():
    def loud(settings: LintSettings) -> list[tuple[int, str]]:
        report = analyze_source(BAD.read_text(), str(BAD), settings)
        return [(f.span.line, f.code) for f in report.findings if f.severity is not Severity.NOTE]

    assert loud(LintSettings()) == loud(LintSettings(notes_per_file=None))


def test_selecting_a_code_shows_its_note_even_when_another_came_first():
    every = _notes(LintSettings(notes_per_file=None))
    later_line, later_code = every[-1]
    assert _notes(LintSettings(select=(later_code,))) == [(later_line, later_code)]
