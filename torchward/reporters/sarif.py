"""``--format sarif``: a SARIF 2.1.0 log for GitHub code scanning and other SARIF viewers.

One run of the ``torchward`` driver. Its ``rules`` hold every rule's metadata — id,
name, summary, the full documentation as ``help`` (text and Markdown, the same text as
``torchward explain``), the default level — so a viewer can explain a result without
torchward installed. Each result carries its location, the evidence as
``relatedLocations``, a ``partialFingerprints`` entry stable across unrelated edits
(code + file + message, not the line), and its fixes as SARIF ``fixes`` (artifact
changes with deleted regions and inserted text).

Columns count Unicode code points (``run.columnKind = "unicodeCodePoints"``), as
torchward's do; SARIF's default is UTF-16 units. Paths are relative URIs against
``%SRCROOT%`` (the directory torchward ran in), so the log is portable between
checkouts. Files that could not be analysed become ``toolExecutionNotifications``.
A hint (right, but rarely worth acting on) is a result of ``kind: "informational"`` and
``level: "none"`` (SARIF 2.1.0 §3.27.9-10: a level other than ``none`` is for a result
that is a problem), with ``properties.severity`` naming torchward's severity, so viewers
that list problems leave it out and none is lost.
A notebook finding points at the ``.ipynb`` file with its cell and line in the message
and the result's properties (SARIF has no notion of a cell).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TextIO
from urllib.parse import quote

from .. import __version__
from ..notebook import split_cell

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "note": "note", "hint": "none"}
INFORMATION_URI = "https://pypi.org/project/torchward/"


def _uri(path: str) -> dict:
    if os.path.isabs(path):
        return {"uri": "file://" + quote(path.replace(os.sep, "/"))}
    return {"uri": quote(os.path.normpath(path).replace(os.sep, "/")), "uriBaseId": "%SRCROOT%"}


def _region(span) -> dict:
    return {
        "startLine": span.line,
        "startColumn": span.column + 1,
        "endLine": span.end_line,
        "endColumn": span.end_column + 1,
    }


def _rules() -> list[dict]:
    from ..analysis import all_rules
    from ..suppression_audit import CODE, NAME, SUMMARY

    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.summary},
            "help": {"text": rule.documentation(), "markdown": rule.documentation()},
            "defaultConfiguration": {"level": LEVELS[rule.default_severity.value]},
            "properties": {"tags": ["pytorch", "correctness"]},
        }
        for rule in all_rules()
    ]
    rules.append(
        {
            "id": CODE,
            "name": NAME,
            "shortDescription": {"text": SUMMARY},
            "fullDescription": {"text": SUMMARY},
            "help": {
                "text": SUMMARY + " Remove the comment.",
                "markdown": SUMMARY + " Remove the comment.",
            },
            "defaultConfiguration": {"level": "warning"},
        }
    )
    return rules


def _location(path: str, span, message: str | None = None, index: int | None = None) -> dict:
    file, cell = split_cell(path)
    physical: dict = {"artifactLocation": _uri(file)}
    if cell is None:
        physical["region"] = _region(span)
    location: dict = {"physicalLocation": physical}
    if index is not None:
        location["id"] = index
    if message:
        location["message"] = {
            "text": message if cell is None else f"cell {cell}, line {span.line}: {message}"
        }
    return location


def _result(finding, rule_index: dict[str, int]) -> dict:
    file, cell = split_cell(finding.path)
    message = (
        finding.message
        if cell is None
        else f"cell {cell}, line {finding.span.line}: {finding.message}"
    )
    fingerprint = hashlib.sha256(
        f"{finding.code}:{file}:{cell}:{finding.message}".encode()
    ).hexdigest()[:32]
    result: dict = {
        "ruleId": finding.code,
        "level": LEVELS[finding.severity.value],
        "message": {"text": message},
        "locations": [_location(finding.path, finding.span)],
        "partialFingerprints": {"torchwardFinding/v1": fingerprint},
        "properties": {
            "confidence": finding.confidence.value,
            "name": finding.name,
            "severity": finding.severity.value,
        },
    }
    if finding.severity.value == "hint":
        result["kind"] = "informational"
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if cell is not None:
        result["properties"].update({"cell": cell, "cellLine": finding.span.line})
    if finding.evidence:
        result["relatedLocations"] = [
            _location(item.path or finding.path, item.span, item.message, index)
            for index, item in enumerate(finding.evidence, 1)
        ]
    fixes = [fix for fix in finding.fixes if fix.edits]
    if fixes and cell is None:
        result["fixes"] = [
            {
                "description": {"text": f"{fix.title} ({fix.applicability.value})"},
                "artifactChanges": [
                    {
                        "artifactLocation": _uri(file),
                        "replacements": [
                            {
                                "deletedRegion": _region(edit.span),
                                "insertedContent": {"text": edit.text},
                            }
                            for edit in fix.edits
                        ],
                    }
                ],
            }
            for fix in fixes
        ]
    return result


def sarif_log(result) -> dict:
    rules = _rules()
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{problem.kind}: {problem.message}"},
            "locations": [
                _location(report.path, problem.span)
                if problem.span
                else {"physicalLocation": {"artifactLocation": _uri(report.path)}}
            ],
        }
        for report in result.reports
        for problem in report.problems
    ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchward",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not any(
                            p.kind == "internal-error" for r in result.reports for p in r.problems
                        ),
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "originalUriBaseIds": {
                    "%SRCROOT%": {"uri": "file://" + quote(os.getcwd().replace(os.sep, "/")) + "/"}
                },
                "columnKind": "unicodeCodePoints",
                "results": [
                    _result(f, rule_index) for report in result.reports for f in report.findings
                ],
            }
        ],
    }


def write(
    result,
    stream: TextIO,
    *,
    errors: TextIO,
    statistics: bool = False,
    colour: bool = False,
    show_hints: bool = False,
) -> None:
    # unindented: ``json`` indents only through its pure-Python encoder, the largest
    # part of what a large report cost over terminal output (issue 29); readers parse
    stream.write(json.JSONEncoder(ensure_ascii=False).encode(sarif_log(result)))
    stream.write("\n")
