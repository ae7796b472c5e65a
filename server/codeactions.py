"""Code actions: quick fixes, suppressions, explanations and fix-all.

Protocol model: the client sends the diagnostics under the cursor (with their ``data``)
and optionally the kinds it wants (``only``). Every fix comes from the finding carried
in the diagnostic's ``data`` — the server never re-lints to answer — and only when that
finding belongs to the document's current version: edits computed for older text would
land in the wrong place. Per torchward diagnostic the client gets:

- one quick fix per fix of the finding: safe ones marked preferred, unsafe ones
  labelled "(unsafe)" in the title; display-only fixes are not offered as edits;
- "Suppress TWxxx on this line" (:mod:`.suppression`);
- "Explain TWxxx", running ``torchward.explain``.

``source.fixAll.torchward`` applies every *safe* fix of the document's current findings
whose edits do not overlap (editors run it on save).
"""

from __future__ import annotations

from lsprotocol import types

from torchward.analysis import Applicability, Edit, Finding

from .diagnostics import SOURCE, finding_of, text_edit
from .documents import Document
from .server import TorchwardServer
from .suppression import suppression_edit

FIX_ALL = "source.fixAll.torchward"
EXPLAIN_COMMAND = "torchward.explain"


def _workspace_edit(server: TorchwardServer, document: Document, edits: list[Edit]) -> types.WorkspaceEdit:
    text_edits = [text_edit(document, edit, server.codec) for edit in edits]
    capabilities = server.client_capabilities.workspace
    edit_capabilities = capabilities.workspace_edit if capabilities else None
    if edit_capabilities and edit_capabilities.document_changes:
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(identifier, text_edits)])
    return types.WorkspaceEdit(changes={document.uri: text_edits})


def _wanted(kind: str, only: list[str] | None) -> bool:
    return only is None or any(kind == want or kind.startswith(want + ".") for want in only)


def _fix_actions(server: TorchwardServer, document: Document, diagnostic: types.Diagnostic, finding: Finding):
    fixes = [fix for fix in finding.fixes if fix.edits and fix.applicability is not Applicability.DISPLAY_ONLY]
    fixes.sort(key=lambda fix: fix.applicability is not Applicability.SAFE)
    for index, fix in enumerate(fixes):
        safe = fix.applicability is Applicability.SAFE
        yield types.CodeAction(
            title=fix.title if safe else f"{fix.title} (unsafe)",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_workspace_edit(server, document, list(fix.edits)),
            is_preferred=safe and index == 0,
        )


def _suppress_action(server: TorchwardServer, document: Document, diagnostic: types.Diagnostic, code: str):
    line = diagnostic.range.start.line
    edit = suppression_edit(document.line_text(line), line + 1, code)
    if edit is None:
        return None
    return types.CodeAction(
        title=f"Suppress {code} on this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=_workspace_edit(server, document, [edit]),
    )


def _explain_action(code: str, diagnostic: types.Diagnostic) -> types.CodeAction:
    title = f"Explain {code}"
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        command=types.Command(title=title, command=EXPLAIN_COMMAND, arguments=[code]),
    )


def fix_all_edits(server: TorchwardServer, document: Document) -> list[Edit]:
    """Every safe fix of the current findings, skipping any that overlaps one already taken."""
    state = server.states.get(document.uri)
    if state is None or not server.is_current(document.uri, state.result):
        return []
    chosen: list[Edit] = []
    taken: list[tuple] = []
    for finding in state.result.findings:
        for fix in finding.fixes:
            if fix.applicability is not Applicability.SAFE or not fix.edits:
                continue
            spans = [(e.span.line, e.span.column, e.span.end_line, e.span.end_column) for e in fix.edits]
            if any(_overlaps(span, other) for span in spans for other in taken):
                continue
            chosen.extend(fix.edits)
            taken.extend(spans)
            break
    chosen.sort(key=lambda edit: edit.span)
    return chosen


def _overlaps(a: tuple, b: tuple) -> bool:
    if a == b:
        return True
    return (a[0], a[1]) < (b[2], b[3]) and (b[0], b[1]) < (a[2], a[3])


def code_actions(server: TorchwardServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    document = server.documents.get(params.text_document.uri)
    if document is None:
        return None
    only = list(params.context.only) if params.context.only else None
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != SOURCE:
                continue
            carried = finding_of(diagnostic)
            if carried is None:
                continue
            finding, version = carried
            if version == document.version:
                actions.extend(_fix_actions(server, document, diagnostic, finding))
            suppress = _suppress_action(server, document, diagnostic, finding.code)
            if suppress is not None:
                actions.append(suppress)
            actions.append(_explain_action(finding.code, diagnostic))
    if _wanted(FIX_ALL, only):
        edits = fix_all_edits(server, document)
        if edits:
            actions.append(types.CodeAction(
                title="Fix all torchward safe fixes", kind=FIX_ALL, edit=_workspace_edit(server, document, edits)))
    return actions


def register(server: TorchwardServer) -> None:
    options = types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False)
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, options)(lambda params: code_actions(server, params))
