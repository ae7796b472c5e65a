"""The background workspace scan: progress, the cross-file index, workspace diagnostics."""

from __future__ import annotations

import asyncio

import pytest
from harness import TIMEOUT_S, session, uri_of
from lsprotocol import types
from torchward.server.configuration import settings_from_wire
from torchward.server.scan import module_name

BAD = "def f():\n    print(1)\n    breakpoint()\n"
CLEAN = "def f():\n    return 1\n"
NET = "import torch\n\nclass Net(torch.nn.Module):\n    class Inner:\n        pass\n\ndef build():\n    def local():\n        pass\n"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "generated").mkdir()
    (root / ".gitignore").write_text("generated/\n")
    (root / "bad.py").write_text(BAD)
    (root / "clean.py").write_text(CLEAN)
    (root / "models" / "__init__.py").write_text("")
    (root / "models" / "net.py").write_text(NET)
    (root / "generated" / "out.py").write_text(BAD)  # ignored by .gitignore
    return root


async def index(editor, **params) -> dict:
    answer = await asyncio.wait_for(
        editor.client.protocol.send_request_async(
            "torchward/workspaceIndex", {"wait": True, **params}
        ),
        TIMEOUT_S,
    )
    return _plain(answer)


def _plain(value):
    """Custom replies arrive as pygls' generic objects (named tuples); compare them as dicts."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def files_of(answer: dict) -> dict[str, dict]:
    return {entry["module"]: entry for entry in answer["files"]}


async def eventually(predicate, timeout_s: float = TIMEOUT_S) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def watched(editor, path, change: types.FileChangeType) -> None:
    editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(uri_of(path), change)])
    )


async def workspace_pull(editor, previous: dict[str, str] | None = None) -> dict[str, object]:
    ids = [types.PreviousResultId(uri, value) for uri, value in (previous or {}).items()]
    report = await asyncio.wait_for(
        editor.client.workspace_diagnostic_async(
            types.WorkspaceDiagnosticParams(previous_result_ids=ids)
        ),
        TIMEOUT_S,
    )
    return {item.uri: item for item in report.items}


@pytest.mark.asyncio
async def test_the_index_lists_modules_and_symbols_and_progress_is_reported(project):
    async with session(
        "vscode-1.96", folders=[project], options={"workspaceScan": "index"}
    ) as editor:
        answer = await index(editor)
        assert answer["state"] == "done"
        modules = files_of(answer)
        assert set(modules) == {"bad", "clean", "models", "models.net"}  # generated/ is gitignored
        assert modules["models.net"]["classes"] == ["Net"] and modules["models.net"][
            "functions"
        ] == ["build"]
        assert modules["bad"]["analysed"] is False and modules["bad"]["findings"] == []
        assert answer["counts"]["files"] == 4 and {
            m["name"]: m["path"] for m in answer["folders"][0]["modules"]
        }["models.net"].endswith("net.py")
        assert await eventually(
            lambda: any(  # the end notification precedes the reply, but be lenient
                reports and reports[-1].kind == "end"
                for reports in editor.client.progress_reports.values()
            )
        )
        (reports,) = [
            r
            for t, r in editor.client.progress_reports.items()
            if str(t).startswith("torchward-scan")
        ]
        kinds = [r.kind for r in reports]
        assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
        assert reports[0].percentage == 0 and reports[0].cancellable
        last_report = [r for r in reports if r.kind == "report"][-1]
        assert last_report.percentage == 100 and last_report.message == "4/4 files"
        assert reports[-1].message == "4 files indexed"
        assert any(
            r.method == "workspace/didChangeWatchedFiles" and "*.py" in str(r.register_options)
            for r in editor.client.registrations
        )


@pytest.mark.asyncio
async def test_changes_on_disk_update_the_index(project):
    async with session(
        "vscode-1.96", folders=[project], options={"workspaceScan": "index"}
    ) as editor:
        await index(editor)
        (project / "models" / "extra.py").write_text("class Extra:\n    pass\n")
        watched(editor, project / "models" / "extra.py", types.FileChangeType.Created)
        (project / "clean.py").write_text(CLEAN + "\nclass Added:\n    pass\n")
        watched(editor, project / "clean.py", types.FileChangeType.Changed)
        (project / "bad.py").unlink()
        watched(editor, project / "bad.py", types.FileChangeType.Deleted)
        modules = files_of(await index(editor))
        assert set(modules) == {"clean", "models", "models.net", "models.extra"}
        assert modules["models.extra"]["classes"] == ["Extra"]
        assert modules["clean"]["classes"] == ["Added"]


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["vscode-1.65", "neovim-0.11"])
async def test_the_scan_is_off_unless_asked(client, project):
    async with session(client, folders=[project]) as editor:
        answer = await index(editor)
        assert answer["state"] == "off" and answer["counts"]["files"] == 0
        assert answer["folders"][0]["mode"] == "off"
        assert not any(str(t).startswith("torchward-scan") for t in editor.client.progress_reports)
        assert uri_of(project / "bad.py") not in editor.client.published


@pytest.mark.asyncio
async def test_pulled_workspace_diagnostics_cover_closed_files_and_open_documents_win(project):
    bad, clean = uri_of(project / "bad.py"), uri_of(project / "clean.py")
    async with session(
        "vscode-1.96", folders=[project], options={"workspaceScan": "diagnostics"}
    ) as editor:
        assert files_of(await index(editor))["bad"]["findings"] == ["TW900", "TW901"]
        items = await workspace_pull(editor)
        assert sorted(d.code for d in items[bad].items) == ["TW900", "TW901"]
        assert items[bad].version is None and not items[clean].items
        assert items[bad].items[0].range.start == types.Position(1, 4)
        # unchanged ids: the long poll answers when a file changes on disk
        previous = {uri: item.result_id for uri, item in items.items()}
        pending = asyncio.ensure_future(workspace_pull(editor, previous))
        await asyncio.sleep(
            0.2
        )  # usually the long-poll path; in either order the answer is the same
        (project / "clean.py").write_text(CLEAN + "print(2)\n")
        watched(editor, project / "clean.py", types.FileChangeType.Changed)
        items = await pending
        assert isinstance(items[bad], types.WorkspaceUnchangedDocumentDiagnosticReport)
        assert [d.code for d in items[clean].items] == ["TW900"]
        # the open document's own report wins over the file on disk
        editor.open(bad, CLEAN)
        assert await editor.diagnostics(bad) == []
        items = await workspace_pull(editor)
        assert items[bad].version == 1 and not items[bad].items
        # closing falls back to the on-disk result
        editor.close(bad)
        items = await workspace_pull(editor)
        assert items[bad].version is None and sorted(d.code for d in items[bad].items) == [
            "TW900",
            "TW901",
        ]


@pytest.mark.asyncio
async def test_pushed_diagnostics_for_closed_files(project):
    bad = uri_of(project / "bad.py")
    async with session(
        "vscode-1.65", folders=[project], options={"workspaceScan": "diagnostics"}
    ) as editor:
        published = editor.client.published
        assert await eventually(lambda: bad in published)
        assert published[bad].version is None
        assert sorted(d.code for d in published[bad].diagnostics) == ["TW900", "TW901"]
        assert uri_of(project / "clean.py") not in published  # nothing to say about clean files
        assert uri_of(project / "generated" / "out.py") not in published
        editor.open(bad, CLEAN)
        assert await editor.diagnostics(bad) == []
        editor.close(bad)
        assert await eventually(
            lambda: published[bad].version is None and len(published[bad].diagnostics) == 2
        )
        (project / "bad.py").unlink()
        watched(editor, project / "bad.py", types.FileChangeType.Deleted)
        assert await eventually(lambda: not published[bad].diagnostics)


@pytest.mark.asyncio
async def test_multi_root_scans_each_folder_with_its_own_settings(project, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[tool.torchward]\nignore = ["TW900"]\n')
    (other / "train.py").write_text(BAD)
    configuration = {
        "": {"workspaceScan": "index"},
        uri_of(other): {"workspaceScan": "diagnostics"},
    }
    async with session(
        "vscode-1.96", folders=[project, other], configuration=configuration
    ) as editor:
        answer = await index(editor)
        modes = {folder["path"]: folder["mode"] for folder in answer["folders"]}
        assert modes == {str(project): "index", str(other): "diagnostics"}
        modules = files_of(answer)
        assert set(modules) == {"bad", "clean", "models", "models.net", "train"}
        assert modules["train"]["findings"] == ["TW901"]  # other/'s pyproject ignores TW900
        assert modules["bad"]["analysed"] is False
        items = await workspace_pull(editor)
        assert set(items) == {uri_of(other / "train.py")}


def test_the_setting_is_validated():
    settings, errors = settings_from_wire({"workspaceScan": "everything"})
    assert settings.workspace_scan == "off" and "'workspaceScan'" in errors[0]
    assert settings_from_wire({"workspaceScan": "diagnostics"})[0].workspace_scan == "diagnostics"


def test_module_names_follow_packages_else_the_folder(tmp_path):
    (tmp_path / "src" / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "tools").mkdir()
    root, packages = str(tmp_path), {}
    assert (
        module_name(str(tmp_path / "src" / "pkg" / "sub" / "mod.py"), root, packages)
        == "pkg.sub.mod"
    )
    assert module_name(str(tmp_path / "src" / "pkg" / "__init__.py"), root, packages) == "pkg"
    assert module_name(str(tmp_path / "tools" / "prepare.py"), root, packages) == "tools.prepare"
    assert module_name(str(tmp_path / "train.py"), root, packages) == "train"
