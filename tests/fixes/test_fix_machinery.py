"""The fix machinery: discovery, edits, positions, imports, guards.

Specifications of the parts every fixer relies on, so a fixer's own tests can assume
them: edits are minimal and positioned in code points on tokenizer lines, imports are
merged, a text that does not parse is never touched, a fixer never raises.
"""

from __future__ import annotations

import pytest
from torchward.analysis import Applicability, Edit, Span, all_rules, analyze_source
from torchward.analysis.fixes import (
    all_fixers,
    apply_edits,
    edits_between,
    fix_source,
    fixes_for,
    with_fixes,
)
from torchward.analysis.fixes.imports import Imports
from torchward.analysis.fixes.tree import Rewrite, SourceTree


def test_the_fixers_found_by_walking_the_package_are_those_the_rule_examples_specify():
    """Fixability has one source, the rules' examples: a fixer without an example that
    specifies its fix, or an example's fix without a fixer, is a failure here."""
    specified = {rule.code for rule in all_rules() if rule.fix_applicabilities()}
    assert set(all_fixers()) == specified
    assert {"TW001", "TW002", "TW003", "TW005", "TW006", "TW011", "TW012", "TW014"} <= specified


@pytest.mark.parametrize(
    "rule", [r for r in all_rules() if r.code in all_fixers()], ids=lambda r: r.code
)
def test_fixing_the_invalid_examples_is_idempotent_and_introduces_nothing(rule):
    for example in rule.INVALID:
        before = {f.code for f in analyze_source(example.source, "x.py").findings}
        outcome = fix_source(example.source, "x.py", unsafe=True)
        assert fix_source(outcome.text, "x.py", unsafe=True).text == outcome.text
        after = {f.code for f in analyze_source(outcome.text, "x.py").findings}
        assert after <= before


def test_findings_leave_the_analysis_without_fixes_and_get_them_on_demand():
    source = "import torch\ndef train(model, loader, crit):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n"
    finding = analyze_source(source, "x.py").findings[0]
    assert finding.fixes == ()
    fixes = fixes_for(source, finding)
    assert fixes and fixes[0].applicability is Applicability.SAFE
    assert with_fixes(source, [finding])[0].fixes == fixes


def test_a_fixer_on_code_it_does_not_recognise_returns_no_fix_rather_than_raising():
    source = "x = 1\n"
    finding = analyze_source(
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n",
        "x.py",
    ).findings[0]
    assert fixes_for(source, finding) == ()


def test_edit_columns_count_code_points_after_non_ascii_text():
    old = 'x = "é✓"; total += loss\n'
    new = 'x = "é✓"; total += loss.detach()\n'
    (edit,) = edits_between(old, new)
    assert edit == Edit(Span(1, 23, 1, 23), ".detach()")
    assert apply_edits(old, [edit]) == new


def test_edit_lines_follow_the_tokenizer_not_str_splitlines():
    old = "a = 1\x0c\nb = 2\r\nc = 3\n"  # a form feed is not a line break for Python
    new = "a = 1\x0c\nb = 2\r\nc = 4\n"
    (edit,) = edits_between(old, new)
    assert edit.span.line == 3
    assert apply_edits(old, [edit]) == new


def test_overlapping_edits_are_refused():
    with pytest.raises(ValueError):
        apply_edits("abcdef\n", [Edit(Span(1, 0, 1, 3), "x"), Edit(Span(1, 2, 1, 4), "y")])


def test_an_import_is_merged_into_the_existing_from_import_line():
    tree = SourceTree("from torch.utils.data import DataLoader  # loaders\n\nx = 1\n")
    rewrite = Rewrite(tree)
    assert (
        Imports(tree, rewrite).name("torch.utils.data", "DistributedSampler")
        == "DistributedSampler"
    )
    assert (
        rewrite.code()
        == "from torch.utils.data import DataLoader, DistributedSampler  # loaders\n\nx = 1\n"
    )


def test_an_existing_alias_is_reused_and_nothing_is_added():
    tree = SourceTree("import torch as th\n")
    rewrite = Rewrite(tree)
    assert Imports(tree, rewrite).module("torch") == "th"
    assert rewrite.is_empty


def test_a_new_import_goes_after_the_docstring_and_future_imports():
    tree = SourceTree('"""Doc."""\nfrom __future__ import annotations\nx = 1\n')
    rewrite = Rewrite(tree)
    Imports(tree, rewrite).module("torch")
    assert rewrite.code() == '"""Doc."""\nfrom __future__ import annotations\nimport torch\nx = 1\n'


def test_a_file_with_a_syntax_error_is_never_fixed():
    source = "def train(model, loader, opt):\n    for x in loader:\n        model(x).backward(\n"
    outcome = fix_source(source, "x.py", unsafe=True)
    assert outcome.text == source and not outcome.changed
    assert outcome.problems[0].kind == "syntax-error"


def test_two_fixes_that_add_the_same_import_both_apply_with_one_import():
    source = (
        "def a(model, loader):\n    model.eval()\n    for x in loader:\n        model(x)\n\n\n"
        "def b(model, loader):\n    model.eval()\n    for x in loader:\n        model(x)\n"
    )
    outcome = fix_source(source, "x.py")
    assert outcome.text.count("import torch") == 1
    assert outcome.text.count("with torch.no_grad():") == 2
    assert not analyze_source(outcome.text, "x.py").findings
