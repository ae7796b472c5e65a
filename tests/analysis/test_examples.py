"""The bundled examples and the realistic fixture scripts, checked end to end.

Fixture scripts mark each expected finding with a trailing ``# expect: TWxxx`` comment
on the line the finding starts on; every other line must stay quiet. So a fixture is its
own specification, and a new false positive or a lost finding fails with its line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import pytest
from torchward.analysis import LintSettings, all_rules, analyze_source

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TW\d+(?:\s*,\s*TW\d+)*)")


def _examples_settings() -> LintSettings:
    """The examples' own ``[tool.torchward]``: it names the target GPU that TW010 needs."""
    table = tomllib.loads((ROOT / "examples" / "pyproject.toml").read_text())["tool"]["torchward"]
    return LintSettings(target_gpu=table["target-gpu"], notes_per_file=None)


def _found(path: Path, settings: LintSettings = LintSettings()) -> set[tuple[int, str]]:
    report = analyze_source(path.read_text(), str(path), settings)
    assert not report.problems, report.problems
    return {(f.span.line, f.code) for f in report.findings}


def _expected(path: Path) -> set[tuple[int, str]]:
    expected = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if match := EXPECT.search(line):
            expected |= {(number, code.strip()) for code in match.group("codes").split(",")}
    return expected


def test_bad_example_triggers_every_rule():
    codes = {code for _, code in _found(ROOT / "examples" / "bad_train.py", _examples_settings())}
    assert codes == {rule.code for rule in all_rules()}


def test_good_example_triggers_nothing():
    assert _found(ROOT / "examples" / "good_train.py", _examples_settings()) == set()


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.py")), ids=lambda p: p.stem)
def test_fixture_reports_exactly_its_expected_findings(path):
    assert _found(path) == _expected(path)
