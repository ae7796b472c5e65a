"""A crashing fixer: no fix for users, a failed test under strict mode.

``fixes_for`` catches a fixer's exception so that a user's code action never takes the
editor down. The test session runs with the engine's strict mode on
(``tests/conftest.py``), and there the same exception must reach the test: otherwise a
fixer that raises on every finding passes every test that expects no fix.
"""

from __future__ import annotations

import pytest
from torchward.analysis import analyze_source
from torchward.analysis import fixes as fixes_package
from torchward.analysis.fixes import fixes_for
from torchward.analysis.fixes.fixer import Fixer

SOURCE = (
    "import torch\n"
    "def train(model, loader, crit):\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n"
    "        crit(model(x), y).backward()\n"
    "        opt.step()\n"
)


class _Broken(Fixer):
    code = "TW003"

    def build(self, tree, finding):
        raise RuntimeError("fixer bug")
        yield  # pragma: no cover - makes this a generator, as real fixers are


@pytest.fixture
def finding():
    (found,) = analyze_source(SOURCE, "x.py").findings
    assert found.code == "TW003"
    return found


@pytest.fixture
def broken_fixer(monkeypatch):
    monkeypatch.setattr(fixes_package, "all_fixers", lambda: {"TW003": _Broken()})


def test_the_real_fixer_offers_a_fix_for_the_finding(finding):
    assert fixes_for(SOURCE, finding)  # the case the broken fixer replaces has a fix


@pytest.mark.usefixtures("broken_fixer")
def test_a_crashing_fixer_fails_the_test_under_strict_mode(finding):
    with pytest.raises(RuntimeError, match="fixer bug"):
        fixes_for(SOURCE, finding)


@pytest.mark.usefixtures("broken_fixer", "lenient")
def test_a_crashing_fixer_gives_users_no_fix_and_a_logged_warning(finding, caplog):
    assert fixes_for(SOURCE, finding) == ()
    assert any("fixer crashed" in record.getMessage() for record in caplog.records)


@pytest.mark.usefixtures("broken_fixer")
def test_a_text_libcst_cannot_parse_gives_no_fix_even_under_strict_mode(finding):
    """A tree fixer never runs on a text LibCST rejects (``_Broken`` would raise). A
    payload fixer (TW003's) parses nothing: its insertion is exact wherever the step
    still stands, whatever else the text holds."""
    assert fixes_for(SOURCE + "def broken(:\n", finding) == ()
