"""The engine's two behaviours on an internal exception: strict (tests) and degraded (users).

Users get a report either way: a crashing rule becomes an internal-error problem and the
other rules still report; a crashing fact builder gives no findings and one problem;
failing cross-file findings leave the file's own. The test session runs strict
(``tests/conftest.py``), where each of these raises instead, so a test cannot pass on
the empty result a crash leaves.
"""

from __future__ import annotations

import pytest
from torchward.analysis import LintSettings, all_rules, analyze_source, engine
from torchward.analysis.finding import Severity
from torchward.analysis.rule import Rule

TW001 = next(rule for rule in all_rules() if rule.code == "TW001")
FLAGGED = TW001.INVALID[0].source  # TW001 flags it
SETTINGS = LintSettings(select=("TW001", "TW999"))


class Crashing(Rule):
    """## What it does
    Raises on every file (a stand-in for a rule with a bug).
    """

    code = "TW999"
    name = "crashing"
    default_severity = Severity.WARNING
    summary = "Stand-in rule that raises."

    def check(self, facts):
        raise RuntimeError("rule bug")


@pytest.fixture
def crashing_rule(monkeypatch):
    monkeypatch.setattr(engine, "all_rules", lambda: (*all_rules(), Crashing))


@pytest.fixture
def crashing_fact_builder(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("fact builder bug")

    monkeypatch.setattr(engine, "build_facts", broken)


@pytest.fixture
def crashing_linking(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("linking bug")

    monkeypatch.setattr(engine, "linked_findings", broken)


def test_the_test_session_is_strict():
    assert engine.strict()


def test_strict_a_crashing_rule_raises(crashing_rule):
    with pytest.raises(RuntimeError, match="rule bug"):
        analyze_source(FLAGGED, "train.py", SETTINGS)


def test_degraded_a_crashing_rule_is_a_problem_and_the_others_still_report(crashing_rule, lenient):
    report = analyze_source(FLAGGED, "train.py", SETTINGS)
    assert [finding.code for finding in report.findings] == ["TW001"]
    assert [(problem.kind, problem.message) for problem in report.problems] == [
        ("internal-error", "rule TW999 failed: RuntimeError('rule bug')")
    ]


def test_strict_a_crashing_fact_builder_raises(crashing_fact_builder):
    with pytest.raises(RuntimeError, match="fact builder bug"):
        analyze_source(FLAGGED, "train.py", SETTINGS)


def test_degraded_a_crashing_fact_builder_is_one_problem(crashing_fact_builder, lenient):
    report = analyze_source(FLAGGED, "train.py", SETTINGS)
    assert report.findings == ()
    assert [(problem.kind, problem.message) for problem in report.problems] == [
        ("internal-error", "analysis failed: RuntimeError('fact builder bug')")
    ]


def test_strict_failing_cross_file_findings_raise(crashing_linking):
    with pytest.raises(RuntimeError, match="linking bug"):
        analyze_source(FLAGGED, "train.py", SETTINGS)


def test_degraded_failing_cross_file_findings_keep_the_files_own(crashing_linking, lenient):
    report = analyze_source(FLAGGED, "train.py", SETTINGS)
    assert [finding.code for finding in report.findings] == ["TW001"]
    assert report.problems == ()


@pytest.mark.parametrize("value, strict", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_the_switch_reads_the_environment_on_every_call(monkeypatch, value, strict):
    monkeypatch.setenv(engine.STRICT, value)
    assert engine.strict() is strict
    monkeypatch.delenv(engine.STRICT)
    assert engine.strict() is False
