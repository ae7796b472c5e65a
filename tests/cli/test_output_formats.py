"""What ``--format terminal`` and ``--format json`` print, ``--statistics``, and colour."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys

from torchward.analysis import (
    Applicability,
    Confidence,
    Evidence,
    FileReport,
    Finding,
    Fix,
    Severity,
    Span,
)

from torchward.reporters import json as json_reporter
from torchward.reporters import terminal
from torchward.runner import RunResult

from .projects import CLEAN, RETAINED_LINE, TRAIN_LOOP, pyproject, write

JSON_KEYS = {
    "code",
    "name",
    "severity",
    "confidence",
    "path",
    "line",
    "column",
    "end_line",
    "end_column",
    "message",
    "evidence",
    "fixes",
    "proofs",
    "payload",
    "origin",
}


def sample_result(path: str) -> RunResult:
    finding = Finding(
        code="TW001",
        name="retained-graph",
        severity=Severity.ERROR,
        confidence=Confidence.HIGH,
        span=Span(RETAINED_LINE, 8, RETAINED_LINE, 27),
        message="`loss` is kept with its graph",
        path=path,
        evidence=(Evidence(Span(13, 8, 13, 12), "`loss` gets its graph here"),),
        fixes=(Fix("Append `loss.item()` instead", Applicability.UNSAFE),),
    )
    return RunResult((FileReport(path, (finding,)),))


def test_terminal_output_shows_location_code_source_caret_evidence_help_and_summary(project):
    write(project, "train.py", TRAIN_LOOP)
    stream = io.StringIO()
    terminal.write(sample_result("train.py"), stream, errors=io.StringIO(), colour=False)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "train.py:14:9: TW001 `loss` is kept with its graph"
    assert lines[2] == " 14 |         losses.append(loss)"
    assert lines[3] == "    |         ^^^^^^^^^^^^^^^^^^^ error"
    assert lines[4] == "   = 13:9: `loss` gets its graph here"
    assert lines[5] == "   = help: Append `loss.item()` instead"
    assert lines[-1] == "Found 1 finding (1 error) in 1 of 1 file checked."


def test_terminal_help_points_at_explain_when_there_is_no_fix(project):
    write(project, "train.py", TRAIN_LOOP)
    result = sample_result("train.py")
    bare = RunResult(
        (
            FileReport(
                "train.py",
                tuple(
                    Finding(f.code, f.name, f.severity, Confidence.LOW, f.span, f.message, f.path)
                    for f in result.reports[0].findings
                ),
            ),
        )
    )
    stream = io.StringIO()
    terminal.write(bare, stream, errors=io.StringIO())
    assert "= help: run `torchward explain TW001` for why and how to fix it" in stream.getvalue()
    assert "^ error (low confidence)" in stream.getvalue()


def test_check_prints_the_finding_line_first(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check")
    assert outcome.out.startswith(f"train.py:{RETAINED_LINE}:")
    assert " TW001 " in outcome.out.splitlines()[0]
    assert "losses.append(loss)" in outcome.out
    assert "help:" in outcome.out


def test_json_output_is_an_array_of_findings_with_one_based_positions(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--format", "json")
    findings = json.loads(outcome.out)
    retained = [item for item in findings if item["code"] == "TW001"]
    assert retained, findings
    item = retained[0]
    assert set(item) == JSON_KEYS
    assert item["path"] == "train.py"
    assert item["line"] == RETAINED_LINE
    column = TRAIN_LOOP.splitlines()[RETAINED_LINE - 1].index("losses") + 1
    assert item["column"] <= column < item["end_column"] or item["column"] == column
    assert item["severity"] in {"error", "warning", "note"}
    for evidence in item["evidence"]:
        assert set(evidence) == {"path", "line", "column", "end_line", "end_column", "message"}
        assert evidence["line"] >= 1 and evidence["column"] >= 1


def test_json_round_trips_through_finding_from_dict(project):
    result = sample_result("train.py")
    stream = io.StringIO()
    json_reporter.write(result, stream, errors=io.StringIO())
    (item,) = json.loads(stream.getvalue())
    assert (item["line"], item["column"], item["end_column"]) == (RETAINED_LINE, 9, 28)
    assert Finding.from_dict(item) == result.reports[0].findings[0]


def test_json_of_a_clean_project_is_an_empty_array(project, torchward):
    write(project, "clean.py", CLEAN)
    outcome = torchward("check", "--format", "json")
    assert json.loads(outcome.out) == []
    assert outcome.status == 0


def test_json_keeps_stdout_parseable_when_a_file_cannot_be_analysed(project, torchward):
    write(project, "broken.py", "x = (\n")
    outcome = torchward("check", "--format", "json")
    assert json.loads(outcome.out) == []
    assert "broken.py:" in outcome.err and "syntax-error" in outcome.err
    assert outcome.status == 1


def test_statistics_count_findings_per_code(project, torchward, tw001):
    write(project, "a.py", TRAIN_LOOP)
    write(project, "b.py", TRAIN_LOOP)
    outcome = torchward("check", "--statistics")
    rows = [line for line in outcome.out.splitlines() if "TW001" in line]
    assert len(rows) == 1
    assert rows[0].split()[:3] == ["2", "TW001", "retained-graph"]
    assert "losses.append" not in outcome.out  # counts instead of the findings


def test_statistics_in_json(project, torchward, tw001):
    write(project, "a.py", TRAIN_LOOP)
    outcome = torchward("check", "--statistics", "--format", "json", "--select", "TW001")
    assert json.loads(outcome.out) == [
        {"code": "TW001", "name": "retained-graph", "count": 1, "severities": {"error": 1}}
    ]


def test_colour_only_on_a_terminal_and_never_with_no_color():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert terminal.should_colour(Tty(), {}) is True
    assert terminal.should_colour(Tty(), {"NO_COLOR": "1"}) is False
    assert (
        terminal.should_colour(Tty(), {"NO_COLOR": ""}) is True
    )  # no-color.org: empty means unset
    assert terminal.should_colour(io.StringIO(), {}) is False


def test_output_to_a_pipe_has_no_escape_codes(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    assert "\x1b[" not in torchward("check").out


def run_on_a_terminal(project, env: dict) -> str:
    """Runs ``python -m torchward check`` with its stdout on a pseudo-terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "torchward", "check", "--no-cache", "--exit-zero"],
        cwd=project,
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode()


def test_a_terminal_gets_colour_unless_no_color_is_set(project):
    write(project, "broken.py", "x = (\n")  # a problem line is printed in colour
    pyproject(project, "")
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    assert "\x1b[" in run_on_a_terminal(project, env)
    assert "\x1b[" not in run_on_a_terminal(project, {**env, "NO_COLOR": "1"})
