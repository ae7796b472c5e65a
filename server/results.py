"""What the server last learnt about a document, and how it follows edits.

Each open document has one :class:`AnalysisState`. ``good`` holds the findings of the
last analysis that parsed, moved line by line through every edit since (a finding on
an edited line stays where it was but loses its fixes, whose edits may no longer fit;
one whose line was deleted is dropped). While the user types an incomplete statement
the analysis reports a syntax error, and the server keeps serving ``good`` with one
syntax diagnostic added instead of clearing every warning on each keystroke.

A :class:`DocumentResult` is published only for the document version it was computed
from, and only for the current settings ``generation``: results that were overtaken
are dropped, never published.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import Finding, Problem, Span

from .documents import LineShift

_RESULT_IDS = itertools.count(1)
END_OF_LINE = 1 << 30  # a column past any real line; clamped when converted


@attrs.frozen
class DocumentResult:
    """The findings to show for one version of a document, under one settings generation."""

    version: int
    generation: int
    findings: tuple[Finding, ...] = ()
    problems: tuple[Problem, ...] = ()
    carried: bool = False
    """Findings of an earlier version moved to this one, not an analysis of it: a
    document analysed on save only (:mod:`.onsave`) is analysed again when saved."""
    result_id: str = attrs.field()
    """Unique per report sent; ``"<version>.<n>"``: the document version it was computed
    from leads, so a log (or a test) can tell a report for an older version at a glance."""

    @result_id.default
    def _next_result_id(self) -> str:
        return f"{self.version}.{next(_RESULT_IDS)}"

    def moved(self, findings: tuple[Finding, ...]) -> DocumentResult:
        """The same result with its findings moved by an edit: a new result id when they
        moved, so a client that pulls gets the new positions rather than "unchanged"."""
        if findings == self.findings:
            return self
        return attrs.evolve(self, findings=findings, result_id=self._next_result_id())

    @property
    def syntax_error(self) -> Problem | None:
        return next((p for p in self.problems if p.kind == "syntax-error"), None)


@attrs.define
class AnalysisState:
    good: tuple[Finding, ...] = ()
    result: DocumentResult | None = None

    def follow(self, shifts: list[LineShift]) -> None:
        """Move the last good findings (and the shown result) through ``shifts``."""
        if not shifts:
            return
        before = self.good
        self.good = shift_findings(before, shifts)
        if self.result is not None:
            shown = self.result.findings
            # after a clean analysis both are the same tuple: move it once
            moved = self.good if shown is before else shift_findings(shown, shifts)
            self.result = self.result.moved(moved)


def shift_findings(findings: tuple[Finding, ...], shifts: list[LineShift]) -> tuple[Finding, ...]:
    """``findings`` moved through ``shifts``; a finding the edits cannot touch is kept as
    is (the same object), so a keystroke costs in proportion to what it moved."""
    moved = []
    changed = False
    for finding in findings:
        current: Finding | None = finding
        for shift in shifts:
            if current is None:
                break
            if not _affected(current, shift):
                continue
            current = _shift_finding(current, shift)
        if current is not finding:
            changed = True
        if current is not None:
            moved.append(current)
    return tuple(moved) if changed else findings


def _affected(finding: Finding, shift: LineShift) -> bool:
    """Whether ``shift`` moves or touches anything ``finding`` points at: a span ending
    before the edit never is; with no lines added or removed, nor is one after it."""
    spans = [finding.span]
    spans.extend(item.span for item in finding.evidence if item.path is None)
    spans.extend(edit.span for fix in finding.fixes for edit in fix.edits)
    return any(
        span.end_line >= shift.first and (shift.delta != 0 or span.line <= shift.last)
        for span in spans
    )


def _shift_line(line: int, shift: LineShift) -> int | None:
    """Where 1-based ``line`` is after ``shift``; None when the line was deleted."""
    if line < shift.first:
        return line
    if line > shift.last:
        return line + shift.delta
    return line if line <= shift.new_last() else None


def _shift_span(span: Span, shift: LineShift) -> Span | None:
    from torchward.analysis import Span

    line = _shift_line(span.line, shift)
    if line is None:
        return None
    end_line = _shift_line(span.end_line, shift)
    if end_line is None or end_line < line:
        # the end was deleted: keep the start, run to the end of its line (the bridge
        # clamps columns to the line when it builds the range)
        return Span(line, span.column, line, END_OF_LINE)
    return Span(line, span.column, end_line, span.end_column)


def _touches(span: Span, shift: LineShift) -> bool:
    return span.line <= shift.last and span.end_line >= shift.first


def _shift_finding(finding: Finding, shift: LineShift) -> Finding | None:
    from torchward.analysis import Edit, Evidence, Fix

    old = finding.span
    if shift.removes(old.line, old.column, old.end_line, old.end_column):
        return None  # the flagged code itself was replaced or deleted
    span = _shift_span(old, shift)
    if span is None:
        return None
    evidence = []
    for item in finding.evidence:
        if item.path is not None:
            evidence.append(item)
            continue
        moved = _shift_span(item.span, shift)
        if moved is not None:
            evidence.append(Evidence(moved, item.message, item.path))
    fixes: tuple[Fix, ...] = ()
    edits_untouched = all(
        not _touches(edit.span, shift) for fix in finding.fixes for edit in fix.edits
    )
    if edits_untouched and not _touches(finding.span, shift):
        fixes = tuple(
            Fix(
                fix.title,
                fix.applicability,
                tuple(Edit(_shift_span(e.span, shift) or e.span, e.text) for e in fix.edits),
            )
            for fix in finding.fixes
        )
    return attrs.evolve(finding, span=span, evidence=tuple(evidence), fixes=fixes)
