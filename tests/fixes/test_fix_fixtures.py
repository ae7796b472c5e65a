"""Every fix, as before/after fixture pairs, in plain, CRLF and tab-indented variants.

``fixtures/NAME.py`` is fixed into ``fixtures/NAME.fixed.py``; its first line says which
fixes apply (``# fix: safe`` for ``--fix``, ``# fix: unsafe`` for ``--unsafe-fixes``). For
each pair: the fixed text is exactly the expected one, fixing again changes nothing, the
fixed text no longer has the finding, and no finding appears that the original lacked.
The CRLF and tab variants are derived from the same pairs, so every fix is checked
against every line ending and indentation style without a second set of files.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from torchward.analysis import analyze_source
from torchward.analysis.fixes import fix_source

FIXTURES = Path(__file__).parent / "fixtures"
PAIRS = sorted(path for path in FIXTURES.glob("*.py") if not path.name.endswith(".fixed.py"))


def as_crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def as_tabs(text: str) -> str:
    """Leading indentation in tabs (one per indentation level of the file)."""
    unit = min((len(m) for m in re.findall(r"^( +)\S", text, flags=re.M)), default=4)
    return re.sub(
        r"^((?: {" + str(unit) + r"})+)",
        lambda m: "\t" * (len(m.group(1)) // unit),
        text,
        flags=re.M,
    )


VARIANTS = {"plain": lambda text: text, "crlf": as_crlf, "tabs": as_tabs}


def codes(text: str) -> Counter:
    return Counter(finding.code for finding in analyze_source(text, "x.py").findings)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("before_path", PAIRS, ids=lambda path: path.stem)
def test_fix_turns_the_fixture_into_its_expected_twin(before_path, variant):
    convert = VARIANTS[variant]
    before = convert(before_path.read_text(encoding="utf-8"))
    expected = convert(before_path.with_suffix(".fixed.py").read_text(encoding="utf-8"))
    unsafe = before.startswith("# fix: unsafe")
    code = before_path.stem.split("_")[0].upper()
    assert code in codes(before), f"the fixture must trigger {code}"

    outcome = fix_source(before, "x.py", unsafe=unsafe)

    assert outcome.text == expected
    assert [applied for applied, _ in outcome.applied] == [code]
    assert fix_source(outcome.text, "x.py", unsafe=unsafe).text == outcome.text, "not idempotent"
    after = codes(outcome.text)
    assert code not in after, "re-linting still finds what was fixed"
    assert not after - codes(before), "the fix introduced a finding"


@pytest.mark.parametrize(
    "before_path",
    [p for p in PAIRS if p.read_text().startswith("# fix: unsafe")],
    ids=lambda path: path.stem,
)
def test_unsafe_fixes_are_not_applied_by_safe_fixing(before_path):
    before = before_path.read_text(encoding="utf-8")
    expected = before_path.with_suffix(".fixed.py").read_text(encoding="utf-8")
    assert fix_source(before, "x.py", unsafe=False).text != expected
