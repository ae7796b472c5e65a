"""Applying fixes to a whole file until nothing more changes.

One round lints the text, takes one fix per finding (the first safe one, or the first
of any kind with ``unsafe``), skips a fix whose edits touch edits already taken, applies
the rest and lints again. Skipped fixes (two fixes adding the same import at one place)
apply in the next round, against fresh positions. The loop stops when a round changes
nothing, so the result is a fixed point: running it again changes nothing.

Guards: a text that does not parse is never fixed (it is returned unchanged with the
problem), a round whose result does not parse is discarded (a fixer bug must not break
the user's file), and a round count limit ends a pair of fixes undoing each other.
"""

from __future__ import annotations

import ast
import warnings

import attrs

from ..engine import Problem, analyze_source
from ..finding import Applicability, Edit, Finding
from ..settings import LintSettings
from .edits import apply_edits, overlaps

MAX_ROUNDS = 10  # ruff uses 100; a torchward fix rarely enables another, so 10 is ample


@attrs.frozen
class FixOutcome:
    text: str  # the fixed text (the input when nothing applied)
    applied: tuple[tuple[str, str], ...] = ()  # (code, fix title) of each applied fix
    remaining: tuple[Finding, ...] = ()  # findings of the final text
    problems: tuple[Problem, ...] = ()  # why the text could not be (fully) fixed

    @property
    def changed(self) -> bool:
        return bool(self.applied)


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
            ast.parse(text)
        return True
    except (SyntaxError, ValueError):
        return False


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
    report = analyze_source(text, path, settings)
    for _ in range(MAX_ROUNDS):
        if report.problems and any(p.kind == "syntax-error" for p in report.problems):
            return FixOutcome(text, tuple(applied), report.findings, report.problems)
        taken: list[Edit] = []
        titles = []
        for finding in with_fixes(text, report.findings):
            fix = choose(finding, unsafe)
            if fix is None or overlaps(fix.edits, taken):
                continue
            taken.extend(fix.edits)
            titles.append((finding.code, fix.title))
        if not taken:
            break
        candidate = apply_edits(text, taken)
        if candidate == text or not _parses(candidate):
            problem = (
                Problem("internal-error", "a fix produced invalid code and was not applied")
                if candidate != text
                else None
            )
            return FixOutcome(text, tuple(applied), report.findings, (problem,) if problem else ())
        text = candidate
        applied.extend(titles)
        report = analyze_source(text, path, settings)
    return FixOutcome(text, tuple(applied), report.findings, report.problems)
