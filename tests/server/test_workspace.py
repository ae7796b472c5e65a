"""Multi-root workspaces: each folder has its own project configuration and editor settings."""

from __future__ import annotations

import asyncio

import pytest
from harness import session, uri_of
from lsprotocol import types

pytestmark = pytest.mark.asyncio

SCRIPT = "def f():\n    print(1)\n    breakpoint()\n    input()\n"


@pytest.fixture
def folders(tmp_path):
    result = []
    for name, ignored in (("alpha", "TW900"), ("beta", "TW901")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f'[tool.torchward]\nignore = ["{ignored}"]\n')
        result.append(folder)
    return result


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.11"])
async def test_each_folder_uses_its_own_pyproject_and_scoped_settings(client, folders):
    alpha, beta = folders
    configuration = {uri_of(beta): {"ignore": ["TW902"]}}
    async with session(client, folders=folders, configuration=configuration) as editor:
        editor.open(uri_of(alpha / "train.py"), SCRIPT)
        editor.open(uri_of(beta / "train.py"), SCRIPT)
        for _ in range(100):  # the scoped settings arrive after initialization
            codes = sorted(d.code for d in await editor.diagnostics(uri_of(beta / "train.py")))
            if codes == ["TW900"]:
                break
            await asyncio.sleep(0.02)
        assert codes == ["TW900"]
        assert sorted(d.code for d in await editor.diagnostics(uri_of(alpha / "train.py"))) == [
            "TW901",
            "TW902",
        ]


async def test_a_folder_added_later_brings_its_configuration(folders, tmp_path):
    alpha, _ = folders
    gamma = tmp_path / "gamma"
    gamma.mkdir()
    (gamma / "pyproject.toml").write_text('[tool.torchward]\nselect = ["TW902"]\n')
    async with session("vscode-1.65", folders=[alpha]) as editor:
        document = uri_of(gamma / "train.py")
        editor.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri_of(gamma), "gamma")], removed=[]
                )
            )
        )
        editor.open(document, SCRIPT)
        assert [d.code for d in await editor.diagnostics(document)] == ["TW902"]
