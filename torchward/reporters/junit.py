"""``--format junit``: JUnit XML, which CI systems (GitLab, Jenkins, Azure) show as test results.

CI dashboards count test cases: a file with nine findings must read as nine failures,
not one failing test. So, as ruff does: one ``testsuite`` per checked file, and in it
one ``testcase`` per finding (``classname`` the file, ``name`` the code, rule name and
position, with ``file`` and ``line`` attributes) holding its ``failure`` (type: the
code); a file without findings is one passing test case; each reason a file could not
be analysed is a test case with an ``error``. The failure text holds the location and
the evidence, as the terminal format prints them. The totals on ``testsuites`` and each
``testsuite`` count those test cases. Hints are left out: a hint is not a failure, and
a dashboard cannot show anything milder.
"""

from __future__ import annotations

from typing import TextIO
from xml.etree import ElementTree

from ..notebook import location
from ..statistics import shown


def _case(suite: ElementTree.Element, path: str, name: str, line: int | None = None):
    attributes = {"classname": path, "name": name, "file": path}
    if line is not None:
        attributes["line"] = str(line)
    return ElementTree.SubElement(suite, "testcase", attributes)


def _finding_case(suite: ElementTree.Element, path: str, finding) -> None:
    where = location(finding.path, finding.span.line, finding.span.column + 1)
    position = where[len(finding.path) + 1 :] if where.startswith(finding.path) else where
    case = _case(suite, path, f"{finding.code} {finding.name} at {position}", finding.span.line)
    failure = ElementTree.SubElement(
        case, "failure", type=finding.code, message=f"{where}: {finding.code} {finding.message}"
    )
    lines = [f"{where}: {finding.code} {finding.name} ({finding.severity.value})", finding.message]
    lines += [
        f"  = {item.span.line}:{item.span.column + 1}: {item.message}" for item in finding.evidence
    ]
    failure.text = "\n".join(lines)


def write(
    result,
    stream: TextIO,
    *,
    errors: TextIO,
    statistics: bool = False,
    colour: bool = False,
    show_hints: bool = False,
) -> None:
    suites = ElementTree.Element("testsuites", name="torchward")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for report in result.reports:
        suite = ElementTree.SubElement(suites, "testsuite", name=report.path)
        findings = shown(report.findings, False)  # never hints, whatever is asked
        for finding in findings:
            _finding_case(suite, report.path, finding)
        for problem in report.problems:
            case = _case(suite, report.path, f"{problem.kind}: {report.path}")
            error = ElementTree.SubElement(
                case, "error", type=problem.kind, message=problem.message
            )
            error.text = problem.message
        if not findings and not report.problems:
            _case(suite, report.path, report.path)
        counts = {
            "tests": len(suite),
            "failures": len(findings),
            "errors": len(report.problems),
        }
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    ElementTree.indent(suites)
    stream.write('<?xml version="1.0" encoding="utf-8"?>\n')
    stream.write(ElementTree.tostring(suites, encoding="unicode"))
    stream.write("\n")
