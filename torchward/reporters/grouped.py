"""``--format grouped``: findings under their file, one line each — a review checklist.

::

    train.py:
      14:9  TW001  error  `loss` still carries its autograd graph ...
      31:5  TW002  warning  this evaluation loop ...

    Found 2 findings (1 error, 1 warning) in 1 of 3 files checked.

Notebook findings are grouped under their cell (``nb.ipynb:cell 3:``). Files that could
not be analysed follow, then the summary line of the terminal format. Hints are listed
only with ``--show-hints``, as in the terminal format.
"""

from __future__ import annotations

from typing import TextIO

from ..statistics import shown
from .terminal import Painter, finish


def write(
    result,
    stream: TextIO,
    *,
    errors: TextIO,
    statistics: bool = False,
    colour: bool = False,
    show_hints: bool = False,
) -> None:
    paint = Painter(colour)
    groups: dict[str, list] = {}
    for report in result.reports:
        for finding in shown(report.findings, show_hints):
            groups.setdefault(finding.path, []).append(finding)
    out: list[str] = []
    for path, findings in groups.items():
        out.append(paint("bold", f"{path}:"))
        width = max(len(f"{f.span.line}:{f.span.column + 1}") for f in findings)
        for finding in findings:
            where = f"{finding.span.line}:{finding.span.column + 1}"
            out.append(
                f"  {where:<{width}}  {paint('code', finding.code)}  "
                f"{paint(finding.severity.value, finding.severity.value)}  {finding.message}"
            )
        out.append("")
    finish(out, result, paint, stream, show_hints)
