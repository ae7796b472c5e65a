"""An editor stand-in for end-to-end tests: a pytest-lsp client plus the text it edits.

``session(...)`` starts ``torchward lsp`` (by default with the stand-in rules of
:mod:`fake_rules`) as a subprocess, initialises it with the capabilities of a real
client, and yields an :class:`Editor` that opens and edits documents, collects what
the server pushes, pulls diagnostics when the client profile pulls, and applies
workspace edits to its own copy of the text, as an editor would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import pathlib
import sys
from typing import Any

import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, register_lsp_features
from torchward.server.encoding import ColumnCodec, split_lines

HERE = pathlib.Path(__file__).parent
FAKE_SERVER = [sys.executable, str(HERE / "fake_rules.py")]
REAL_SERVER = [sys.executable, "-m", "torchward.server"]
TIMEOUT_S = 30.0  # generous: a loaded 2-core CI machine can take seconds to start a server

PUSH_CLIENTS = ("vscode-1.65", "neovim-0.7")
PULL_CLIENTS = ("vscode-1.96", "neovim-0.11")
ALL_CLIENTS = PUSH_CLIENTS + PULL_CLIENTS


def capabilities(name: str) -> types.ClientCapabilities:
    if name == "vscode-1.96":
        data = json.loads((HERE / "clients" / "visual_studio_code_v1.96.json").read_text())
        return default_converter().structure(data["capabilities"], types.ClientCapabilities)
    spec = {
        "vscode-1.65": "visual-studio-code@v1.65.2",
        "neovim-0.7": "neovim@v0.7.0",
        "neovim-0.11": "neovim@v0.11.0",
    }
    return pytest_lsp.client_capabilities(spec[name])


def converter():
    """pygls' converter, with lsprotocol's ``Command | CodeAction`` hook corrected.

    lsprotocol 2025.0.0 structures *any* object with a ``command`` key as a ``Command``,
    so a code action that runs a command ("Explain TW900") would arrive mangled; real
    clients tell them apart by the type of ``command`` (a string only on ``Command``).
    """
    result = default_converter()

    def code_action_or_command(value, _):
        if isinstance(value.get("command"), str):
            return result.structure(value, types.Command)
        return result.structure(value, types.CodeAction)

    result.register_structure_hook(types.Command | types.CodeAction, code_action_or_command)
    return result


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=converter)
    client.published = {}
    client.gpu_fits = []
    client.registrations = []
    client.refreshes = []
    client.message_requests = []
    client.answer_message_request = None  # a title to pick for window/showMessageRequest

    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.published[params.uri] = params

    def register_capability(ls: LanguageClient, params: types.RegistrationParams) -> None:
        ls.registrations.extend(params.registrations)

    def gpu_fit(ls: LanguageClient, params: Any) -> None:
        ls.gpu_fits.append(params)

    def inlay_refresh(ls: LanguageClient, params: Any) -> None:
        ls.refreshes.append("inlayHint")

    def lens_refresh(ls: LanguageClient, params: Any) -> None:
        ls.refreshes.append("codeLens")

    def diagnostic_refresh(ls: LanguageClient, params: Any) -> None:
        ls.refreshes.append("diagnostic")
        ls.diagnostic_refresh_count += 1

    def message_request(ls: LanguageClient, params: types.ShowMessageRequestParams):
        ls.message_requests.append(params)
        wanted = ls.answer_message_request
        return next((a for a in params.actions or [] if a.title == wanted), None)

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.WINDOW_SHOW_MESSAGE_REQUEST] = message_request
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.CLIENT_REGISTER_CAPABILITY] = register_capability
    features["torchward/gpuFit"] = gpu_fit
    features[types.WORKSPACE_INLAY_HINT_REFRESH] = inlay_refresh
    features[types.WORKSPACE_CODE_LENS_REFRESH] = lens_refresh
    features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = diagnostic_refresh
    register_lsp_features(client, features)
    return client


def uri_of(path: pathlib.Path | str) -> str:
    return from_fs_path(str(path))


class Editor:
    def __init__(self, client: LanguageClient, name: str, result: types.InitializeResult) -> None:
        self.client = client
        self.name = name
        self.result = result
        encoding = result.capabilities.position_encoding or "utf-16"
        self.codec = ColumnCodec(encoding)
        self.pulls = client.capabilities.text_document.diagnostic is not None
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    # -- documents ---------------------------------------------------------------------
    def open(self, uri: str, text: str, language_id: str = "python") -> None:
        self.texts[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language_id, 1, text))
        )

    def close(self, uri: str) -> None:
        self.texts.pop(uri)
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
        )

    def position(self, uri: str, line: int, column: int) -> types.Position:
        """A client position from a 0-based line and a code-point column."""
        text = split_lines(self.texts[uri])[line]
        return types.Position(line, self.codec.to_client(text, column))

    def _offset(self, uri: str, position: types.Position) -> int:
        lines = split_lines(self.texts[uri])
        offset = 0
        text = self.texts[uri]
        for index in range(min(position.line, len(lines))):
            offset += len(lines[index])
            offset += 2 if text.startswith("\r\n", offset) else 1
        if position.line >= len(lines):
            return len(text)
        return offset + self.codec.from_client(lines[position.line], position.character)

    def edit(self, uri: str, edits: list[types.TextEdit]) -> None:
        """Apply ``edits`` (all relative to the current text) and send them incrementally."""
        changes = []
        for edit in sorted(
            edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
        ):
            start = self._offset(uri, edit.range.start)
            end = self._offset(uri, edit.range.end)
            self.texts[uri] = self.texts[uri][:start] + edit.new_text + self.texts[uri][end:]
            changes.append(
                types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text)
            )
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=self.versions[uri], uri=uri), changes
            )
        )

    def replace_all(self, uri: str, text: str) -> None:
        """A change without a range (full-text sync from the client)."""
        self.texts[uri] = text
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=self.versions[uri], uri=uri),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def type_text(self, uri: str, line: int, column: int, text: str) -> None:
        position = self.position(uri, line, column)
        self.edit(uri, [types.TextEdit(types.Range(position, position), text)])

    def apply(self, edit: types.WorkspaceEdit) -> None:
        if edit.document_changes:
            for change in edit.document_changes:
                assert change.text_document.version in (
                    None,
                    self.versions[change.text_document.uri],
                )
                self.edit(change.text_document.uri, list(change.edits))
        for uri, edits in (edit.changes or {}).items():
            self.edit(uri, list(edits))

    # -- diagnostics -------------------------------------------------------------------
    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The diagnostics for the current version of ``uri``, pushed or pulled."""
        if self.pulls:
            return await asyncio.wait_for(self._pulled(uri), TIMEOUT_S)
        version = self.versions.get(uri)

        async def published() -> list[types.Diagnostic]:
            while True:
                params = self.client.published.get(uri)
                if params is not None and (version is None or params.version == version):
                    return list(params.diagnostics)
                await asyncio.sleep(0.005)

        return await asyncio.wait_for(published(), TIMEOUT_S)

    async def pull(self, uri: str, previous_result_id: str | None = None):
        return await self.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(
                types.TextDocumentIdentifier(uri), previous_result_id=previous_result_id
            )
        )

    def diagnostic_refreshes(self) -> int:
        return self.client.refreshes.count("diagnostic")

    async def _pulled(self, uri: str) -> list[types.Diagnostic]:
        """Pull as VS Code does: a pull answered before the newest analysis landed (its
        result id ends with ``~``) is followed by ``workspace/diagnostic/refresh`` once it
        lands, and the client pulls again."""
        while True:
            seen = self.diagnostic_refreshes()
            report = await self.pull(uri)
            if not (report.result_id or "").endswith("~"):
                return list(report.items)
            while self.diagnostic_refreshes() == seen:
                await asyncio.sleep(0.005)

    async def code_actions(
        self, uri: str, diagnostics: list[types.Diagnostic], only=None
    ) -> list[types.CodeAction]:
        anchor = (
            diagnostics[0].range
            if diagnostics
            else types.Range(types.Position(0, 0), types.Position(0, 0))
        )
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri),
                anchor,
                types.CodeActionContext(diagnostics=diagnostics, only=only),
            )
        )
        return list(result or [])

    async def resolved(self, action: types.CodeAction) -> types.CodeAction:
        """``action`` with its edit, resolving it (``codeAction/resolve``) when it came without."""
        if action.edit is not None or action.command is not None:
            return action
        return await asyncio.wait_for(self.client.code_action_resolve_async(action), TIMEOUT_S)

    async def hover(self, uri: str, position: types.Position) -> types.Hover | None:
        return await self.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), position)
        )

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(name, list(arguments))
        )


