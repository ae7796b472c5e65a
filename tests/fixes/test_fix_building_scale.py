"""Building a fix costs in proportion to the code it touches, not to the file.

``torchward check --format json`` builds the fixes of every finding; a fix used to
transform and regenerate the whole module, and each span lookup scanned every node, so a
4,000-line file with 191 findings took minutes. These tests hold the faster parts to the
slow ones they replace: local edits equal the whole-module diff, indexed lookups equal a
scan of every node, and a rewrite visits only the top-level statements it touches.
"""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
import pytest
from torchward.analysis import all_rules, analyze_source
from torchward.analysis.fixes import edits_between, with_fixes
from torchward.analysis.fixes.tree import LOOPS, Rewrite, SourceTree

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from synthetic_script import training_script  # noqa: E402

SOURCES = {
    **{p.stem: p.read_text() for p in sorted((ROOT / "tests" / "fixes" / "fixtures").glob("*.py"))},
    **{p.stem: p.read_text() for p in sorted((ROOT / "examples").glob("*.py"))},
    "synthetic-200": training_script(200),
    **{
        f"{rule.code}-{i}": example.source
        for rule in all_rules()
        for i, example in enumerate(rule.INVALID)
        if example.fixed is not None
    },
}


class LocalAgainstWhole:
    """Rewrite.edits, checked against the whole module's regenerated text each time."""

    def __init__(self, monkeypatch) -> None:
        self.compared = 0
        self.differing: list[tuple] = []
        local = Rewrite.edits

        def checked(rewrite: Rewrite):
            edits = local(rewrite)
            whole = edits_between(rewrite.tree.source, rewrite.tree.module.visit(rewrite).code)
            self.compared += 1
            if edits != whole:
                self.differing.append((edits, whole))
            return edits

        monkeypatch.setattr(Rewrite, "edits", checked)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_local_edits_equal_the_whole_module_diff(name, monkeypatch):
    source = SOURCES[name]
    check = LocalAgainstWhole(monkeypatch)
    findings = analyze_source(source, f"{name}.py").findings
    with_fixes(source, findings)
    assert not check.differing


def test_every_fixable_rule_is_compared():
    """The comparison above runs on at least one fix of every fixer's rule."""
    fixed_codes = set()
    for name, source in SOURCES.items():
        for finding in with_fixes(source, analyze_source(source, f"{name}.py").findings):
            if finding.fixes:
                fixed_codes.add(finding.code)
    assert {rule.code for rule in all_rules() if rule.fix_applicabilities()} <= fixed_codes


@pytest.mark.parametrize(
    "source",
    [
        "x = 1\nif x:\n    y = 2\n",  # no final newline
        "x = 1\nif x:\n    y = 2",
        "# header comment\n\nimport torch\n\n\nfor i in range(3):\n    pass\n# footer\n",
        "x = 1\r\nfor i in range(3):\r\n\tx += i\r\n",
    ],
)
def test_local_edits_of_odd_modules_equal_the_whole_module_diff(source):
    tree = SourceTree(source)
    for node in list(tree.spans):
        if isinstance(node, cst.Name):
            rewrite = Rewrite(tree)
            rewrite.replace(node, cst.Name(node.value + "_renamed"))
            assert rewrite.edits() == edits_between(source, rewrite.code())
    statements = [n for n in tree.spans if isinstance(n, cst.SimpleStatementLine)]
    for statement in statements:
        rewrite = Rewrite(tree)
        rewrite.insert_before(statement, cst.parse_statement("inserted = 0"))
        rewrite.insert_after(statement, cst.parse_statement("appended = 0"))
        assert rewrite.edits() == edits_between(source, rewrite.code())


def test_a_rewrite_visits_only_the_top_level_statement_it_touches(monkeypatch):
    source = training_script(800)
    tree = SourceTree(source)
    name = next(
        node
        for node in tree.spans
        if isinstance(node, cst.Name) and tree.spans[node].line > source.count("\n") // 2
    )
    visited = 0
    leave = Rewrite.on_leave

    def counting(self, original, updated):
        nonlocal visited
        visited += 1
        return leave(self, original, updated)

    monkeypatch.setattr(Rewrite, "on_leave", counting)
    rewrite = Rewrite(tree)
    rewrite.replace(name, cst.Name("renamed"))
    assert rewrite.edits()
    assert 0 < visited < len(tree.spans) // 40, (visited, len(tree.spans))


def _spans_to_ask(tree: SourceTree):
    """Every statement's span and a sample of the other nodes' spans, each also as an
    empty span at its start (a scan of every node per span is quadratic: a sample)."""
    spans = sorted(
        {s for n, s in tree.spans.items() if isinstance(n, cst.BaseStatement)}
        | set(sorted(set(tree.spans.values()))[::7])
    )
    for span in spans:
        yield span
        yield type(span)(span.line, span.column, span.line, span.column)


@pytest.mark.parametrize(
    "name", [n for n in sorted(SOURCES) if n.startswith(("tw0", "good_"))][::3]
)
def test_indexed_lookups_equal_a_scan_of_every_node(name):
    tree = SourceTree(SOURCES[name])
    nodes = list(tree.spans.items())
    for span in _spans_to_ask(tree):
        for kind in (cst.Name, cst.Call, cst.If):
            assert list(tree.within(span, kind)) == [
                n for n, s in nodes if isinstance(n, kind) and span.contains(s)
            ]
        innermost = None
        for node, node_span in nodes:
            if isinstance(node, cst.BaseStatement) and node_span.contains(span):
                if innermost is None or tree.spans[innermost].contains(node_span):
                    innermost = node
        assert tree.innermost_statement_at(span) is innermost
        loops = [
            n
            for n, s in nodes
            if isinstance(n, LOOPS) and s.contains(span) and tree.spans[n.body].contains(span)
        ]
        loops.sort(key=lambda n: len(list(tree.ancestors(n))), reverse=True)
        assert tree.loops_around(span) == loops
        assert list(tree.starting_at(span.line, span.column, cst.If)) == [
            n
            for n, s in nodes
            if isinstance(n, cst.If) and (s.line, s.column) == (span.line, span.column)
        ]
