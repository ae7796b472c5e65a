"""The bundled examples and the realistic fixture scripts, checked end to end.

Fixture scripts mark each expected finding with a trailing ``# expect: TWxxx`` comment
on the line the finding starts on; every other line must stay quiet. So a fixture is its
own specification, and a new false positive or a lost finding fails with its line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchward.analysis import all_rules, analyze_source

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TW\d+(?:\s*,\s*TW\d+)*)")


def _found(path: Path) -> set[tuple[int, str]]:
    report = analyze_source(path.read_text(), str(path))
    assert not report.problems, report.problems
    return {(f.span.line, f.code) for f in report.findings}


def _expected(path: Path) -> set[tuple[int, str]]:
    expected = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if match := EXPECT.search(line):
            expected |= {(number, code.strip()) for code in match.group("codes").split(",")}
    return expected


def test_bad_example_triggers_every_rule():
    codes = {code for _, code in _found(ROOT / "examples" / "bad_train.py")}
    assert codes == {rule.code for rule in all_rules() if rule.code != "TW010"}


def test_good_example_triggers_nothing():
    assert _found(ROOT / "examples" / "good_train.py") == set()


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.py")), ids=lambda p: p.stem)
def test_fixture_reports_exactly_its_expected_findings(path):
    assert _found(path) == _expected(path)
