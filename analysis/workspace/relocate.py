"""Findings inside another module that only this file's calls reveal, reported at the call.

A helper module analysed on its own sees its functions with guessed arguments; called
from a training script it sees the script's model (whose ``forward`` ends in softmax),
its loader, its optimizer. The rules therefore also run over the traces of the other
modules' functions as this file called them (:class:`~.linking.ForeignAnalyzer`), and a
finding there is reported in *this* file, at the call that led into the module, with the
place in the other module as its first piece of evidence (with that module's path):

- a finding the module shows on its own (same rule, same line, at least as severe, the
  module analysed alone as if it had training code) is dropped: it needs no caller, so
  it is the module's, not this file's (:func:`_own_findings`); one the caller's values
  make surer (a note alone, a warning with the caller's model) is reported here;
- a suppression comment on that line of the other module suppresses it here too;
- when the analysis stopped following calls (its budget, :data:`.linking.MAX_ENTRIES`),
  none is reported: the other modules' code was seen only in part;
- it carries no fix: its span is the call, not the code a fixer would edit; its
  ``origin`` names the other module (a typed field that
  :func:`torchward.analysis.fixes.fixes_for` reads, never the evidence's wording).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from ..finding import Evidence, Finding, Span
from ..syntax.suppressions import parse_suppressions
from .linking import ForeignAnalyzer, ProjectSession

if TYPE_CHECKING:
    from ..facts.filefacts import FileFacts
    from ..rule import Rule
    from ..settings import LintSettings

RELOCATED = "the finding is here, in the called code"
RunRules = Callable[["FileFacts", tuple[type["Rule"], ...]], tuple[list[Finding], list]]


def localised(evidence: tuple[Evidence, ...], path: str) -> tuple[Evidence, ...]:
    """``evidence`` with the pieces in its own file marked as such (no path): an analysis
    that links other modules names the path of every piece. The same tuple when nothing is
    marked, so the caller can skip rebuilding the finding (a keystroke re-delivers all)."""
    if not any(item.path == path for item in evidence):
        return evidence
    return tuple(
        Evidence(item.span, item.message) if item.path == path else item for item in evidence
    )


def linked_findings(
    facts: FileFacts, rules: tuple[type[Rule], ...], run_rules: RunRules
) -> list[Finding]:
    """Findings in the other project modules' code as this file's analysis called it."""
    from ..facts.filefacts import FileFacts

    project = facts.analyzer.project
    if project is None or not project.session.analyzers or project.session.partial:
        return []  # nothing followed, or not all of it: quiet rather than guessing
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
        own = _own_findings(owner, rules, run_rules, facts.settings)
        suppressions = parse_suppressions(owner.source)
        for finding in findings:
            line = finding.span.line
            shown = own.get((finding.code, line), -1)  # as severe, alone: the module's own
            if shown >= finding.severity.rank or suppressions.is_suppressed(finding.code, line):
                continue
            at = _entry(session, owner, finding.span)
            if at is not None:
                found.append(_relocated(finding, owner, at))
    return found


_OWN_FINDINGS: dict[tuple, dict[tuple[str, int], int]] = {}  # by module text and rules


def _own_findings(
    owner: ForeignAnalyzer,
    rules: tuple[type[Rule], ...],
    run_rules: RunRules,
    settings: LintSettings,
) -> dict[tuple[str, int], int]:
    """(rule, line) -> severity rank of what the module shows on its own: each function analysed
    alone, as if it had training code (a helper module often has no training word), so a
    finding that needs no caller — an unsafe ``torch.load`` — is never reported at every
    call into the module; only what the callers' values reveal is."""
    from ..facts.analyzer import FileAnalyzer
    from ..facts.filefacts import FileFacts

    key = (owner.path, owner.summary.digest, rules, settings)
    known = _OWN_FINDINGS.get(key)
    if known is None:
        analyzer = FileAnalyzer(owner.tree, owner.source, owner.path)
        analyzer.relevant = True
        analyzer.run()
        for info in analyzer.index.functions_in_order():  # every function, words or not
            if info.qualname not in analyzer.analyzed:
                analyzer.analyze_standalone(info)
        facts = FileFacts(
            path=owner.path,
            traces=analyzer.traces,
            backwarded_locs=frozenset(analyzer.backwarded_locs),
            called_functions=frozenset(analyzer.called),
            analyzer=analyzer,
            settings=settings,
        )
        findings, _ = run_rules(facts, rules)
        known = {}
        for found in findings:
            key_of = (found.code, found.span.line)
            known[key_of] = max(known.get(key_of, -1), found.severity.rank)
        if len(_OWN_FINDINGS) > 512:
            _OWN_FINDINGS.clear()
        _OWN_FINDINGS[key] = known
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
        finding,
        span=at,
        message=message,
        evidence=(here, *evidence),
        fixes=(),
        proofs=frozenset(),
        payload=None,
        origin=owner.path,
    )
