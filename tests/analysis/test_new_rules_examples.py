"""The second catalog's examples as specifications: line, severity, fix text and safety.

For every INVALID example of the rules TW015-TW024 (and the seed's remaining four): the
first finding is on the stated line; its first fix yields exactly the stated text with
the stated applicability (or the finding carries no fix when ``fixed`` is None); the
fixed text parses, re-linting it no longer finds the rule, and fixing it again changes
nothing (idempotence).
"""

from __future__ import annotations

import ast

import pytest
from torchward.analysis import LintSettings, all_rules, analyze_source
from torchward.analysis.finding import Applicability
from torchward.analysis.fixes import apply_edits, fix_source, fixes_for

NEW_RULES = {
    "TW004",
    "TW007",
    "TW008",
    "TW013",
    "TW015",
    "TW016",
    "TW017",
    "TW018",
    "TW019",
    "TW020",
    "TW021",
    "TW022",
    "TW023",
    "TW024",
}


def _cases():
    for rule in all_rules():
        if rule.code not in NEW_RULES:
            continue
        for i, example in enumerate(rule.INVALID):
            yield pytest.param(rule, example, id=f"{rule.code}-invalid-{i}")


def _findings(rule, source: str):
    settings = LintSettings(select=(rule.code,), **rule.EXAMPLE_SETTINGS)
    report = analyze_source(source, "example.py", settings)
    assert not report.problems, report.problems
    return report.findings


@pytest.mark.parametrize("rule, example", list(_cases()))
def test_invalid_example_line_and_fix(rule, example):
    found = _findings(rule, example.source)
    assert found, f"{rule.code} did not flag:\n{example.source}"
    assert example.line is not None, "every new example states its line"
    assert found[0].span.line == example.line
    fixes = fixes_for(example.source, found[0])
    if example.fixed is None:
        assert fixes == ()
        return
    assert fixes, f"{rule.code} offered no fix for:\n{example.source}"
    fix = fixes[0]
    assert fix.applicability is example.fixed.applicability
    fixed = apply_edits(example.source, fix.edits)
    assert fixed == example.fixed.source
    ast.parse(fixed)
    assert _findings(rule, fixed) == (), "re-linting the fixed text still finds the rule"
    unsafe = fix.applicability is Applicability.UNSAFE
    settings = LintSettings(select=(rule.code,), **rule.EXAMPLE_SETTINGS)
    assert fix_source(fixed, "example.py", settings, unsafe=unsafe).text == fixed


@pytest.mark.parametrize(
    "rule", [r for r in all_rules() if r.code in NEW_RULES], ids=lambda r: r.code
)
def test_new_rule_documents_fix_safety(rule):
    assert "Fix safety" in rule.doc_sections()
    assert len(rule.INVALID) >= 4 and len(rule.VALID) >= 6
