"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

Each finding becomes ``::error file=…,line=…,col=…,endLine=…,endColumn=…,title=…::message``
(``warning`` and ``notice`` for the lower severities), which the Actions runner turns
into annotations on the pull request's diff. Values are escaped as the runner expects
(``%``, CR and LF everywhere; ``:`` and ``,`` in properties too), so a message with a
colon or a newline cannot cut the command short. Files that could not be analysed are
annotated as errors. Hints are never annotated: an annotation is a request for a
reviewer's attention, which a hint does not make (``--format json`` or ``sarif`` carry
them). A notebook cell has no line of the ``.ipynb`` file to point at, so
its findings annotate the notebook as a whole, their message starting with the cell and
line. See https://docs.github.com/actions/reference/workflow-commands-for-github-actions.
"""

from __future__ import annotations

from typing import TextIO

from ..notebook import split_cell
from ..statistics import shown

LEVELS = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str,
    path: str,
    line: int,
    column: int,
    end_line: int,
    end_column: int,
    title: str,
    message: str,
) -> str:
    properties = (
        f"file={escape_property(path)},line={line},col={column},endLine={end_line},"
        f"endColumn={end_column},title={escape_property(title)}"
    )
    return f"::{level} {properties}::{escape_data(message)}"


def write(
    result,
    stream: TextIO,
    *,
    errors: TextIO,
    statistics: bool = False,
    colour: bool = False,
    show_hints: bool = False,
) -> None:
    for report in result.reports:
        for finding in shown(report.findings, False):  # never hints, whatever is asked
            path, cell = split_cell(finding.path)
            span, title = finding.span, f"{finding.code} {finding.name}"
            if cell is None:
                stream.write(
                    annotation(
                        LEVELS[finding.severity.value],
                        path,
                        span.line,
                        span.column + 1,
                        span.end_line,
                        span.end_column + 1,
                        title,
                        finding.message,
                    )
                    + "\n"
                )
            else:
                message = f"cell {cell}, line {span.line}: {finding.message}"
                stream.write(
                    f"::{LEVELS[finding.severity.value]} file={escape_property(path)},"
                    f"title={escape_property(title)}::{escape_data(message)}\n"
                )
        for problem in report.problems:
            line = problem.span.line if problem.span else 1
            column = problem.span.column + 1 if problem.span else 1
            stream.write(
                annotation(
                    "error",
                    report.path,
                    line,
                    column,
                    line,
                    column,
                    f"torchward {problem.kind}",
                    problem.message,
                )
                + "\n"
            )
