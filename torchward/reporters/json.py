"""``--format json``: a JSON array of findings, the stable shape of docs/json-format.md.

The array holds findings only (``Finding.to_dict()``: 1-based lines and columns), so a
consumer can rely on one element type. Files that could not be analysed (syntax
errors, unreadable or non-UTF-8 files) go to standard error as text lines and make the
exit status 1; they are not findings of a rule. With ``--statistics`` the array holds
one object per code instead: ``{code, name, count, severities: {error: n, ...}}``.
Hints are always included, with ``"severity": "hint"`` (``--show-hints`` is for the
human-readable formats): a consumer filters them as it likes.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..notebook import split_cell
from ..statistics import count_by_code
from .terminal import problem_line


def _finding(finding) -> dict:
    """``Finding.to_dict()``; a notebook finding's path is the file, with its ``cell`` added."""
    data = finding.to_dict()
    path, cell = split_cell(finding.path)
    if cell is not None:
        data["path"], data["cell"] = path, cell
        for item in data["evidence"]:
            item["path"], item_cell = split_cell(item["path"])
            item["cell"] = item_cell or cell
    return data


def _array(items: list[dict]) -> str:
    """The array with one element per line: each element written by ``json``'s C encoder,
    which it uses only without indentation (indenting the whole array went through its
    pure-Python encoder: most of what a 20,000-line file's JSON report cost over its
    terminal output)."""
    if not items:
        return "[]"
    encode = json.JSONEncoder(ensure_ascii=False).encode
    return "[\n" + ",\n".join(encode(item) for item in items) + "\n]"


def write(
    result,
    stream: TextIO,
    *,
    errors: TextIO,
    statistics: bool = False,
    colour: bool = False,
    show_hints: bool = False,
) -> None:
    if statistics:
        payload = [
            {
                "code": row.code,
                "name": row.name,
                "count": row.count,
                "severities": dict(row.severities),
            }
            for row in count_by_code(result.reports)
        ]
    else:
        payload = [_finding(finding) for report in result.reports for finding in report.findings]
    stream.write(_array(payload))
    stream.write("\n")
    for report in result.reports:
        for problem in report.problems:
            errors.write(problem_line(report.path, problem) + "\n")
