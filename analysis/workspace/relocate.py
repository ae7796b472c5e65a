"""Findings inside another module that only this file's calls reveal, reported at the call.

A helper module analysed on its own sees its functions with guessed arguments; called
from a training script it sees the script's model (whose ``forward`` ends in softmax),
its loader, its optimizer. The rules therefore also run over the traces of the other
modules' functions as this file called them (:class:`~.linking.ForeignAnalyzer`), and a
finding there is reported in *this* file, at the call that led into the module, with the
place in the other module as its first piece of evidence (with that module's path):

- a finding the module's own check reports anyway (same rule, same line) is dropped:
  the module's own report already shows it, where it is;
- a suppression comment on that line of the other module suppresses it here too;
- it carries no fix: its span is the call, not the code a fixer would edit
  (:func:`is_relocated`, which :func:`torchward.analysis.fixes.fixes_for` honours).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from ..finding import Evidence, Finding, Span
from ..suppressions import parse_suppressions
from .linking import ForeignAnalyzer, ProjectSession

if TYPE_CHECKING:
    from ..facts import FileFacts
    from ..rule import Rule
    from ..settings import LintSettings

RELOCATED = "the finding is here, in the called code"
RunRules = Callable[["FileFacts", tuple[type["Rule"], ...]], tuple[list[Finding], list]]


def is_relocated(finding: Finding) -> bool:
    """A finding reported at a call for code in another module (it has no fix here)."""
    return bool(finding.evidence) and finding.evidence[0].message.startswith(RELOCATED)


def localised(finding: Finding, path: str) -> Finding:
    """``finding`` with evidence in its own file marked as such (no path): an analysis that
    links other modules names the path of every piece of evidence."""
    if not any(item.path == path for item in finding.evidence):
        return finding
    evidence = tuple(
        attrs.evolve(item, path=None) if item.path == path else item for item in finding.evidence
    )
    return attrs.evolve(finding, evidence=evidence)


def linked_findings(
    facts: FileFacts, rules: tuple[type[Rule], ...], run_rules: RunRules
) -> list[Finding]:
    """Findings in the other project modules' code as this file's analysis called it."""
    from ..facts import FileFacts

    project = facts.analyzer.project
    if project is None or not project.session.analyzers:
        return []
    session = project.session
    found: list[Finding] = []
    for owner in list(session.analyzers.values()):
        if not owner.traces:
            continue
        foreign = FileFacts(
            path=owner.path,
            traces=owner.traces,
            backwarded_locs=frozenset(owner.backwarded_locs | facts.analyzer.backwarded_locs),
            called_functions=frozenset(owner.called),
            analyzer=owner,
            settings=facts.settings,
        )
        findings, _ = run_rules(foreign, rules)
        if not findings:
            continue
        own = _own_report(owner, facts.settings)
        suppressions = parse_suppressions(owner.source)
        for finding in findings:
            line = finding.span.line
            if (finding.code, line) in own or suppressions.is_suppressed(finding.code, line):
                continue
            at = _entry(session, owner, finding.span)
            if at is not None:
                found.append(_relocated(finding, owner, at))
    return found


_OWN_REPORTS: dict[tuple, frozenset[tuple[str, int]]] = {}  # by module text and settings


def _own_report(owner: ForeignAnalyzer, settings: LintSettings) -> frozenset[tuple[str, int]]:
    """(rule, line) of what the module's own check reports."""
    from ..engine import analyze_source

    key = (owner.path, owner.summary.digest, settings)
    known = _OWN_REPORTS.get(key)
    if known is None:
        every_note = attrs.evolve(settings, notes_per_file=None)
        report = analyze_source(owner.source, owner.path, every_note)
        known = frozenset((f.code, f.span.line) for f in report.findings)
        if len(_OWN_REPORTS) > 512:
            _OWN_REPORTS.clear()
        _OWN_REPORTS[key] = known
    return known


def _entry(session: ProjectSession, owner: ForeignAnalyzer, span: Span) -> Span | None:
    """The call in the analysed file that led into the function holding ``span``."""
    index = owner.index
    holding = [
        info
        for info in index.functions.values()
        if info.node.lineno <= span.line <= (info.node.end_lineno or info.node.lineno)
    ]
    for info in sorted(holding, key=lambda i: -i.node.lineno):  # innermost first
        at = session.entries.get((owner.path, info.qualname))
        if at is not None:
            return at
    return session.first_entries.get(owner.path)


def _relocated(finding: Finding, owner: ForeignAnalyzer, at: Span) -> Finding:
    name = os.path.basename(owner.path)
    here = Evidence(finding.span, f"{RELOCATED} ({name}:{finding.span.line})", owner.path)
    evidence: Sequence[Evidence] = [
        item if item.path else attrs.evolve(item, path=owner.path) for item in finding.evidence
    ]
    message = f"in `{name}`, as called here: {finding.message}"
    return attrs.evolve(
        finding, span=at, message=message, evidence=(here, *evidence), fixes=(), proofs=frozenset()
    )
