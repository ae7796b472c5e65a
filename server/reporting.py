"""Delivering diagnostics: pushed or pulled, as the client prefers.

Protocol model: a client that declares ``textDocument.diagnostic`` pulls — it sends
``textDocument/diagnostic`` (and VS Code also ``workspace/diagnostic``) when it wants
them. VS Code pulls on every keystroke and cancels the pull still pending, and a
cancelled pull *clears* the document's diagnostics (vscode-languageclient 9 treats it
as an empty report) — so a pull is never held open while an analysis is pending for a
client that can be asked to pull again: it is answered at once with what the client
already shows, moved with the edits (``unchanged`` when it holds that result id), and
``workspace/diagnostic/refresh`` asks it to pull again once the analysis of the newest
version lands. Squiggles move, never blank. A client without refresh support (Neovim
0.11) gets the old model: the pull waits for the current version's analysis.
Settings changes (``selectGpu`` included) also send the refresh. Any other client gets
``textDocument/publishDiagnostics`` with the document version, after every analysis.
Never both: a client that receives both shows every problem twice.

With ``workspaceScan: "diagnostics"`` the workspace report also holds the on-disk
reports of scanned files that are not open (:mod:`.scan`), without a version; an open
document's own report always wins. Result ids let a puller skip unchanged reports; ``workspace/diagnostic`` is answered
as a long poll — when nothing changed since the ids the client sent, the reply waits
for the next analysis (or :data:`WORKSPACE_POLL_S`), so the client does not spin.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from .diagnostics import SOURCE, diagnostics_for
from .results import DocumentResult
from .server import TorchwardServer

if TYPE_CHECKING:
    from .notebook_model import Cell, Notebook

log = logging.getLogger(__name__)

WORKSPACE_POLL_S = 30.0  # how long an unchanged workspace/diagnostic pull is held open


def publish(server: TorchwardServer, uri: str) -> None:
    """Called after each delivered analysis: push, or have the client pull again when a
    pull was answered with an older result meanwhile."""
    notebook = server.notebooks.get(uri)
    if notebook is not None:  # one program, pushed per cell, to every client (.notebooks)
        from .notebooks import publish as publish_cells

        publish_cells(server, notebook)
        return
    if server.pull_diagnostics:
        if uri in server.stale_pulls:
            server.stale_pulls.discard(uri)
            request_refresh(server)
        return
    document = server.documents.get(uri)
    state = server.states.get(uri)
    if document is None or state is None or state.result is None:
        return
    diagnostics = diagnostics_for(document, state.result, server.codec, by_key=True)
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri, diagnostics, document.version)
    )


def clear(server: TorchwardServer, uri: str) -> None:
    if not server.pull_diagnostics:
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))


def can_refresh(server: TorchwardServer) -> bool:
    """Whether the client pulls and can be asked to pull again (``workspace/diagnostic/refresh``)."""
    if not server.pull_diagnostics:
        return False
    capabilities = server.client_capabilities.workspace
    return bool(
        capabilities and capabilities.diagnostics and capabilities.diagnostics.refresh_support
    )


def request_refresh(server: TorchwardServer) -> None:
    if can_refresh(server):
        try:
            server.workspace_diagnostic_refresh(None)
        except Exception:  # the pipe is gone; nothing to refresh
            log.debug("workspace/diagnostic/refresh failed", exc_info=True)


async def current_result(server: TorchwardServer, uri: str) -> DocumentResult | None:
    """The result for the document's current version and settings (analysing if needed)."""
    while True:
        if server.documents.get(uri) is None:
            return None
        state = server.states.get(uri)
        result = state.result if state else None
        if server.is_current(uri, result):
            return result
        settled = server.scheduler.settled(uri)
        if not server.scheduler.is_pending(uri):
            server.schedule(uri, immediate=True)
        await settled


def shown_result(server: TorchwardServer, uri: str) -> DocumentResult | None:
    """The result to answer a pull with at once, or None when the pull must wait.

    While the document's analysis is pending (debounce, or running) a client that can be
    refreshed gets the last result it was sent, moved with the edits since; the refresh
    follows the delivery (:func:`publish`). Before the first analysis there is nothing
    to show, so that pull waits: it cannot blank anything."""
    state = server.states.get(uri)
    result = state.result if state is not None else None
    if result is None or server.is_current(uri, result) or not can_refresh(server):
        return None
    server.stale_pulls.add(uri)
    if not server.scheduler.is_pending(uri):
        server.schedule(uri, immediate=True)
    return result


