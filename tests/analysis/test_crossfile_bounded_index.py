"""The workspace index keeps a bounded number of syntax trees (issue 29, "Linear costs").

A module summary keeps its names and text; its tree is held only while the index's
:class:`SyntaxBound` holds it, and parsed again when asked for after that. The bound
must change nothing an analysis finds: the cross-file fixtures give the same findings
with a bound of one tree as without any bound.
"""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.workspace import WORKSPACE, index
from torchward.analysis.workspace.index import SyntaxBound, WorkspaceIndex

FIXTURES = Path(__file__).parent / "fixtures" / "crossfile"
ALL = LintSettings(notes_per_file=None)


def _findings(folder: Path) -> list[tuple]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        report = analyze_source(path.read_text(), str(path), ALL)
        found.extend(
            (f.code, f.message, str(f.span), f.severity, f.confidence) for f in report.findings
        )
    return found


def _fresh_index(monkeypatch: pytest.MonkeyPatch, bound: SyntaxBound) -> None:
    """An empty index (no summary of an earlier test) with ``bound`` for its trees."""
    monkeypatch.setattr(WORKSPACE, "_summaries", type(WORKSPACE._summaries)())
    monkeypatch.setattr(WORKSPACE, "syntax", bound)


def test_findings_are_the_same_with_one_tree_kept_as_with_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for name in ("project", "project2"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
    _fresh_index(monkeypatch, SyntaxBound(most=10_000, most_text=10**12))
    unbounded = _findings(tmp_path)
    kept_unbounded = len(WORKSPACE.syntax)
    _fresh_index(monkeypatch, SyntaxBound(most=1, most_text=1))
    bounded = _findings(tmp_path)
    assert unbounded  # the fixtures have cross-file bugs
    assert kept_unbounded > 1  # the unbounded run held several trees: the bound bit
    assert len(WORKSPACE.syntax) == 1
    assert bounded == unbounded


def _modules(folder: Path, count: int, lines: int) -> list[Path]:
    paths = []
    for number in range(count):
        path = folder / f"module{number}.py"
        body = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(lines))
        path.write_text(body)
        paths.append(path)
    return paths


def test_the_bound_holds_in_count_and_in_text(tmp_path: Path):
    workspace = WorkspaceIndex()
    workspace.syntax = SyntaxBound(most=3, most_text=10**9)
    summaries = [workspace.summary(str(p)) for p in _modules(tmp_path, 8, 5)]
    assert all(s is not None for s in summaries)
    assert len(workspace.syntax) == 3
    by_text = WorkspaceIndex()
    by_text.syntax = SyntaxBound(most=100, most_text=500)
    for path in _modules(tmp_path, 8, 10):  # each text ~300 characters
        assert by_text.summary(str(path)) is not None
    assert 1 <= len(by_text.syntax) < 8
    assert by_text.syntax.text <= 500


def test_a_dropped_tree_is_parsed_again_and_the_names_stay(tmp_path: Path):
    workspace = WorkspaceIndex()
    workspace.syntax = SyntaxBound(most=1, most_text=10**9)
    first, second = _modules(tmp_path, 2, 4)
    summary = workspace.summary(str(first))
    assert summary is not None
    tree = summary.tree
    del tree
    workspace.summary(str(second)).tree  # pushes the first tree out of the bound
    gc.collect()
    assert summary._syntax() is None  # nothing holds it any more
    assert summary.top_functions == {"f0", "f1", "f2", "f3"}
    again = summary.tree  # parsed again from the kept text
    assert [node.name for node in again.body] == ["f0", "f1", "f2", "f3"]
    assert summary.index.top_functions.keys() == {"f0", "f1", "f2", "f3"}


def test_the_default_bound_is_the_documented_one():
    bound = WorkspaceIndex().syntax
    assert (bound.most, bound.most_text) == (index.MAX_SYNTAX, index.MAX_SYNTAX_TEXT)
