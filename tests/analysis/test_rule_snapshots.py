"""Every rule's examples, with the exact findings they produce recorded as snapshots.

``test_rule_examples.py`` checks what each example states (the line, the severity, the
fix); this file pins everything else a user reads: every finding's code, severity, range,
message and evidence, for valid and invalid examples alike (a valid example's snapshot is the
empty list). Rewording a message or moving a range fails here until the snapshot is
recorded again, on purpose, with::

    .venv/bin/python -m pytest tests/analysis/test_rule_snapshots.py --snapshot-update

and the change in ``__snapshots__/test_rule_snapshots.ambr`` is reviewed with the code.
The registry drives the cases, so a new rule (or a new example) fails until its snapshot
is recorded the same way.
"""

from __future__ import annotations

import pytest
from torchward.analysis import LintSettings, all_rules, analyze_source

UPDATE = (
    "no recorded snapshot matches; if the change is intended, record it with "
    "`.venv/bin/python -m pytest tests/analysis/test_rule_snapshots.py --snapshot-update` "
    "and review the diff of tests/analysis/__snapshots__/test_rule_snapshots.ambr"
)


def _cases():
    for rule in all_rules():
        for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID)):
            for i, example in enumerate(examples):
                source = example if isinstance(example, str) else example.source
                yield pytest.param(rule, source, id=f"{rule.code}-{kind}-{i}")


def _shown(rule, source: str) -> list[str]:
    """The findings as a user reads them: a line ``CODE severity l:c-l:c message`` each,
    then a line ``  evidence l:c-l:c sentence`` for each link of its evidence (shown as
    related information in an editor). Lines 1-based, columns 0-based, as in spans."""
    settings = LintSettings(select=(rule.code,), **rule.EXAMPLE_SETTINGS)
    report = analyze_source(source, "example.py", settings)
    assert not report.problems, report.problems
    shown = []
    for finding in report.findings:
        shown.append(
            f"{finding.code} {finding.severity.value} {_at(finding.span)} {finding.message}"
        )
        shown += [f"  evidence {_at(link.span)} {link.message}" for link in finding.evidence]
    return shown


def _at(span) -> str:
    return f"{span.line}:{span.column}-{span.end_line}:{span.end_column}"


@pytest.mark.parametrize("rule, source", list(_cases()))
def test_example_findings_match_their_snapshot(rule, source, snapshot):
    assert _shown(rule, source) == snapshot, UPDATE


def test_the_snapshots_can_tell_a_finding_apart():
    """The serialised form carries what the snapshots compare: a different message or
    column makes a different line."""
    rule = next(r for r in all_rules() if r.INVALID)
    shown = _shown(rule, rule.INVALID[0].source)
    assert shown, f"{rule.code}'s first invalid example is flagged"
    code, severity, span, message = shown[0].split(" ", 3)
    assert code == rule.code and message and ":" in span
    assert any(line.startswith("  evidence ") for line in shown), "evidence is shown too"
