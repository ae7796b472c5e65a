"""Every rule's VALID and INVALID examples run as tests (the registry drives them)."""

from __future__ import annotations

import pytest
from torchward.analysis import LintSettings, all_rules, analyze_source


def _cases(kind: str):
    for rule in all_rules():
        examples = rule.VALID if kind == "valid" else rule.INVALID
        for i, example in enumerate(examples):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind}-{i}")


def _findings(rule, source: str):
    report = analyze_source(
        source, "example.py", LintSettings(select=(rule.code,), **rule.EXAMPLE_SETTINGS)
    )
    assert not report.problems, report.problems
    return report.findings


@pytest.mark.parametrize("rule, source", list(_cases("valid")))
def test_valid_example_produces_no_finding(rule, source):
    assert _findings(rule, source) == ()


@pytest.mark.parametrize("rule, example", list(_cases("invalid")))
def test_invalid_example_is_flagged_with_its_severity(rule, example):
    found = _findings(rule, example.source)
    assert found, f"{rule.code} did not flag:\n{example.source}"
    if example.severity is not None:
        assert found[0].severity is example.severity


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_carries_documentation_and_enough_examples(rule):
    assert rule.doc_sections()[:2] == ["What it does", "Why is this bad?"]
    assert {"Example", "Known limitations"} <= set(rule.doc_sections())
    assert len(rule.INVALID) >= 4 and len(rule.VALID) >= 6
