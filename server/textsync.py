"""Text synchronisation: open, change, save, close.

Protocol model: the client owns the text; it sends it whole on ``didOpen`` and then
only the edits (incremental sync) with a new version each time. The server applies the
edits to its own copy (:mod:`.documents`), moves the last findings along with the lines
they point at (:mod:`.results`), and asks the scheduler for a fresh analysis after the
debounce. Opening analyses at once: there is no typing to wait for. Only Python
documents are tracked; saving a ``pyproject.toml`` reloads the project configuration
even when the client does not watch files for us.
"""

from __future__ import annotations

from lsprotocol import types

from .documents import path_of
from .results import AnalysisState
from .server import TorchwardServer
from .workspace import is_project_file

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


def is_python(uri: str, language_id: str | None) -> bool:
    return language_id == "python" or uri.lower().endswith(PYTHON_SUFFIXES)


def on_did_open(server: TorchwardServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    if not is_python(item.uri, item.language_id):
        return
    server.documents.open(item.uri, item.text, item.version, item.language_id)
    server.states[item.uri] = AnalysisState()
    server.schedule(item.uri, immediate=True)


def on_did_change(server: TorchwardServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    document = server.documents.get(uri)
    if document is None:
        return
    shifts = document.apply_changes(
        params.content_changes, params.text_document.version, server.codec
    )
    server.states.setdefault(uri, AnalysisState()).follow(shifts)
    server.schedule(uri)


def on_did_save(server: TorchwardServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if is_project_file(uri):
        from .lifecycle import settings_have_changed

        settings_have_changed(server)
        return
    server.scan.file_changed(path_of(uri))
    state = server.states.get(uri)
    if uri in (d.uri for d in server.documents) and not server.is_current(
        uri, state.result if state else None
    ):
        server.schedule(uri, immediate=True)


def on_did_close(server: TorchwardServer, params: types.DidCloseTextDocumentParams) -> None:
    from . import reporting

    uri = params.text_document.uri
    if server.documents.close(uri) is None:
        return
    server.states.pop(uri, None)
    server.last_fit.pop(uri, None)
    server.scheduler.forget(uri)
    if not server.scan.document_closed(
        uri, path_of(uri)
    ):  # a scanned file falls back to its on-disk result
        reporting.clear(server, uri)


def register(server: TorchwardServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(lambda params: on_did_open(server, params))
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(lambda params: on_did_change(server, params))
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(
        lambda params: on_did_save(server, params)
    )
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(lambda params: on_did_close(server, params))
