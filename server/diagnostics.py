"""The bridge from analysis results to LSP diagnostics — the only one.

Everything that turns a :class:`~torchward.analysis.Finding` or a
:class:`~torchward.analysis.Problem` into protocol values happens here: 1-based lines
become 0-based, code-point columns become the client's units (through
:class:`.encoding.ColumnCodec`), severities map error → Error, warning → Warning,
note → Information, evidence becomes ``relatedInformation`` and the finding itself,
fixes included, travels in ``data`` so that code actions never re-lint (ruff_server's
model). Ranges are clamped to the document, so a finding that an edit left behind can
never point outside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import Edit, Finding, Problem, Span

from .documents import Document
from .encoding import ColumnCodec
from .results import DocumentResult

SOURCE = "torchward"
# The rule pages live in the repository's docs/rules/ (generated from the rule classes);
# this base is the one place that names where they are published.
DOCS_BASE_URL = "https://github.com/torchward/torchward/blob/main/docs/rules/"

SEVERITIES = {  # by Severity value: error / warning / note
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
}


def docs_url(code: str) -> str:
    return f"{DOCS_BASE_URL}{code}.md"


# -- positions --------------------------------------------------------------------------
def to_position(document: Document, line: int, column: int, codec: ColumnCodec) -> types.Position:
    """1-based ``line`` and code-point ``column`` → a client position inside the document."""
    lines = document.lines
    index = line - 1
    if index < 0:
        return types.Position(0, 0)
    if index >= len(lines):
        index = len(lines) - 1
        return types.Position(index, codec.units(lines[index]))
    return types.Position(index, codec.to_client(lines[index], column))


def to_range(document: Document, span: Span, codec: ColumnCodec) -> types.Range:
    start = to_position(document, span.line, span.column, codec)
    end = to_position(document, span.end_line, span.end_column, codec)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start, end)


def to_span(document: Document, range_: types.Range, codec: ColumnCodec) -> Span:
    """A client range → a :class:`Span` (1-based lines, code-point columns)."""
    start = range_.start
    end = range_.end
    from torchward.analysis import Span

    return Span(
        start.line + 1,
        codec.from_client(document.line_text(start.line), start.character),
        end.line + 1,
        codec.from_client(document.line_text(end.line), end.character),
    )


def text_edit(document: Document, edit: Edit, codec: ColumnCodec) -> types.TextEdit:
    return types.TextEdit(range=to_range(document, edit.span, codec), new_text=edit.text)


# -- diagnostics ------------------------------------------------------------------------
def _location(
    document: Document, span: Span, path: str | None, codec: ColumnCodec
) -> types.Location:
    if path is None or path == document.path:
        return types.Location(document.uri, to_range(document, span, codec))
    from pygls.uris import from_fs_path

    # another file's text is not at hand: its columns go out as code points, which is
    # exact on ASCII lines (nearly all of them) and off by little elsewhere
    uri = from_fs_path(path) or path
    start = types.Position(max(span.line - 1, 0), max(span.column, 0))
    end = types.Position(max(span.end_line - 1, 0), max(span.end_column, 0))
    return types.Location(uri, types.Range(start, end))


def finding_diagnostic(
    document: Document, finding: Finding, version: int, codec: ColumnCodec
) -> types.Diagnostic:
    parts = _static_parts(document, finding, codec)
    return types.Diagnostic(
        range=parts.range,
        message=finding.message,
        severity=parts.severity,
        code=finding.code,
        code_description=parts.code_description,
        source=SOURCE,
        related_information=parts.related_information,
        data={"finding": parts.finding_dict, "version": version},
    )


@attrs.frozen
class _Parts:
    range: types.Range
    severity: types.DiagnosticSeverity
    code_description: types.CodeDescription
    related_information: list[types.DiagnosticRelatedInformation] | None
    finding_dict: dict


_PARTS: dict[tuple, _Parts] = {}
_MAX_PARTS = 20_000


def _static_parts(document: Document, finding: Finding, codec: ColumnCodec) -> _Parts:
    """Everything of a diagnostic but its version, memoised: a keystroke republishes
    mostly the same findings, and building lsprotocol objects costs more than analysing.
    Keyed by the finding and the text of every line it points into, so columns stay exact."""
    lines = {
        finding.span.line,
        finding.span.end_line,
        *(e.span.line for e in finding.evidence if e.path in (None, document.path)),
        *(e.span.end_line for e in finding.evidence if e.path in (None, document.path)),
    }
    key = (
        finding,
        codec.encoding,
        document.path,
        tuple((n, document.line_text(n - 1)) for n in sorted(lines)),
    )
    parts = _PARTS.get(key)
    if parts is None:
        if len(_PARTS) >= _MAX_PARTS:
            _PARTS.clear()
        parts = _PARTS[key] = _Parts(
            range=to_range(document, finding.span, codec),
            severity=SEVERITIES.get(
                getattr(finding.severity, "value", finding.severity),
                types.DiagnosticSeverity.Warning,
            ),
            code_description=types.CodeDescription(href=docs_url(finding.code)),
            related_information=[
                types.DiagnosticRelatedInformation(
                    _location(document, item.span, item.path, codec), item.message
                )
                for item in finding.evidence
            ]
            or None,
            finding_dict=finding.to_dict(),
        )
    return parts


def problem_diagnostic(
    document: Document, problem: Problem, codec: ColumnCodec
) -> types.Diagnostic | None:
    """One diagnostic for a problem the user can act on; internal errors are logged instead."""
    if problem.kind == "internal-error":
        return None
    severity = (
        types.DiagnosticSeverity.Error
        if problem.kind == "syntax-error"
        else types.DiagnosticSeverity.Information
    )
    from torchward.analysis import Span

    span = problem.span or Span(1, 0, 1, 0)
    return types.Diagnostic(
        range=to_range(document, span, codec),
        message=problem.message,
        severity=severity,
        source=SOURCE,
        data={"problem": problem.kind},
    )


def diagnostics_for(
    document: Document, result: DocumentResult, codec: ColumnCodec
) -> list[types.Diagnostic]:
    diagnostics = [finding_diagnostic(document, f, result.version, codec) for f in result.findings]
    for problem in result.problems:
        diagnostic = problem_diagnostic(document, problem, codec)
        if diagnostic is not None:
            diagnostics.append(diagnostic)
    return diagnostics


def finding_of(diagnostic: types.Diagnostic) -> tuple[Finding, int] | None:
    """The finding (and the document version it belongs to) a diagnostic carries in ``data``."""
    from torchward.analysis import Finding

    data: Any = diagnostic.data
    if not isinstance(data, dict) or not isinstance(data.get("finding"), dict):
        return None
    try:
        return Finding.from_dict(data["finding"]), int(data.get("version", -1))
    except (KeyError, TypeError, ValueError):
        return None
