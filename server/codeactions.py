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

And per document with a GPU fit, the source action "torchward: show GPU fit"
(``torchward.showGpuFit``), so a client without code lenses or inlay hints (eglot) reaches it.
Once a plan is chosen for the document (``torchward.choosePlan``, :mod:`.plan`), one
rewrite per remedy of it that a change of the script applies ("torchward plan: apply
gradient checkpointing"), kind ``refactor.rewrite.torchward.plan``.

Fixes are built on demand (:mod:`.fixing`): the finding in ``data`` names the code and
spans, the fixer builds the edits from the current text. ``source.fixAll.torchward``
applies every *safe* fix, repeated until stable as ``torchward check --fix`` does
(editors run it on save). That is the expensive action, so a client that can resolve
code actions (``codeAction/resolve`` with ``edit``) gets it without its edit, and the
edit is built only when the action is chosen; others get it only when they ask for the
kind explicitly (``only``), never with every cursor move.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import Edit, Finding

from .diagnostics import SOURCE, finding_of, text_edit
from .documents import Document
from .fixing import fix_all_edits, fixes_of
from .plan import ACTION_PREFIX, REMEDY_ACTIONS, remedy_edits_of
from .server import TorchwardServer
from .suppression import suppression_edit

FIX_ALL = "source.fixAll.torchward"
SHOW_GPU_FIT = "source.showGpuFit.torchward"  # for clients without lenses or hints (eglot)
EXPLAIN_COMMAND = "torchward.explain"
SHOW_GPU_FIT_COMMAND = "torchward.showGpuFit"


def _workspace_edit(
    server: TorchwardServer, document: Document, edits: list[Edit]
) -> types.WorkspaceEdit:
    text_edits = [text_edit(document, edit, server.codec) for edit in edits]
    capabilities = server.client_capabilities.workspace
    edit_capabilities = capabilities.workspace_edit if capabilities else None
    if edit_capabilities and edit_capabilities.document_changes:
        identifier = types.OptionalVersionedTextDocumentIdentifier(
            uri=document.uri, version=document.version
        )
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(identifier, text_edits)]
        )
    return types.WorkspaceEdit(changes={document.uri: text_edits})


def _wanted(kind: str, only: list[str] | None) -> bool:
    return only is None or any(kind == want or kind.startswith(want + ".") for want in only)


def _fix_actions(
    server: TorchwardServer,
    document: Document,
    diagnostic: types.Diagnostic,
    finding: Finding,
    found,
):
    from torchward.analysis import Applicability

    fixes = [
        fix for fix in found if fix.edits and fix.applicability is not Applicability.DISPLAY_ONLY
    ]
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


def _suppress_action(
    server: TorchwardServer, document: Document, diagnostic: types.Diagnostic, code: str
):
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


def _resolves_edits(server: TorchwardServer) -> bool:
    text_document = server.client_capabilities.text_document
    code_action = text_document.code_action if text_document else None
    support = code_action.resolve_support if code_action else None
    return bool(support and "edit" in (support.properties or []))


async def _has_fixable(server: TorchwardServer, document: Document) -> bool:
    """Whether a current finding has or may get a fix (the fixer registry loads on a worker)."""
    from .fixing import is_fixable

    state = server.states.get(document.uri)
    if state is None or not server.is_current(document.uri, state.result):
        return False
    findings = state.result.findings
    if any(f.fixes for f in findings):
        return True
    codes = {f.code for f in findings}
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        server.executor, lambda: any(is_fixable(code) for code in codes)
    )


async def _fix_all_action(
    server: TorchwardServer, document: Document, explicit: bool
) -> types.CodeAction | None:
    title = "Fix all torchward safe fixes"
    if _resolves_edits(server):
        if not await _has_fixable(server, document):
            return None
        return types.CodeAction(
            title=title, kind=FIX_ALL, data={"uri": document.uri, "version": document.version}
        )
    if not explicit:
        return None
    version = document.version
    edits = await fix_all_edits(server, document)
    if not edits or document.version != version:
        return None
    return types.CodeAction(
        title=title, kind=FIX_ALL, edit=_workspace_edit(server, document, list(edits))
    )


async def resolve(server: TorchwardServer, action: types.CodeAction) -> types.CodeAction:
    """Fill in the edit of a lazily offered fix-all (unchanged when the document moved on)."""
    data = action.data if isinstance(action.data, dict) else {}
    document = server.documents.get(data.get("uri")) if isinstance(data.get("uri"), str) else None
    if action.kind != FIX_ALL or document is None or data.get("version") != document.version:
        return action
    version = document.version
    edits = await fix_all_edits(server, document)
    if edits and document.version == version:
        action.edit = _workspace_edit(server, document, list(edits))
    return action


async def code_actions(
    server: TorchwardServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
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
                found = await fixes_of(server, document, finding)
                if document.version == version:  # edits built for older text would land wrong
                    actions.extend(_fix_actions(server, document, diagnostic, finding, found))
            suppress = _suppress_action(server, document, diagnostic, finding.code)
            if suppress is not None:
                actions.append(suppress)
            actions.append(_explain_action(finding.code, diagnostic))
    if _wanted(FIX_ALL, only):
        fix_all = await _fix_all_action(server, document, explicit=only is not None)
        if fix_all is not None:
            actions.append(fix_all)
    if _wanted(SHOW_GPU_FIT, only) and (fit := server.last_fit.get(document.uri)) is not None:
        if fit.status in ("ok", "no-job"):
            title = "torchward: show GPU fit"
            command = types.Command(
                title=title, command=SHOW_GPU_FIT_COMMAND, arguments=[document.uri]
            )
            actions.append(types.CodeAction(title=title, kind=SHOW_GPU_FIT, command=command))
    if _wanted(REMEDY_ACTIONS, only):
        version = document.version
        for remedy in await remedy_edits_of(server, document):
            if document.version != version:
                break
            actions.append(
                types.CodeAction(
                    title=f"{ACTION_PREFIX}{remedy.title}",
                    kind=REMEDY_ACTIONS,
                    edit=_workspace_edit(server, document, list(remedy.edits)),
                )
            )
    return actions


def register(server: TorchwardServer) -> None:
    options = types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL, SHOW_GPU_FIT, REMEDY_ACTIONS],
        resolve_provider=True,
    )

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, options)
    async def code_action(params: types.CodeActionParams):
        if (located := server.notebooks.owner(params.text_document.uri)) is not None:
            from . import notebooks

            return await notebooks.code_actions(server, params, *located, code_actions)
        return await code_actions(server, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(params: types.CodeAction) -> types.CodeAction:
        from .notebooks import resolved_action

        return resolved_action(server, await resolve(server, params))