@contextlib.asynccontextmanager
async def session(
    name: str = "vscode-1.96",
    *,
    server: list[str] = FAKE_SERVER,
    options: dict[str, Any] | None = None,
    folders: list[pathlib.Path] = (),
    configuration: dict[str, Any] | None = None,
    without_configuration: bool = False,
    position_encodings: list[str] | None = None,
    notebooks: bool = False,
    client_name: str | None = None,
    show_document: bool | None = None,
):
    """A running server initialised as client ``name``; ``options`` are initializationOptions.

    ``configuration`` maps a scope URI ('' for global) to the client's ``torchward``
    section; ``without_configuration`` makes the client one that cannot answer
    ``workspace/configuration`` (settings then come with didChangeConfiguration).
    """
    config = ClientServerConfig(server_command=server, client_factory=make_client)
    client = await config.start()
    if configuration is not None:
        for scope, values in configuration.items():
            client.set_configuration(values, section="torchward", scope_uri=scope or None)
    init_options = {"debounceMs": 0, **(options or {})}
    workspace_folders = [types.WorkspaceFolder(uri_of(f), f.name) for f in folders] or None
    client_capabilities = capabilities(name)
    if without_configuration:
        client_capabilities.workspace.configuration = False
    if show_document is not None:
        window = client_capabilities.window or types.WindowClientCapabilities()
        window.show_document = types.ShowDocumentClientCapabilities(support=show_document)
        client_capabilities.window = window
    if notebooks:  # LSP 3.17 notebook sync, as VS Code and jupyterlab-lsp declare it
        client_capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities()
        )
    if position_encodings is not None:  # the encodings the client offers, preferred first
        general = client_capabilities.general or types.GeneralClientCapabilities()
        general.position_encodings = [types.PositionEncodingKind(e) for e in position_encodings]
        client_capabilities.general = general
    if client_name is None:
        client_name = "Visual Studio Code" if name.startswith("vscode") else "Neovim"
    try:
        result = await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    client_info=types.ClientInfo(client_name) if client_name else None,
                    capabilities=client_capabilities,
                    initialization_options=init_options,
                    workspace_folders=workspace_folders,
                    root_uri=workspace_folders[0].uri if workspace_folders else None,
                )
            ),
            TIMEOUT_S,
        )
        yield Editor(client, name, result)
    finally:
        try:
            await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
        except Exception:
            if client._server is not None and client._server.returncode is None:
                client._server.kill()
        await asyncio.wait_for(client.stop(), TIMEOUT_S)


_URIS = iter(range(1, 1 << 30))


def fresh_uri(stem: str = "train") -> str:
    """A URI no other test uses, so tests can share one server."""
    return f"file:///work/project/{stem}_{next(_URIS)}.py"
