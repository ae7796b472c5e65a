"""Initialisation and everything that changes the settings while the session runs.

Protocol model: at ``initialize`` the client states its capabilities (position
encodings, whether it pulls diagnostics, whether it can be asked for configuration or
watch files for us) and may pass ``initializationOptions`` — the same camelCase keys as
the ``torchward`` configuration section. After ``initialized`` the server asks for that
section (globally and per workspace folder) when the client supports
``workspace/configuration``, and asks to be told about ``pyproject.toml`` changes when
the client can register file watchers dynamically. Later changes arrive as
``workspace/didChangeConfiguration`` (a nudge to ask again, or the settings themselves
for clients without ``workspace/configuration``), ``workspace/didChangeWorkspaceFolders``
and ``workspace/didChangeWatchedFiles``. Each effective change bumps the settings
generation and re-analyses every open document.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from lsprotocol import types

from .configuration import empty_list_as_object, section_of
from .documents import path_of
from .encoding import ColumnCodec
from .server import TorchwardServer
from .workspace import PROJECT_FILE, is_project_file

log = logging.getLogger(__name__)

SECTION = "torchward"
WATCHER_ID = "torchward-pyproject-watcher"


def _capability(server: TorchwardServer, *path: str) -> Any:
    value: Any = server.client_capabilities
    for name in path:
        value = getattr(value, name, None)
        if value is None:
            return None
    return value


def _initialization_settings(options: Any) -> dict[str, Any]:
    options = section_of(options)
    if isinstance(options, dict) and isinstance(options.get("settings"), dict):
        options = options["settings"]
    return options if isinstance(options, dict) else {}


def on_initialize(server: TorchwardServer, params: types.InitializeParams) -> None:
    server.codec = ColumnCodec(server.workspace.position_encoding or "utf-16")
    server.client_name = params.client_info.name if params.client_info else ""
    server.pull_diagnostics = _capability(server, "text_document", "diagnostic") is not None
    options = params.initialization_options
    options = empty_list_as_object(options)
    if options is not None and not isinstance(section_of(options), dict):
        server.warn_once("torchward: initializationOptions must be an object; using the defaults")
    server.init_options = _initialization_settings(options)
    for folder in params.workspace_folders or []:
        server.folders.add_folder(folder.uri)
    if not server.folders.folders and (params.root_uri or params.root_path):
        from pygls.uris import from_fs_path

        server.folders.add_folder(params.root_uri or from_fs_path(params.root_path))
    server.settings_changed()
    server.settings_for("")  # validate the initialization options now, report problems once


WARM_UP_TOKEN = "torchward-warm-up"
WARM_UP_TITLE = "torchward: loading the analysis engine"


async def _show_warm_up(server: TorchwardServer, loading: Any) -> None:
    """``$/progress`` while the engine loads (about a second on a cold start, more on a
    busy machine): the first squiggles wait for it, and the user sees why."""
    progress = server.work_done_progress
    try:
        await asyncio.wait_for(progress.create_async(WARM_UP_TOKEN), 5.0)
    except Exception as error:  # the client refused or did not answer: no progress
        log.info("no progress for the warm-up: %r", error)
        return
    progress.begin(WARM_UP_TOKEN, types.WorkDoneProgressBegin(title=WARM_UP_TITLE))
    try:
        await asyncio.wrap_future(loading)
    except Exception:  # the first analysis reports what is wrong
        pass
    finally:
        with contextlib.suppress(Exception):  # the pipe may be gone (shutting down)
            progress.end(WARM_UP_TOKEN, types.WorkDoneProgressEnd(message="ready"))


async def on_initialized(server: TorchwardServer, params: types.InitializedParams) -> None:
    from .scheduler import warm_up

    loading = server.executor.submit(warm_up)
    if _capability(server, "window", "work_done_progress"):
        server.warm_up_progress = asyncio.ensure_future(_show_warm_up(server, loading))
    if _capability(server, "workspace", "did_change_watched_files", "dynamic_registration"):
        registration = types.Registration(
            id=WATCHER_ID,
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[types.FileSystemWatcher(glob_pattern=f"**/{PROJECT_FILE}")]
            ),
        )
        try:
            await server.client_register_capability_async(types.RegistrationParams([registration]))
        except Exception as error:
            log.info("the client refused the pyproject.toml watcher: %r", error)
    await refresh_configuration(server)
    server.scan.start()  # after the folders' settings arrived: they say whether to scan


async def refresh_configuration(server: TorchwardServer) -> None:
    """Ask the client for the ``torchward`` section (global and per folder); apply changes."""
    if not _capability(server, "workspace", "configuration"):
        return
    folders = list(server.folders.folders)
    items = [types.ConfigurationItem(section=SECTION)]
    items += [types.ConfigurationItem(scope_uri=uri, section=SECTION) for uri in folders]
    try:
        answers = await server.workspace_configuration_async(types.ConfigurationParams(items))
    except Exception as error:
        log.info("workspace/configuration failed: %r", error)
        return
    answers = [empty_list_as_object(answer) for answer in answers or []]
    answers += [None] * (len(items) - len(answers))
    global_settings = answers[0] if isinstance(answers[0], dict) else {}
    folder_settings = {uri: a for uri, a in zip(folders, answers[1:]) if isinstance(a, dict)}
    if answers[0] is not None and not isinstance(answers[0], dict):
        server.warn_once(
            f"torchward settings must be an object, got {type(answers[0]).__name__}; using the defaults"
        )
    apply_editor_settings(server, global_settings, folder_settings)


def apply_editor_settings(
    server: TorchwardServer,
    global_settings: dict[str, Any],
    folder_settings: dict[str, dict[str, Any]],
) -> None:
    if global_settings == server.global_settings and folder_settings == server.folder_settings:
        return
    server.global_settings = global_settings
    server.folder_settings = folder_settings
    settings_have_changed(server)


def settings_have_changed(server: TorchwardServer) -> None:
    from . import lenses, reporting

    server.settings_changed()
    server.settings_for("")
    server.reanalyse_all()
    reporting.request_refresh(server)
    lenses.refresh(server)  # inlayHints / codeLens may have been switched
    server.scan.restart()  # workspaceScan, excludes, rule selection or the folders may have changed


async def on_did_change_configuration(
    server: TorchwardServer, params: types.DidChangeConfigurationParams
) -> None:
    if _capability(server, "workspace", "configuration"):
        await refresh_configuration(server)
        return
    raw = empty_list_as_object(section_of(empty_list_as_object(params.settings)))
    if raw is not None and not isinstance(raw, dict):
        server.warn_once("torchward settings must be an object; using the defaults")
        raw = {}
    apply_editor_settings(server, raw or {}, server.folder_settings)


async def on_did_change_workspace_folders(
    server: TorchwardServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    for folder in params.event.removed or []:
        server.folders.remove_folder(folder.uri)
        server.folder_settings.pop(folder.uri, None)
    for folder in params.event.added or []:
        server.folders.add_folder(folder.uri)
    settings_have_changed(server)
    await refresh_configuration(server)


def on_did_change_watched_files(
    server: TorchwardServer, params: types.DidChangeWatchedFilesParams
) -> None:
    if any(is_project_file(change.uri) for change in params.changes):
        settings_have_changed(server)  # rescans too: unchanged files are not read again
        return
    for change in params.changes:
        server.scan.file_changed(path_of(change.uri))


def on_shutdown(server: TorchwardServer, params: Any) -> None:
    server.scan.stop()
    server.executor.shutdown(wait=False, cancel_futures=True)


def register(server: TorchwardServer) -> None:
    server.feature(types.INITIALIZE)(lambda params: on_initialize(server, params))

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        await on_initialized(server, params)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        await on_did_change_configuration(server, params)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        await on_did_change_workspace_folders(server, params)

    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        lambda params: on_did_change_watched_files(server, params)
    )
    server.feature(types.SHUTDOWN)(lambda params: on_shutdown(server, params))
