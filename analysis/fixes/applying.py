"""Applying fixes to a whole file until nothing more changes, each fix at most once.

One round lints the text, takes one fix per finding (the first safe one, or the first
of any kind with ``unsafe``), skips a fix whose edits touch edits already taken, applies
the rest and lints again. Skipped fixes (two fixes adding the same import at one place)
apply in the next round, against fresh positions.

Idempotent by construction, not by hoping every fixer is right:

- A finding's *identity* is its code and its span, carried through every later edit
  (:class:`_Mark`). A finding whose identity was already fixed (or given up on) in this
  run is never fixed again, so no fix can stack on its own output.
- After a round, a fix whose finding is still there (same code, overlapping the span
  its rewrite left) did not fix it: the round is redone without it, and the fix is
  reported as a fixer bug (problem kind ``fixer-bug``) instead of being applied. Without
  this, ``loss.backward()`` would become ``((loss / n) / n).backward()`` and so on.

So every applied fix removed its finding, and a second run meets only findings whose
fixes were refused the same way: it changes nothing.

Guards: a text that does not parse is never fixed (it is returned unchanged with the
problem), a round whose result does not parse is discarded (a fixer bug must not break
the user's file), and a round count limit ends a chain of fixes that keep enabling others.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import attrs

from ..engine import Problem, analyze_source
from ..finding import Applicability, Edit, Finding, Fix, Span
from ..settings import LintSettings
from ..syntax.parsing import parse_module
from .edits import Offsets, apply_edits, overlaps

MAX_ROUNDS = 10  # ruff uses 100; a torchward fix rarely enables another, so 10 is ample

FIXER_BUG = "fixer-bug"


@attrs.frozen
class FixOutcome:
    text: str  # the fixed text (the input when nothing applied)
    applied: tuple[tuple[str, str], ...] = ()  # (code, fix title) of each applied fix
    remaining: tuple[Finding, ...] = ()  # findings of the final text
    problems: tuple[Problem, ...] = ()  # why the text could not be (fully) fixed

    @property
    def changed(self) -> bool:
        return bool(self.applied)


@attrs.frozen
class _Mark:
    """A finding's identity: its code and its span as character offsets of the current text."""

    code: str
    start: int
    end: int

    def covers(self, code: str, start: int, end: int) -> bool:
        """Same code, and the spans overlap (an empty span overlaps where it sits)."""
        if code != self.code:
            return False
        return (start < self.end and self.start < end) or start == self.start or end == self.end

    def moved(self, edits: Sequence[tuple[int, int, str]]) -> _Mark:
        return _Mark(self.code, _moved(self.start, edits, False), _moved(self.end, edits, True))


@attrs.frozen
class _Choice:
    finding: Finding
    fix: Fix
    mark: _Mark


def _moved(offset: int, edits: Sequence[tuple[int, int, str]], at_end: bool) -> int:
    """Where ``offset`` of the old text lands after ``edits`` (sorted, non-overlapping).

    An offset inside a replaced range goes to the start of its replacement, or to its
    end for the end of a span, so the span covers everything its rewrite produced.
    """
    shift = 0
    for start, end, text in edits:
        if end <= offset and not (start == end == offset and not at_end):
            shift += len(text) - (end - start)
        elif start < offset < end or start == offset == end:
            return start + shift + (len(text) if at_end else 0)
        elif start >= offset:
            break
    return offset + shift


def choose(finding: Finding, unsafe: bool):
    """The fix to apply for ``finding``: the first safe one, or with ``unsafe`` the first."""
    for fix in finding.fixes:
        if not fix.edits or fix.applicability is Applicability.DISPLAY_ONLY:
            continue
        if fix.applicability is Applicability.SAFE or unsafe:
            return fix
    return None


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parse_module(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _span_offsets(offsets: Offsets, span: Span) -> tuple[int, int]:
    return offsets.offset(span.line, span.column), offsets.offset(span.end_line, span.end_column)


def _edit_offsets(offsets: Offsets, edits: Sequence[Edit]) -> list[tuple[int, int, str]]:
    return sorted((*_span_offsets(offsets, edit.span), edit.text) for edit in edits)


def _survivors(choices: Sequence[_Choice], edits, findings: Sequence[Finding], text: str):
    """The choices whose finding is still in ``findings`` (of the text after ``edits``)."""
    offsets = Offsets(text)
    after = [(finding.code, *_span_offsets(offsets, finding.span)) for finding in findings]
    survivors = []
    for choice in choices:
        mark = choice.mark.moved(edits)
        if any(mark.covers(*item) for item in after):
            survivors.append(choice)
    return survivors


def _fixer_bug(choice: _Choice) -> Problem:
    return Problem(
        FIXER_BUG,
        f"{choice.finding.code} fix {choice.fix.title!r} was not applied: its finding is still "
        "there after the rewrite (a bug in the fixer; please report it)",
        choice.finding.span,
    )


def fix_source(
    source: str,
    path: str = "<string>",
    settings: LintSettings = LintSettings(),
    *,
    unsafe: bool = False,
) -> FixOutcome:
    """Apply fixes to ``source`` until stable; the text, what was applied, what remains."""
    from . import with_fixes

    text, applied = source, []
    problems: list[Problem] = []
    done: list[_Mark] = []  # identities fixed or given up on, in the current text's offsets
    report = analyze_source(text, path, settings)
    for _ in range(MAX_ROUNDS):
        if report.problems and any(p.kind == "syntax-error" for p in report.problems):
            return FixOutcome(text, tuple(applied), report.findings, report.problems)
        offsets = Offsets(text)
        taken: list[Edit] = []
        choices: list[_Choice] = []
        for finding in with_fixes(text, report.findings):
            start, end = _span_offsets(offsets, finding.span)
            if any(mark.covers(finding.code, start, end) for mark in done):
                continue
            fix = choose(finding, unsafe)
            if fix is None or overlaps(fix.edits, taken):
                continue
            taken.extend(fix.edits)
            choices.append(_Choice(finding, fix, _Mark(finding.code, start, end)))
        while choices:
            edits = _edit_offsets(offsets, [e for choice in choices for e in choice.fix.edits])
            candidate = apply_edits(text, [e for choice in choices for e in choice.fix.edits])
            if candidate == text:
                choices = []
                break
            if not _parses(candidate):
                problem = Problem(
                    "internal-error", "a fix produced invalid code and was not applied"
                )
                return FixOutcome(text, tuple(applied), report.findings, (*problems, problem))
            after = analyze_source(candidate, path, settings)
            survivors = _survivors(choices, edits, after.findings, candidate)
            if not survivors:
                break
            problems.extend(_fixer_bug(choice) for choice in survivors)
            done.extend(choice.mark for choice in survivors)
            choices = [choice for choice in choices if choice not in survivors]
        if not choices:
            break
        done = [mark.moved(edits) for mark in done] + [c.mark.moved(edits) for c in choices]
        text = candidate
        applied.extend((choice.finding.code, choice.fix.title) for choice in choices)
        report = after
    return FixOutcome(text, tuple(applied), report.findings, (*report.problems, *problems))
