"""Settings: initialization options, client configuration, pyproject.toml, and their errors."""

from __future__ import annotations

import asyncio

import pytest
from harness import session, uri_of
from lsprotocol import types

pytestmark = pytest.mark.asyncio

SCRIPT = """\
def train(model, loader):
    for x in loader:
        print(x)
        breakpoint()
        input()
"""
URI = "file:///work/project/train.py"


async def _eventually(predicate, timeout_s=5.0):
    for _ in range(int(timeout_s / 0.01)):
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


async def test_invalid_initialization_options_show_a_message_and_fall_back_to_defaults():
    options = {"debounceMs": "fast", "select": 5, "inlayHints": "yes", "ignore": ["TW902"]}
    async with session("vscode-1.65", options=options) as editor:
        editor.open(URI, SCRIPT)
        diagnostics = await editor.diagnostics(URI)
        messages = [m.message for m in editor.client.messages]
    assert {d.code for d in diagnostics} == {"TW900", "TW901"}  # the valid key still applies
    assert any("debounceMs" in m for m in messages)
    assert any("'select'" in m for m in messages)
    assert any("inlayHints" in m for m in messages)
    assert all(m.type == types.MessageType.Warning for m in editor.client.messages)


async def test_settings_from_workspace_configuration_select_and_override_severity():
    configuration = {"": {"select": ["TW901", "TW902"], "severity": {"TW902": "error"}}}
    async with session("vscode-1.65", configuration=configuration) as editor:
        editor.open(URI, SCRIPT)
        assert await _eventually(
            lambda: (
                editor.client.published.get(URI)
                and len(editor.client.published[URI].diagnostics) == 2
            )
        )
        diagnostics = await editor.diagnostics(URI)
    assert {d.code: d.severity for d in diagnostics} == {
        "TW901": types.DiagnosticSeverity.Error,
        "TW902": types.DiagnosticSeverity.Error,
    }


@pytest.mark.parametrize("client", ["vscode-1.65", "vscode-1.96"])
async def test_did_change_configuration_reanalyses_open_documents(client):
    async with session(client) as editor:
        editor.open(URI, SCRIPT)
        assert len(await editor.diagnostics(URI)) == 3
        editor.client.set_configuration({"ignore": ["TW900", "TW901"]}, section="torchward")
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
        if editor.pulls:
            assert await _eventually(lambda: editor.client.diagnostic_refresh_count == 1)
            assert [d.code for d in await editor.diagnostics(URI)] == ["TW902"]
        else:
            assert await _eventually(lambda: len(editor.client.published[URI].diagnostics) == 1)


async def test_a_client_without_workspace_configuration_sends_settings_in_the_notification():
    async with session("vscode-1.65", without_configuration=True) as editor:
        editor.open(URI, SCRIPT)
        assert len(await editor.diagnostics(URI)) == 3
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchward": {"ignore": ["TW9"]}})
        )
        assert await _eventually(lambda: len(editor.client.published[URI].diagnostics) == 0)
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchward": {"ignore": "TW900"}})
        )
        assert await _eventually(lambda: len(editor.client.published[URI].diagnostics) == 3)
        assert any("'ignore'" in m.message for m in editor.client.messages)


async def test_pyproject_configuration_applies_and_reloads_when_the_file_changes(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        '[tool.torchward]\nignore = ["TW900"]\nper-file-ignores = {"scripts/*.py" = ["TW902"]}\n'
    )
    (project / "scripts").mkdir()
    train, script = project / "train.py", project / "scripts" / "run.py"
    async with session("vscode-1.96", folders=[project]) as editor:
        assert await _eventually(
            lambda: any(
                r.method == "workspace/didChangeWatchedFiles" for r in editor.client.registrations
            )
        )
        editor.open(uri_of(train), SCRIPT)
        editor.open(uri_of(script), SCRIPT)
        assert sorted(d.code for d in await editor.diagnostics(uri_of(train))) == ["TW901", "TW902"]
        assert sorted(d.code for d in await editor.diagnostics(uri_of(script))) == ["TW901"]
        pyproject.write_text('[tool.torchward]\nselect = ["TW900"]\n')
        editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(uri_of(pyproject), types.FileChangeType.Changed)]
            )
        )
        assert await _eventually(lambda: editor.client.diagnostic_refresh_count == 1)
        assert [d.code for d in await editor.diagnostics(uri_of(train))] == ["TW900"]


async def test_a_broken_pyproject_is_reported_once_and_the_defaults_apply(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchward]\nignor = ["TW900"]\n')
    train = tmp_path / "train.py"
    async with session("vscode-1.65", folders=[tmp_path]) as editor:
        editor.open(uri_of(train), SCRIPT)
        assert len(await editor.diagnostics(uri_of(train))) == 3
        editor.type_text(uri_of(train), 0, 0, "\n")
        await editor.diagnostics(uri_of(train))
        config_messages = [m for m in editor.client.messages if "pyproject.toml" in m.message]
    assert len(config_messages) == 1 and "ignor" in config_messages[0].message


async def test_saving_pyproject_reloads_it_for_clients_that_do_not_watch_files(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.torchward]\n")
    train = tmp_path / "train.py"
    async with session("neovim-0.7", folders=[tmp_path]) as editor:
        editor.open(uri_of(train), SCRIPT)
        assert len(await editor.diagnostics(uri_of(train))) == 3
        pyproject.write_text('[tool.torchward]\nignore = ["TW901", "TW902"]\n')
        editor.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri_of(pyproject)))
        )
        assert await _eventually(
            lambda: len(editor.client.published[uri_of(train)].diagnostics) == 1
        )
