"""Counts over a run: per code for ``--statistics``, per severity for the summary line,
and which severities the human-readable formats list by default (hints only on request)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import attrs

SEVERITY_ORDER = ("error", "warning", "note", "hint")
#: the severities ``torchward check`` reports by default: a hint is shown only when asked
#: for (``--show-hints``) and is counted apart from the findings in the summary line
REPORTED = ("error", "warning", "note")


@attrs.frozen
class CodeCount:
    code: str
    name: str
    count: int
    severities: tuple[tuple[str, int], ...]  # (severity, count), worst first, zeros left out


def count_by_code(reports: Iterable) -> list[CodeCount]:
    """One row per rule code, most frequent first (then by code)."""
    names: dict[str, str] = {}
    per_code: dict[str, Counter] = {}
    for report in reports:
        for finding in report.findings:
            names[finding.code] = finding.name
            per_code.setdefault(finding.code, Counter())[finding.severity.value] += 1
    rows = [
        CodeCount(
            code,
            names[code],
            sum(counts.values()),
            tuple((level, counts[level]) for level in SEVERITY_ORDER if counts[level]),
        )
        for code, counts in per_code.items()
    ]
    return sorted(rows, key=lambda row: (-row.count, row.code))


def shown(findings: Iterable, show_hints: bool) -> list:
    """The findings a human-readable format lists: hints only with ``--show-hints``."""
    return [f for f in findings if show_hints or f.severity.value in REPORTED]


def count_by_severity(reports: Iterable) -> Counter:
    return Counter(finding.severity.value for report in reports for finding in report.findings)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")
