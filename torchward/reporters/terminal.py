"""``--format terminal``: what a person reads, in the shape compilers taught them.

Each finding starts with ``path:line:col: CODE message`` (1-based, so editors and
terminals turn it into a link), then the source line with a caret span and the
severity, the evidence that proves it, and a ``help:`` line (the first fix's title, or
where to read more). A summary ends the output. Hints (right, but rarely worth acting
on) are listed only with ``--show-hints``; the summary counts them apart either way, so
a run with hidden hints says so. Colour only when writing to a
terminal and ``NO_COLOR`` is unset (https://no-color.org); CI logs and pipes stay plain.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TextIO

from ..notebook import cell_lines, location, split_cell
from ..statistics import REPORTED, count_by_code, count_by_severity, plural, shown

_STYLES = {
    "bold": "1",
    "error": "1;31",
    "warning": "1;33",
    "note": "1;36",
    "hint": "2",
    "gutter": "34",
    "code": "1;35",
    "dim": "2",
}


def should_colour(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Colour for a TTY only, and never when ``NO_COLOR`` is set to anything non-empty."""
    if environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, style: str, text: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_CELL_PLACE = re.compile(r"^(cell \d+, line \d+(?:, column \d+)?): ")


def problem_line(path: str, problem) -> str:
    """One line for a file that could not be analysed: ``path:line:col: kind message``.

    A notebook's problem says its place in cell terms (``nb.ipynb: cell 3, line 1,
    column 5: syntax-error ...``): a line number of the JSON file would mislead.
    """
    place = _CELL_PLACE.match(problem.message) if path.endswith(".ipynb") else None
    if place is not None and problem.span is None:
        return f"{path}: {place.group(1)}: {problem.kind} {problem.message[place.end() :]}"
    line, column = (problem.span.line, problem.span.column + 1) if problem.span else (1, 1)
    return f"{path}:{line}:{column}: {problem.kind} {problem.message}"


class SourceLines:
    """The text of files with findings, read once each and only for display."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def line(self, path: str, number: int) -> str | None:
        if path not in self._files and split_cell(path)[1] is not None:
            self._files[path] = cell_lines(path)
        if path not in self._files:
            try:
                with open(path, encoding="utf-8-sig", errors="replace") as handle:
                    # Python's lines, as the finding counts them (not str.splitlines)
                    self._files[path] = _LINE_BREAK.split(handle.read())
            except OSError:
                self._files[path] = []
        lines = self._files[path]
        return lines[number - 1] if 0 < number <= len(lines) else None


def _snippet(paint: Painter, text: str, span, severity: str, confidence: str) -> list[str]:
    number = str(span.line)
    pad = " " * len(number)
    end = span.end_column if span.end_line == span.line else len(text.rstrip())
    prefix = text[: span.column].expandtabs(4)
    width = max(len(text[span.column : end].expandtabs(4)), 1)
    label = severity if confidence == "high" else f"{severity} ({confidence} confidence)"
    carets = " " * len(prefix) + "^" * width
    return [
        f" {pad} {paint('gutter', '|')}",
        f" {paint('gutter', number)} {paint('gutter', '|')} {text.expandtabs(4)}",
        f" {pad} {paint('gutter', '|')} {paint(severity, carets + ' ' + label)}",
    ]


def format_finding(finding, lines: SourceLines, paint: Painter) -> list[str]:
    span = finding.span
    where = location(finding.path, span.line, span.column + 1)
    head = f"{paint('bold', f'{where}:')} {paint('code', finding.code)} {finding.message}"
    out = [head]
    text = lines.line(finding.path, span.line)
    if text is not None:
        out += _snippet(paint, text, span, finding.severity.value, finding.confidence.value)
    for item in finding.evidence:
        where = f"{item.path}:" if item.path and item.path != finding.path else ""
        out.append(
            f"   {paint('gutter', '=')} {paint('dim', f'{where}{item.span.line}:{item.span.column + 1}:')} {item.message}"
        )
    help_text = (
        finding.fixes[0].title
        if finding.fixes
        else f"run `torchward explain {finding.code}` for why and how to fix it"
    )
    out.append(f"   {paint('gutter', '=')} {paint('bold', 'help:')} {help_text}")
    return out


def _summary(result, paint: Painter, show_hints: bool) -> str:
    counts = count_by_severity(result.reports)
    total = sum(counts[level] for level in REPORTED)
    files = plural(result.files_checked, "file")
    cached = f" ({result.files_cached} unchanged, from cache)" if result.files_cached else ""
    if not total:
        text = f"No findings in {files} checked{cached}."
    else:
        parts = ", ".join(plural(counts[level], level) for level in REPORTED if counts[level])
        with_findings = sum(1 for report in result.reports if shown(report.findings, False))
        text = f"Found {plural(total, 'finding')} ({parts}) in {with_findings} of {files} checked{cached}."
    hints = counts["hint"]
    if hints:
        shown_or_not = "" if show_hints else " not shown (--show-hints)"
        text += f" {'Also ' if show_hints else ''}{plural(hints, 'hint')}{shown_or_not}."
    broken = sum(1 for report in result.reports if report.problems)
    if broken:
        text += f" {plural(broken, 'file')} could not be fully analysed."
    return paint("bold", text)


def _statistics(result) -> list[str]:
    rows = count_by_code(result.reports)
    if not rows:
        return []
    width = max(len(str(row.count)) for row in rows)
    name_width = max(len(row.name) for row in rows)
    return [
        f"{row.count:>{width}}  {row.code}  {row.name:<{name_width}}  "
        + ", ".join(plural(n, level) for level, n in row.severities)
        for row in rows
    ]


def write(
    result,
    stream: TextIO,
    *,
    errors: TextIO,
    statistics: bool = False,
    colour: bool = False,
    show_hints: bool = False,
) -> None:
    """Findings, then files that could not be analysed, then the summary, all on ``stream``.

    ``errors`` is unused: a person reads one stream, in order. ``--statistics`` counts
    every severity, hints included (each row names its severities).
    """
    paint = Painter(colour)
    out: list[str] = []
    if statistics:
        out += _statistics(result)
    else:
        lines = SourceLines()
        for report in result.reports:
            for finding in shown(report.findings, show_hints):
                out += format_finding(finding, lines, paint)
                out.append("")
    finish(out, result, paint, stream, show_hints)


def finish(
    out: list[str], result, paint: Painter, stream: TextIO, show_hints: bool = False
) -> None:
    """The end every human-readable format shares: files that could not be analysed, the
    summary, and the write."""
    for report in result.reports:
        for problem in report.problems:
            out.append(paint("error", problem_line(report.path, problem)))
    if out and out[-1] != "":
        out.append("")
    out.append(_summary(result, paint, show_hints))
    stream.write("\n".join(out) + "\n")
