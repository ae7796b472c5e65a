"""One file in, its findings out: parse once, derive facts once, run every enabled rule.

This is the single entry point that the CLI, the language server and the estimator's
script reader share. It never raises for bad input: a syntax error, a binary or
non-UTF-8 file becomes a :class:`Problem` on the report, and an exception inside one
rule is logged and isolated to that rule, so the other rules still report.

That graceful degradation hides bugs from tests: a fact builder that raises on every
file yields reports with no findings, and a test comparing two of them passes. Under
``$TORCHWARD_STRICT`` (the test suite sets it, ``tests/conftest.py``) every internal
exception is re-raised instead, so the test that triggered it fails.
"""

from __future__ import annotations

import ast
import logging
import os
import warnings

import attrs
from torchward.estimator import dependencies

from .effects.table import using as library_effects
from .facts.filefacts import FileFacts, build_facts
from .facts.summaries import SummaryCache
from .finding import Finding, Severity, Span
from .rule import Rule, all_rules
from .settings import LintSettings
from .syntax.parsing import parse_module
from .syntax.positions import LineIndex
from .syntax.reparse import reparse
from .syntax.suppressions import parse_suppressions
from .workspace.relocate import linked_findings, localised

log = logging.getLogger(__name__)

STRICT = "TORCHWARD_STRICT"  # set and not "0": internal exceptions are raised, not degraded


def strict() -> bool:
    """Whether an exception inside the analysis propagates (tests) instead of becoming an
    internal-error problem (users). Read per call: a test may turn it off for itself."""
    return os.environ.get(STRICT, "0") not in ("", "0")


@attrs.frozen
class Problem:
    """Why a file could not be (fully) analysed: a syntax error, bad encoding, a crash."""

    kind: str  # "syntax-error" | "encoding" | "internal-error"
    message: str
    span: Span | None = None


@attrs.frozen
class FileReport:
    path: str
    findings: tuple[Finding, ...] = ()
    problems: tuple[Problem, ...] = ()


def decode_source(data: bytes) -> str:
    """Decode file bytes as Python source; raises ``UnicodeDecodeError``/``ValueError``."""
    if b"\x00" in data[:8192]:
        raise ValueError("binary file (contains NUL bytes)")
    text = data.decode("utf-8-sig")
    return text


def parse(
    source: str, path: str, cache: SummaryCache | None = None
) -> tuple[ast.Module | None, Problem | None]:
    """Parse ``source``; with a cache, only the top-level statements an edit touched."""
    # reparse consumes the old tree: it is taken from the cache, and put back on failure
    previous = cache.take_tree(path) if cache is not None else None
    kept = previous
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are not our business
            if previous is not None:
                tree = reparse(previous[0], previous[1], source, path)
            else:
                tree = parse_module(source, path)
        kept = (source, tree)
        return tree, None
    except SyntaxError as error:
        line = error.lineno or 1
        column = max((error.offset or 1) - 1, 0)
        end_line = error.end_lineno or line
        end_column = (error.end_offset or (error.offset or 1) + 1) - 1
        if (end_line, end_column) <= (line, column):
            end_line, end_column = line, column + 1
        return None, Problem(
            "syntax-error", f"SyntaxError: {error.msg}", Span(line, column, end_line, end_column)
        )
    except (ValueError, RecursionError, MemoryError) as error:
        return None, Problem("syntax-error", f"cannot parse: {error}")
    finally:
        if cache is not None and kept is not None:
            cache.remember_tree(path, *kept)


def run_rules(
    facts: FileFacts, rules: tuple[type[Rule], ...]
) -> tuple[list[Finding], list[Problem]]:
    findings: list[Finding] = []
    problems: list[Problem] = []
    for rule_class in rules:
        try:
            findings.extend(rule_class().check(facts))
        except Exception as error:  # one broken rule must not silence the others
            if strict():
                raise
            log.exception("rule %s crashed on %s", rule_class.code, facts.path)
            problems.append(Problem("internal-error", f"rule {rule_class.code} failed: {error!r}"))
    return findings, problems


