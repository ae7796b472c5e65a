"""``--format junit``: JUnit XML, which CI systems (GitLab, Jenkins, Azure) show as test results.

One ``testsuite`` per run, one ``testcase`` per checked file: a file without findings is
a passing test, each finding is a ``failure`` (type: the code) of its file's test case,
and a file that could not be analysed is an ``error``. The failure text holds the
location and the evidence, as the terminal format prints them.
"""

from __future__ import annotations

from typing import TextIO
from xml.etree import ElementTree

from ..notebook import location


def write(
    result, stream: TextIO, *, errors: TextIO, statistics: bool = False, colour: bool = False
) -> None:
    failures = sum(len(report.findings) for report in result.reports)
    broken = sum(1 for report in result.reports if report.problems)
    suites = ElementTree.Element(
        "testsuites",
        name="torchward",
        tests=str(len(result.reports)),
        failures=str(failures),
        errors=str(broken),
    )
    suite = ElementTree.SubElement(
        suites,
        "testsuite",
        name="torchward",
        tests=str(len(result.reports)),
        failures=str(failures),
        errors=str(broken),
    )
    for report in result.reports:
        case = ElementTree.SubElement(
            suite, "testcase", classname="torchward", name=report.path, file=report.path
        )
        for finding in report.findings:
            where = location(finding.path, finding.span.line, finding.span.column + 1)
            failure = ElementTree.SubElement(
                case,
                "failure",
                type=finding.code,
                message=f"{where}: {finding.code} {finding.message}",
            )
            lines = [
                f"{where}: {finding.code} {finding.name} ({finding.severity.value})",
                finding.message,
            ]
            lines += [
                f"  = {item.span.line}:{item.span.column + 1}: {item.message}"
                for item in finding.evidence
            ]
            failure.text = "\n".join(lines)
        for problem in report.problems:
            error = ElementTree.SubElement(
                case, "error", type=problem.kind, message=problem.message
            )
            error.text = problem.message
    ElementTree.indent(suites)
    stream.write('<?xml version="1.0" encoding="utf-8"?>\n')
    stream.write(ElementTree.tostring(suites, encoding="unicode"))
    stream.write("\n")
