"""Everything one analysis of a file derived, in the shape rules read.

:func:`build_facts` runs the semantic model and the dataflow once per file; rules receive
the resulting :class:`FileFacts` and ask it questions (see
:mod:`torchward.analysis.facts.structure` for the training-structure queries).
"""

from __future__ import annotations

import ast

import attrs

from ..settings import LintSettings
from ..syntax.positions import LineIndex
from .analyzer import FileAnalyzer
from .events import Trace
from .launch_driver import LaunchInputs
from .semantic import ModuleIndex
from .summaries import SummaryCache
from .values import Loc


@attrs.define
class FileFacts:
    path: str
    traces: list[Trace]
    backwarded_locs: frozenset[Loc]
    called_functions: frozenset[str]
    analyzer: FileAnalyzer = attrs.field(repr=False)
    settings: LintSettings = attrs.field(
        factory=LintSettings
    )  # set by the engine for rules that read it

    @property
    def index(self) -> ModuleIndex:
        """The module's static shape, built on first use (irrelevant files never need it)."""
        return self.analyzer.index

    @property
    def lines(self) -> LineIndex:
        return self.analyzer.lines


def build_launch_facts(
    tree: ast.Module, source: str, path: str, inputs: LaunchInputs | None = None
) -> FileFacts:
    """The dataflow in launch mode (:mod:`.launch`): constants and path conditions of a
    plain launch recorded by node on ``facts.analyzer.launch``; the file alone, one pass
    per loop — what the estimator's script reader asks, at a lint's fraction of the cost.
    ``inputs``: the files the launch executes or loads (none read: nothing is known of them)."""
    return _facts_of(FileAnalyzer(tree, source, path, launch=inputs or LaunchInputs()))


def build_facts(
    tree: ast.Module, source: str, path: str, cache: SummaryCache | None = None
) -> FileFacts:
    return _facts_of(FileAnalyzer(tree, source, path, cache))


def _facts_of(analyzer: FileAnalyzer) -> FileFacts:
    analyzer.run()
    return FileFacts(
        path=analyzer.path,
        traces=analyzer.traces,
        backwarded_locs=frozenset(analyzer.backwarded_locs),
        called_functions=frozenset(analyzer.called),
        analyzer=analyzer,
    )