def analyze_source(
    source: str,
    path: str = "<string>",
    settings: LintSettings = LintSettings(),
    cache: SummaryCache | None = None,
) -> FileReport:
    """Lint ``source`` (the text of the file at ``path``) and return its report.

    ``cache`` (the language server passes one per session) keeps function analyses across
    calls, so re-linting after an edit re-analyses only what the edit could change. The
    project files the analysis reads are checked once each (a memoised module resolution
    is revalidated against the file system, and one file imports many siblings).
    """
    # the project's [tool.torchward.effects] extend the library-effects table for the
    # dataflow and the rules alike
    with dependencies.one_observation_each(), library_effects(settings.effects):
        return _analyze(source, path, settings, cache)


def _analyze(
    source: str, path: str, settings: LintSettings, cache: SummaryCache | None
) -> FileReport:
    rules = tuple(rule for rule in all_rules() if settings.is_enabled(rule.code))
    tree, problem = parse(source, path, cache)
    if tree is None:
        return FileReport(path, (), (problem,) if problem else ())
    if not rules:
        return FileReport(path)
    try:
        facts = build_facts(tree, source, path, cache)
        facts.settings = settings
    except RecursionError:
        return FileReport(
            path, (), (Problem("internal-error", "file too deeply nested to analyse"),)
        )
    except Exception as error:  # the analysis must degrade, never take the caller down
        if strict():
            raise
        log.exception("analysis failed on %s", path)
        return FileReport(path, (), (Problem("internal-error", f"analysis failed: {error!r}"),))
    findings, problems = run_rules(facts, rules)
    findings += _linked_findings(facts, rules)
    if not findings:
        return FileReport(path, (), tuple(problems))
    suppressions = parse_suppressions(source)
    kept = []
    for finding in findings:
        if suppressions.is_suppressed(finding.code, finding.span.line):
            continue
        evidence = localised(finding.evidence, path)
        severity = settings.severity_for(finding.code, finding.severity)
        # attrs.evolve only where something changes: a keystroke re-delivers every finding
        if (
            evidence is not finding.evidence
            or finding.path != path
            or finding.severity is not severity
        ):
            finding = attrs.evolve(finding, evidence=evidence, path=path, severity=severity)
        kept.append(finding)
    kept.sort(key=_order)
    shown = _cap_notes(_dedupe(kept), settings.notes_per_file)
    return FileReport(path, tuple(shown), tuple(problems))


def _linked_findings(facts: FileFacts, rules: tuple[type[Rule], ...]) -> list[Finding]:
    """Findings in other project modules' code as this file calls it (reported at the call)."""
    try:
        return linked_findings(facts, rules, run_rules)
    except Exception:  # cross-file findings are extra: never lose the file's own
        if strict():
            raise
        log.exception("cross-file findings failed on %s", facts.path)
        return []


def _order(finding: Finding) -> tuple:
    """By span, then code: Span's fields in their order, as plain ints (attrs' ``__lt__``
    builds two tuples per comparison: a tenth of an editor keystroke at 140 findings)."""
    span = finding.span
    return (span.line, span.column, span.end_line, span.end_column, finding.code)


def _cap_notes(findings: list[Finding], limit: int | None) -> list[Finding]:
    """Keep every warning and error, and only the first ``limit`` notes of the file."""
    if limit is None:
        return findings
    kept: list[Finding] = []
    notes = 0
    for finding in findings:
        if finding.severity is Severity.NOTE:
            notes += 1
            if notes > limit:
                continue
        kept.append(finding)
    return kept


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple] = set()
    unique = []
    for finding in findings:
        key = (finding.code, finding.span)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique


__all__ = ["FileReport", "LineIndex", "Problem", "analyze_source", "decode_source"]
