"""The ``hint`` severity on every surface of ``torchward check`` (issue 28).

A hint is right about the code but rarely worth acting on. The terminal and grouped
formats list hints only with ``--show-hints`` and always count them apart in the
summary; JSON and SARIF carry them with their level; GitHub annotations and JUnit test
cases leave them out; no ``--fail-on`` threshold reaches them. The hint here is a real
one: TW023 on a checkpoint the same file writes (its project admits torch < 2.6, so the
load is flagged at all), next to a real warning (TW003, a loop that never zeroes its
gradients).
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import jsonschema

from .projects import pyproject, write

SARIF_SCHEMA = json.loads(
    (Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0-subset.json").read_text()
)

OWN_CHECKPOINT = (
    "import torch\n"
    "def save(model, path):\n"
    "    torch.save(model.state_dict(), path)\n"
    "def restore(model, path):\n"
    "    model.load_state_dict(torch.load(path))\n"
    "    model.eval()\n"
)
NO_RESET = (
    "def train(model, loader, opt, crit):\n"
    "    for x, y in loader:\n"
    "        crit(model(x), y).backward()\n"
    "        opt.step()\n"
)


def _own_checkpoint(project):
    write(project, "requirements.txt", "torch>=2.2\n")
    write(project, "ckpt.py", OWN_CHECKPOINT)


def _project(project):
    _own_checkpoint(project)
    write(project, "train.py", NO_RESET)


def test_the_terminal_hides_hints_unless_asked_and_counts_them_apart(project, torchward):
    _project(project)
    hidden = torchward("check", "--no-cache", ".").out
    assert "TW023" not in hidden
    assert "TW003" in hidden
    assert hidden.rstrip().endswith(
        "Found 1 finding (1 warning) in 1 of 2 files checked. 1 hint not shown (--show-hints)."
    )
    shown = torchward("check", "--no-cache", "--show-hints", ".").out
    assert "ckpt.py:5:" in shown and "TW023" in shown and "^ hint" in shown
    assert shown.rstrip().endswith(
        "Found 1 finding (1 warning) in 1 of 2 files checked. Also 1 hint."
    )


def test_a_run_with_only_hints_has_no_findings_and_says_what_it_hid(project, torchward):
    _own_checkpoint(project)
    outcome = torchward("check", "--no-cache", "--fail-on", "note", ".")
    assert outcome.status == 0
    assert outcome.out.strip() == "No findings in 1 file checked. 1 hint not shown (--show-hints)."


def test_grouped_lists_hints_only_when_asked(project, torchward):
    _project(project)
    assert "TW023" not in torchward("check", "--no-cache", "--format", "grouped", ".").out
    shown = torchward("check", "--no-cache", "--format", "grouped", "--show-hints", ".").out
    assert "TW023  hint" in shown


def test_json_carries_hints_with_their_severity(project, torchward):
    _project(project)
    findings = json.loads(torchward("check", "--no-cache", "--format", "json", ".").out)
    assert sorted((f["code"], f["severity"]) for f in findings) == [
        ("TW003", "warning"),
        ("TW023", "hint"),
    ]
    rows = json.loads(torchward("check", "--no-cache", "--format", "json", "--statistics", ".").out)
    assert {row["code"]: row["severities"] for row in rows}["TW023"] == {"hint": 1}


def test_sarif_gives_a_hint_level_none_as_an_informational_result(project, torchward):
    _project(project)
    log = json.loads(torchward("check", "--no-cache", "--format", "sarif", ".").out)
    jsonschema.Draft7Validator(SARIF_SCHEMA).validate(log)
    results = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    hint, warning = results["TW023"], results["TW003"]
    assert (hint["level"], hint["kind"], hint["properties"]["severity"]) == (
        "none",
        "informational",
        "hint",
    )
    assert warning["level"] == "warning" and "kind" not in warning


def test_github_annotations_and_junit_cases_leave_hints_out(project, torchward):
    _project(project)
    annotations = torchward("check", "--no-cache", "--format", "github", ".").out.splitlines()
    assert [line.split(",title=")[1].split("::")[0] for line in annotations] == [
        "TW003 missing-zero-grad"
    ]
    suites = ElementTree.fromstring(torchward("check", "--no-cache", "--format", "junit", ".").out)
    by_file = {suite.get("name"): suite for suite in suites}
    assert by_file["ckpt.py"].get("failures") == "0"
    assert by_file["ckpt.py"].find("testcase/failure") is None
    assert suites.get("failures") == "1"


def test_statistics_count_hints_under_their_own_name(project, torchward):
    _project(project)
    out = torchward("check", "--no-cache", "--statistics", ".").out
    (row,) = [line for line in out.splitlines() if "TW023" in line]
    assert row.endswith("1 hint")


def test_no_fail_on_threshold_reaches_a_hint(project, torchward):
    pyproject(project, 'severity = { TW003 = "hint" }\n')
    write(project, "train.py", NO_RESET)
    assert torchward("check", "--no-cache", "--fail-on", "note").status == 0
    findings = json.loads(torchward("check", "--no-cache", "--format", "json").out)
    assert [(f["code"], f["severity"]) for f in findings] == [("TW003", "hint")]
    assert torchward("check", "--no-cache", "--fail-on", "hint").status == 2


def test_fail_on_hint_in_the_configuration_is_an_error(project, torchward):
    pyproject(project, 'fail-on = "hint"\n')
    write(project, "train.py", NO_RESET)
    outcome = torchward("check", "--no-cache")
    assert outcome.status == 2
    assert "hints never fail a run" in outcome.err
