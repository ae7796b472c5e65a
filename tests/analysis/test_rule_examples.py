"""Every rule's VALID and INVALID examples run as tests (the registry drives them)."""

from __future__ import annotations

import pytest
from torchward.analysis import LintSettings, all_rules, analyze_source
from torchward.analysis.fixes import apply_edits, fixes_for


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
def test_invalid_example_is_flagged_on_its_line_with_its_severity(rule, example):
    assert example.line is not None, "an invalid example states the line it must be flagged on"
    found = sorted(_findings(rule, example.source), key=lambda finding: finding.span)
    assert found, f"{rule.code} did not flag:\n{example.source}"
    assert found[0].span.line == example.line
    if example.severity is not None:
        assert found[0].severity is example.severity


@pytest.mark.parametrize("rule, example", list(_cases("invalid")))
def test_invalid_example_is_fixed_as_it_specifies(rule, example):
    """The first fix of the finding yields exactly ``fixed.source`` with the stated
    applicability; an example that specifies no fix must get none."""
    first = sorted(_findings(rule, example.source), key=lambda finding: finding.span)[0]
    fixes = fixes_for(example.source, first)
    if example.fixed is None:
        assert fixes == (), f"{rule.code} offers a fix its example does not specify"
        return
    assert fixes, f"{rule.code} offers no fix for:\n{example.source}"
    assert apply_edits(example.source, fixes[0].edits) == example.fixed.source
    assert fixes[0].applicability is example.fixed.applicability


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_carries_documentation_and_enough_examples(rule):
    assert rule.doc_sections()[:2] == ["What it does", "Why is this bad?"]
    assert {"Example", "Known limitations"} <= set(rule.doc_sections())
    assert len(rule.INVALID) >= 4 and len(rule.VALID) >= 6
