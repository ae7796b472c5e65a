"""``--format json``: a JSON array of findings, the stable shape of docs/json-format.md.

The array holds findings only (``Finding.to_dict()``: 1-based lines and columns), so a
consumer can rely on one element type. Files that could not be analysed (syntax
errors, unreadable or non-UTF-8 files) go to standard error as text lines and make the
exit status 1; they are not findings of a rule. With ``--statistics`` the array holds
one object per code instead: ``{code, name, count, severities: {error: n, ...}}``.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..statistics import count_by_code
from .terminal import problem_line


def write(result, stream: TextIO, *, errors: TextIO, statistics: bool = False, colour: bool = False) -> None:
    if statistics:
        payload = [
            {"code": row.code, "name": row.name, "count": row.count, "severities": dict(row.severities)}
            for row in count_by_code(result.reports)
        ]
    else:
        payload = [finding.to_dict() for report in result.reports for finding in report.findings]
    json.dump(payload, stream, indent=2, ensure_ascii=False)
    stream.write("\n")
    for report in result.reports:
        for problem in report.problems:
            errors.write(problem_line(report.path, problem) + "\n")
