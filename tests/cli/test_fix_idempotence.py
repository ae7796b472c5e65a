"""``--fix`` and ``--unsafe-fixes`` settle in one run: a second run changes nothing.

Property over every rule's documented invalid examples (real files, the real CLI), plus
the trainer-class case where a fixer's rewrite did not remove its finding: the loop
must apply a fix at most once per finding and report the fixer instead of stacking
``/ self.accum`` on every round.
"""

from __future__ import annotations

import ast

import pytest
from torchward.analysis import all_rules
from torchward.analysis.fixes import fix_source

from .projects import write

EXAMPLES = [
    pytest.param(rule, number, example.source, id=f"{rule.code}-{number}")
    for rule in all_rules()
    for number, example in enumerate(rule.INVALID)
]

# a trainer whose loop divides nothing; the loss is an attribute of the model's output,
# so dividing it at backward() is a rewrite the rule does not see as scaling
TRAINER = """\
class Trainer:
    def fit(self, loader):
        for i, batch in enumerate(loader):
            out = self.model(**batch)
            loss = out.loss
            loss.backward()
            if (i + 1) % self.accum == 0:
                self.opt.step()
                self.opt.zero_grad()
"""


@pytest.mark.parametrize("flag", ["--fix", "--unsafe-fixes"])
@pytest.mark.parametrize(("rule", "number", "source"), EXAMPLES)
def test_a_second_fix_run_changes_nothing(project, torchward, flag, rule, number, source):
    path = write(project, "example.py", source)
    torchward("check", "--no-cache", "--exit-zero", flag, "example.py")
    once = path.read_bytes()
    ast.parse(once)
    second = torchward("check", "--no-cache", "--exit-zero", flag, "example.py")
    assert path.read_bytes() == once
    assert "No fixes applied." in second.err


def test_a_fix_is_applied_at_most_once_per_finding():
    first = fix_source(TRAINER, "trainer.py", unsafe=True)
    assert first.text.count("/ self.accum") <= 1, first.text
    assert len([a for a in first.applied if a[0] == "TW014"]) <= 1
    if "TW014" in {finding.code for finding in first.remaining}:
        # the rewrite left its finding: the fix must be dropped and reported, not stacked
        assert first.text == TRAINER
        assert any(p.kind == "fixer-bug" and "TW014" in p.message for p in first.problems)
    assert fix_source(first.text, "trainer.py", unsafe=True).text == first.text


def test_the_cli_reports_a_fixer_whose_finding_survives(project, torchward):
    path = write(project, "trainer.py", TRAINER)
    outcome = torchward("check", "--no-cache", "--unsafe-fixes", "--exit-zero", "trainer.py")
    text = path.read_text()
    assert text.count("/ self.accum") <= 1, text
    if text == TRAINER:
        assert "TW014 fix" in outcome.err and "a bug in the fixer" in outcome.err
    second = torchward("check", "--no-cache", "--unsafe-fixes", "--exit-zero", "trainer.py")
    assert path.read_text() == text
    assert "No fixes applied." in second.err
