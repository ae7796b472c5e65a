"""``--report-unused-suppressions``: suppression comments that suppress nothing.

A stale ``# torchward: ignore[TW001]`` hides the next real bug on that line. To know
which comments are used, the file is analysed once more with every suppression comment
blanked out (replaced by spaces of the same length, so no position moves and comments
never change the analysis), and each comment is checked against those raw findings.

Only torchward's own business is reported: ``# torchward: ignore[...]`` and codes
``TW…``/``TG…`` in ``# noqa``. A bare ``# noqa`` or ``# noqa: E501`` may serve flake8 or
ruff, so it is never called unused; neither is a code whose rule is not enabled in this
run (it may be used in another configuration). Reported as ``TW100
unused-suppression``, a warning, not a rule of the registry: it is about comments, not
about training code.
"""

from __future__ import annotations

import io
import tokenize

from .analysis import (
    Confidence,
    Finding,
    LintSettings,
    Severity,
    Span,
    analyze_source,
    decode_source,
)
from .analysis.syntax.suppressions import _FILE, _INLINE, ALL, _codes

CODE, NAME = "TW100", "unused-suppression"
SUMMARY = "A suppression comment suppresses no finding."


def _comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of every real comment."""
    try:
        return [
            (tok.start[0], tok.start[1], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return []


def _blank(source: str, comments) -> str:
    lines = source.splitlines(keepends=True)
    for line, column, text in comments:
        row = lines[line - 1]
        lines[line - 1] = row[:column] + " " * len(text) + row[column + len(text) :]
    return "".join(lines)


def audit_source(source: str, path: str, settings: LintSettings) -> tuple[Finding, ...]:
    marked = [
        (line, column, text)
        for line, column, text in _comments(source)
        if _INLINE.search(text) or _FILE.search(text)
    ]
    if not marked:
        return ()
    raw = analyze_source(_blank(source, marked), path, settings).findings
    by_line: dict[int, set[str]] = {}
    for finding in raw:
        by_line.setdefault(finding.span.line, set()).add(finding.code)
    everywhere = {finding.code for finding in raw}
    unused = []
    for line, column, text in marked:
        for match in list(_INLINE.finditer(text)) + list(_FILE.finditer(text)):
            whole_file = match.re is _FILE
            written = (
                match.group("codes")
                if whole_file
                else (match.group("tw") if match.group("tw") is not None else match.group("noqa"))
            )
            if (
                not whole_file
                and match.group("tw") is None
                and "torchward" not in match.group(0).lower()
                and not written
            ):
                continue  # a bare noqa comment: may be flake8's
            seen = everywhere if whole_file else by_line.get(line, set())
            codes = _codes(written)
            if ALL in codes:
                stale = [] if seen else ["every code"]
            else:
                stale = [
                    c
                    for c in sorted(codes)
                    if c.startswith("TW") and settings.is_enabled(c) and c not in seen
                ]
            if stale:
                span = Span(line, column + match.start(), line, column + match.end())
                what = ", ".join(stale)
                unused.append(
                    Finding(
                        CODE,
                        NAME,
                        Severity.WARNING,
                        Confidence.HIGH,
                        span,
                        f"this suppression ({what}) suppresses nothing: remove it, "
                        "or it will hide the next real finding here",
                        path,
                    )
                )
    return tuple(unused)


def unused_suppressions(absolute: str, path: str, selection) -> tuple[Finding, ...]:
    try:
        with open(absolute, "rb") as handle:
            source = decode_source(handle.read())
    except (OSError, UnicodeDecodeError, ValueError):
        return ()
    if "noqa" not in source.lower() and "torchward:" not in source.lower():
        return ()
    if absolute.endswith(".ipynb"):
        from .notebook import program

        try:
            source = program(source).text
        except ValueError:
            return ()
    settings = selection.settings_for(absolute) if selection is not None else LintSettings()
    return audit_source(source, path, settings)
