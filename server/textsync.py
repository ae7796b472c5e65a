"""Text synchronisation: open, change, save, close — and what happens when it breaks.

Protocol model: the client owns the text; it sends it whole on ``didOpen`` and then
only the edits (incremental sync) with a new version each time. The server applies the
edits to its own copy (:mod:`.documents`, lines split exactly as LSP splits them:
``\\n``, ``\\r\\n``, ``\\r``), moves the last findings along with the lines they point at
(:mod:`.results`), and asks the scheduler for a fresh analysis after the debounce.
Opening analyses at once: there is no typing to wait for. Only Python documents are
tracked; saving a ``pyproject.toml`` reloads the project configuration even when the
client does not watch files for us.

Drift. LSP has no request by which a server can ask for the whole text again, so when
an edit proves that the two copies differ (its range is outside our text), the server:

1. rejects the edit — it is never clamped into place, which would corrupt the copy
   silently and make every later finding and fix wrong;
2. sets the document aside as *lost*: its diagnostics are cleared (pushed empty, or
   the client is asked to pull again and gets none), and nothing — analysis, hover,
   code actions, estimates — is computed from it;
3. logs the error (``window/logMessage``, type Error) and shows one warning saying how
   to recover;
4. resynchronises from the client's next whole text: a change without a range, a
   ``didOpen``, or a ``didSave`` — the server registers for saves *with* their text for
   exactly this. A save whose text differs from an in-sync copy is drift caught late: it
   is logged the same way and the saved text is taken.
"""

from __future__ import annotations

import os

from lsprotocol import types

from .documents import PositionOutOfRange, path_of
from .results import AnalysisState
from .server import TorchwardServer
from .workspace import document_forgotten, is_project_file, module_text_changed

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
DOCUMENT_STATE_REQUEST = "torchward/documentState"


def is_python(uri: str, language_id: str | None) -> bool:
    return language_id == "python" or uri.lower().endswith(PYTHON_SUFFIXES)


def on_did_open(server: TorchwardServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    if not is_python(item.uri, item.language_id) or server.notebooks.owner(item.uri) is not None:
        return  # a notebook's cell is analysed with its notebook (.notebooks)
    server.documents.open(item.uri, item.text, item.version, item.language_id)
    server.states[item.uri] = AnalysisState()
    server.schedule(item.uri, immediate=True)
    module_text_changed(server, path_of(item.uri), item.text)  # its importers read this text


def _whole_text(changes) -> int | None:
    """Index of the last change without a range (the client's whole text), if any."""
    for index in range(len(changes) - 1, -1, -1):
        if getattr(changes[index], "range", None) is None:
            return index
    return None


def on_did_change(server: TorchwardServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    version = params.text_document.version
    changes = list(params.content_changes)
    document = server.documents.get(uri)
    if document is None:
        lost = server.documents.lost(uri)
        if lost is None:
            return
        lost.version = version if version is not None else lost.version
        whole = _whole_text(changes)
        if whole is None:
            return  # still lost: edits against a text we do not have cannot be applied
        document = server.documents.recover(uri, changes[whole].text, version)
        changes = changes[whole + 1 :]
        server.states[uri] = AnalysisState()
        server.log(f"torchward: {_name(uri)}: resynchronised from the client's full text")
        if document is None:  # pragma: no cover - recover() found it lost just above
            return
    try:
        shifts = document.apply_changes(changes, version, server.codec)
    except PositionOutOfRange as error:
        lose(
            server,
            uri,
            f"an edit at line {error.position.line}, character "
            f"{error.position.character} does not fit the server's text ({error.reason})",
        )
        return
    server.states.setdefault(uri, AnalysisState()).follow(shifts)
    server.schedule(uri)
    module_text_changed(server, document.path, document.text)  # re-lints its open importers


def lose(server: TorchwardServer, uri: str, reason: str) -> None:
    """Set ``uri`` aside as lost: clear what was shown for it and say how to recover."""
    from . import reporting

    document = server.documents.lose(uri)
    server.states.pop(uri, None)
    server.last_fit.pop(uri, None)
    server.scheduler.forget(uri)
    if server.pull_diagnostics:
        reporting.request_refresh(server)  # a pulling client asks again and gets nothing
    elif document is not None:  # for the version the client is at, so it is not stale
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri, [], document.version)
        )
    server.log(
        f"torchward: {uri}: text out of sync with the editor: {reason}; the edit was rejected, "
        "diagnostics cleared, analysis stopped until the client sends the whole text "
        "(save the file, or close and reopen it)",
        types.MessageType.Error,
    )
    server.warn_once(
        f"torchward lost track of the text of {_name(uri)}: diagnostics are cleared until "
        "you save the file (or close and reopen it)."
    )


def _name(uri: str) -> str:
    return os.path.basename(path_of(uri)) or uri


def on_did_save(server: TorchwardServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if is_project_file(uri):
        from .lifecycle import settings_have_changed

        settings_have_changed(server)
        return
    server.scan.file_changed(path_of(uri))
    text = params.text
    if text is not None and server.documents.lost(uri) is not None:
        server.documents.recover(uri, text)
        server.states[uri] = AnalysisState()
        server.log(f"torchward: {_name(uri)}: resynchronised from the saved text")
        server.schedule(uri, immediate=True)
        return
    document = server.documents.get(uri)
    if document is not None and text is not None and text != document.text:
        server.log(
            f"torchward: {uri}: the saved text differs from the server's copy; "
            "resynchronised from it",
            types.MessageType.Error,
        )
        server.states.setdefault(uri, AnalysisState()).follow(document.replace_text(text))
        server.schedule(uri, immediate=True)
        return
    result = state.result if (state := server.states.get(uri)) else None
    carried = result is not None and result.carried  # analysed on save only (.onsave)
    if document is not None and (carried or not server.is_current(uri, result)):
        server.schedule(uri, immediate=True)


def on_did_close(server: TorchwardServer, params: types.DidCloseTextDocumentParams) -> None:
    from . import reporting

    uri = params.text_document.uri
    if server.documents.close(uri) is None:
        return
    server.states.pop(uri, None)
    server.last_fit.pop(uri, None)
    server.scheduler.forget(uri)
    module_text_changed(server, path_of(uri), None)  # its importers read the disk again
    document_forgotten(path_of(uri))
    if not server.scan.document_closed(
        uri, path_of(uri)
    ):  # a scanned file falls back to its on-disk result
        reporting.clear(server, uri)


def document_state(server: TorchwardServer, params) -> dict | None:
    """``torchward/documentState {uri}``: the server's copy of a document, for checking sync.

    ``{uri, version, inSync, text, lineCount}``; ``inSync`` is false for a lost
    document (its last good text is returned); null for a document that is not open.
    """
    uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
    if not isinstance(uri, str):
        raise ValueError("expected {uri: string}")
    document = server.documents.get(uri)
    in_sync = document is not None
    document = document or server.documents.lost(uri)
    if document is None:
        return None
    return {
        "uri": uri,
        "version": document.version,
        "inSync": in_sync,
        "text": document.text,
        "lineCount": len(document.lines),
    }


def register(server: TorchwardServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(lambda params: on_did_open(server, params))
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(lambda params: on_did_change(server, params))
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))(
        lambda params: on_did_save(server, params)
    )
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(lambda params: on_did_close(server, params))
    server.feature(DOCUMENT_STATE_REQUEST)(lambda params: document_state(server, params))
