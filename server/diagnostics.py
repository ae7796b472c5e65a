"""The bridge from analysis results to LSP diagnostics — the only one.

Everything that turns a :class:`~torchward.analysis.Finding` or a
:class:`~torchward.analysis.Problem` into protocol values happens here: 1-based lines
become 0-based, code-point columns become the client's units (through
:class:`.encoding.ColumnCodec`), severities map error → Error, warning → Warning,
note → Information, hint → Hint (drawn faintly, outside the Problems count), evidence
becomes ``relatedInformation`` and the finding itself, fixes included, travels in
``data`` so that code actions never re-lint (ruff_server's model). Ranges are clamped to the document, so a finding that an edit left behind can
never point outside it.
"""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import Edit, Finding, Problem, Span

from .documents import Document
from .encoding import ColumnCodec
from .results import DocumentResult

SOURCE = "torchward"
# The rule pages live in the repository's docs/rules/ (generated from the rule classes).
# Where they are *published* is the package's ``Project-URL: Rules, <base>`` (pyproject
# ``[project.urls] Rules``): without one no link is invented — ``codeDescription`` is
# left out and "Explain" shows the documentation inside the editor.
DOCS_URL_LABEL = "rules"

SEVERITIES = {  # by Severity value; an editor draws a hint faintly, outside the problem count
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


@functools.cache
def docs_base_url() -> str | None:
    """The published rule pages' base URL, from the installed package's metadata, or None."""
    try:
        from importlib.metadata import metadata

        entries = metadata("torchward").get_all("Project-URL") or []
    except Exception:  # not installed as a distribution (a bundled copy): no link
        return None
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip().lower() == DOCS_URL_LABEL and url.strip().startswith("https://"):
            return url.strip().rstrip("/") + "/"
    return None


def docs_url(code: str) -> str | None:
    """The rule's published page, only when the project publishes its rules somewhere."""
    base = docs_base_url()
    return f"{base}{code}.md" if base else None


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


@attrs.define(eq=False)
class WireDiagnostic(types.Diagnostic):
    """A diagnostic that carries its own wire form (JSON-ready dict), built once per
    finding and line text: a keystroke re-sends ~all of a file's diagnostics, and
    unstructuring lsprotocol objects through cattrs cost more per edit than the analysis
    of the edited function (≈14 ms for 140 findings). :func:`wire_converter` sends it."""

    wire: dict[str, Any] | None = attrs.field(default=None, kw_only=True, repr=False)


def wire_converter():
    """pygls' converter, sending a :class:`WireDiagnostic` as its precomputed dict."""
    from pygls.protocol import default_converter

    converter = default_converter()
    default = converter.get_unstructure_hook(types.Diagnostic)

    def unstructure(diagnostic: types.Diagnostic) -> Any:
        if isinstance(diagnostic, WireDiagnostic) and diagnostic.wire is not None:
            return diagnostic.wire
        if isinstance(diagnostic.severity, int) and not isinstance(
            diagnostic.severity, types.DiagnosticSeverity
        ):  # a client's diagnostic echoed back, its enums structured as plain integers
            diagnostic = attrs.evolve(
                diagnostic,
                severity=types.DiagnosticSeverity(diagnostic.severity),
                tags=[types.DiagnosticTag(tag) for tag in diagnostic.tags or []] or None,
            )
        return default(diagnostic)

    converter.register_unstructure_hook(types.Diagnostic, unstructure)
    return converter


_PLAIN_CONVERTER: Any = None


def _unstructured(diagnostic: types.Diagnostic) -> dict[str, Any]:
    global _PLAIN_CONVERTER
    if _PLAIN_CONVERTER is None:
        from pygls.protocol import default_converter

        _PLAIN_CONVERTER = default_converter()
    return _PLAIN_CONVERTER.unstructure(diagnostic)


def finding_diagnostic(
    document: Document, finding: Finding, version: int, codec: ColumnCodec, *, by_key: bool = False
) -> types.Diagnostic:
    """The diagnostic for ``finding``; its ``data`` carries the finding — whole, or with
    ``by_key`` a short key into this session's :data:`_FINDINGS` (open documents: ~1 KB
    less per diagnostic on every keystroke; code actions look the finding up by key)."""
    parts = _static_parts(document, finding, codec)
    data = {"finding": parts.key if by_key else parts.finding_dict, "version": version}
    return WireDiagnostic(
        range=parts.range,
        message=finding.message,
        severity=parts.severity,
        code=finding.code,
        code_description=parts.code_description,
        source=SOURCE,
        related_information=parts.related_information,
        data=data,
        wire={**parts.wire, "data": data},
    )


@attrs.frozen
class _Parts:
    range: types.Range
    severity: types.DiagnosticSeverity
    code_description: types.CodeDescription | None
    related_information: list[types.DiagnosticRelatedInformation] | None
    finding_dict: dict
    wire: dict[str, Any]  # the diagnostic's JSON form without ``data``
    key: str  # the finding's key in :data:`_FINDINGS`


_PARTS: dict[tuple, _Parts] = {}
_FINDINGS: dict[str, Finding] = {}  # key → finding, for diagnostics sent ``by_key``
_KEYS = itertools.count(1)
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
            _FINDINGS.clear()  # the next publish of each open document registers its own again
        range_ = to_range(document, finding.span, codec)
        severity = SEVERITIES.get(
            getattr(finding.severity, "value", finding.severity), types.DiagnosticSeverity.Warning
        )
        description = _code_description(finding.code)
        related = [
            types.DiagnosticRelatedInformation(
                _location(document, item.span, item.path, codec), item.message
            )
            for item in finding.evidence
        ] or None
        wire = _unstructured(
            types.Diagnostic(
                range=range_,
                message=finding.message,
                severity=severity,
                code=finding.code,
                code_description=description,
                source=SOURCE,
                related_information=related,
            )
        )
        finding_key = f"{finding.code}#{next(_KEYS)}"
        _FINDINGS[finding_key] = finding
        parts = _PARTS[key] = _Parts(
            range_, severity, description, related, finding.to_dict(), wire, finding_key
        )
    return parts


def _code_description(code: str) -> types.CodeDescription | None:
    url = docs_url(code)
    return types.CodeDescription(href=url) if url else None


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
    document: Document, result: DocumentResult, codec: ColumnCodec, *, by_key: bool = False
) -> list[types.Diagnostic]:
    diagnostics = [
        finding_diagnostic(document, f, result.version, codec, by_key=by_key)
        for f in result.findings
    ]
    for problem in result.problems:
        diagnostic = problem_diagnostic(document, problem, codec)
        if diagnostic is not None:
            diagnostics.append(diagnostic)
    return diagnostics


def finding_of(diagnostic: types.Diagnostic) -> tuple[Finding, int] | None:
    """The finding (and the document version it belongs to) a diagnostic carries in ``data``."""
    from torchward.analysis import Finding

    data: Any = diagnostic.data
    if not isinstance(data, dict):
        return None
    carried = data.get("finding")
    try:
        version = int(data.get("version", -1))
        if isinstance(carried, str):  # sent by key: this session's own diagnostic
            finding = _FINDINGS.get(carried)
            return (finding, version) if finding is not None else None
        if isinstance(carried, dict):
            return Finding.from_dict(carried), version
    except (KeyError, TypeError, ValueError):
        pass
    return None