# Marks the result id of a report answered before the newest analysis landed ("12.5~"):
# a refresh follows. The client sends it back as previousResultId, read without the mark.
EARLY_MARK = "~"


async def document_report(server: TorchwardServer, params: types.DocumentDiagnosticParams):
    uri = params.text_document.uri
    if (located := server.notebooks.owner(uri)) is not None:
        return await _cell_report(server, params, *located)
    early = shown_result(server, uri)
    result = early or await current_result(server, uri)
    document = server.documents.get(uri)
    if result is None or document is None:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    result_id = result.result_id + (EARLY_MARK if early is not None else "")
    if (params.previous_result_id or "").rstrip(EARLY_MARK) == result.result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(
        items=diagnostics_for(document, result, server.codec, by_key=True), result_id=result_id
    )


async def _cell_report(
    server: TorchwardServer,
    params: types.DocumentDiagnosticParams,
    notebook: Notebook,
    cell: Cell,
):
    """A notebook cell's pull: empty — cells are *pushed* to every client
    (:func:`.notebooks.publish`): vscode-languageclient 9 never pulls a notebook's cells
    (it pulls for text tabs only), and a client that pulls and is pushed to shows the
    pushed items beside an empty pulled report, never twice."""
    return types.RelatedFullDocumentDiagnosticReport(
        items=[], result_id=f"cell.{notebook.revision}"
    )


async def _workspace_items(server: TorchwardServer, previous: dict[str, str]):
    items: list[types.WorkspaceDocumentDiagnosticReport] = []
    changed = False
    for document in server.documents:
        if server.notebooks.get(document.uri) is not None:
            continue  # a notebook's program is no file: its cells pull their own
        result = await current_result(server, document.uri)
        if result is None:
            continue
        if previous.get(document.uri) == result.result_id:
            items.append(
                types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=document.uri, version=result.version, result_id=result.result_id
                )
            )
            continue
        changed = True
        items.append(
            types.WorkspaceFullDocumentDiagnosticReport(
                uri=document.uri,
                version=result.version,
                items=diagnostics_for(document, result, server.codec, by_key=True),
                result_id=result.result_id,
            )
        )
    for entry in server.scan.closed_reports():  # the workspace scan: files that are not open
        result_id = entry.result.result_id
        if previous.get(entry.uri) == result_id:
            items.append(
                types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=entry.uri, version=None, result_id=result_id
                )
            )
            continue
        changed = True
        items.append(
            types.WorkspaceFullDocumentDiagnosticReport(
                uri=entry.uri, version=None, items=list(entry.diagnostics), result_id=result_id
            )
        )
    for (
        uri,
        result_id,
    ) in server.scan.tombstones().items():  # deleted since the client last heard of them
        if uri in previous and previous[uri] != result_id and server.documents.get(uri) is None:
            changed = True
            items.append(
                types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, version=None, items=[], result_id=result_id
                )
            )
    return items, changed


async def workspace_report(server: TorchwardServer, params: types.WorkspaceDiagnosticParams):
    previous = {item.uri: item.value for item in params.previous_result_ids or []}
    event = server.delivered
    event.clear()
    items, changed = await _workspace_items(server, previous)
    if not changed and previous:
        try:
            await asyncio.wait_for(event.wait(), WORKSPACE_POLL_S)
        except asyncio.TimeoutError:
            pass
        items, _ = await _workspace_items(server, previous)
    return types.WorkspaceDiagnosticReport(items=items)


def register(server: TorchwardServer) -> None:
    options = types.DiagnosticOptions(
        inter_file_dependencies=True, workspace_diagnostics=True, identifier=SOURCE
    )

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, options)
    async def document_diagnostic(params: types.DocumentDiagnosticParams):
        return await document_report(server, params)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(params: types.WorkspaceDiagnosticParams):
        return await workspace_report(server, params)
