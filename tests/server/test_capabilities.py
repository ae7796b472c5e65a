"""What the server declares, and the refresh that follows a change of settings."""

from __future__ import annotations

import asyncio

import pytest
from harness import TIMEOUT_S, fresh_uri, session
from lsprotocol import types

pytestmark = pytest.mark.asyncio


async def test_diagnostics_declare_inter_file_dependencies():
    # rules read the modules a file imports: an edit in one may change another's findings
    async with session("vscode-1.96") as editor:
        provider = editor.result.capabilities.diagnostic_provider
        assert provider is not None and provider.inter_file_dependencies is True


async def test_a_configuration_change_asks_a_pulling_client_to_pull_again():
    async with session("vscode-1.96", configuration={"": {"ignore": []}}) as editor:
        uri = fresh_uri()
        editor.open(uri, "x = 1\n")
        await editor.diagnostics(uri)
        before = editor.diagnostic_refreshes()
        editor.client.set_configuration({"ignore": ["TW001"]}, section="torchward")
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )

        async def refreshed():
            while editor.diagnostic_refreshes() == before:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(refreshed(), TIMEOUT_S)


async def test_a_notebook_client_is_told_notebook_sync_and_others_are_not():
    async with session("vscode-1.96", notebooks=True) as editor:
        assert editor.result.capabilities.notebook_document_sync is not None
    async with session("vscode-1.96") as editor:
        assert editor.result.capabilities.notebook_document_sync is None
