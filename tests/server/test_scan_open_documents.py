"""The workspace scan never replaces an open document's diagnostics with the file on disk's.

The real server (stand-in rules: TW900 ``print``, TW901 ``breakpoint``) scans a folder
whose name has characters a client may or may not percent-encode (``+``, ``@``; both
spellings are valid RFC 3986 URIs for the same file). A document is opened with an
unsaved edit whose findings differ from the file on disk, then the scan runs again (a
settings change, a watched-file event for the file itself): the diagnostics shown for
that file stay the buffer's, pushed or pulled.

Also: the scan's reader does not swallow an internal exception under the engine's
strict mode (``$TORCHWARD_STRICT``, set by the test suite); users get a problem instead.
"""

from __future__ import annotations

import asyncio

import pytest
from harness import TIMEOUT_S, session, uri_of
from lsprotocol import types
from test_workspace_scan import eventually, index, watched, workspace_pull

ON_DISK = "def f():\n    print(1)\n    breakpoint()\n"  # TW900 and TW901
IN_BUFFER = "def f():\n    breakpoint()\n"  # TW901 only, unsaved


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "c++@work"
    root.mkdir()
    (root / "train.py").write_text(ON_DISK)
    (root / "other.py").write_text(ON_DISK)
    return root


def spellings(project):
    canonical = uri_of(project / "train.py")  # percent-encoded: file:///...c%2B%2B%40work/...
    plain = "file://" + str(project / "train.py")  # the same file, + and @ left as they are
    assert canonical != plain
    return [canonical, plain]


async def rescan(editor, project) -> None:
    """Run the scan again: a settings change, then the file changes on disk under the
    unsaved buffer (a checkout, another program) and its watch event arrives."""
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchward": {"workspaceScan": "diagnostics"}})
    )
    await index(editor)
    (project / "train.py").write_text(ON_DISK + "print(2)\n")
    watched(editor, project / "train.py", types.FileChangeType.Changed)
    await index(editor)
    await asyncio.sleep(0.3)  # anything the scan would push has been sent


@pytest.mark.asyncio
@pytest.mark.parametrize("spelling", [0, 1], ids=["canonical-uri", "plain-uri"])
async def test_a_pushed_open_document_keeps_its_buffer_diagnostics(project, spelling):
    uri = spellings(project)[spelling]
    async with session(
        "vscode-1.65", folders=[project], options={"workspaceScan": "diagnostics"}
    ) as editor:
        published = editor.client.published
        other = uri_of(project / "other.py")
        assert await eventually(lambda: other in published)  # the first scan has reported
        editor.open(uri, IN_BUFFER)
        assert [d.code for d in await editor.diagnostics(uri)] == ["TW901"]
        sent: list[tuple[str, list]] = []

        class Recording(dict):
            def __setitem__(self, key, value):
                sent.append((key, [d.code for d in value.diagnostics]))
                super().__setitem__(key, value)

        editor.client.published = Recording(published)
        await rescan(editor, project)
        for key in spellings(project):  # whichever spelling: the same file in the editor
            assert all(codes == ["TW901"] for k, codes in sent if k == key), sent
        assert editor.client.published[uri].version == 1
        # closed: the file on disk is shown, and nothing of the buffer's is left behind
        editor.close(uri)
        canonical = spellings(project)[0]
        shown = editor.client.published
        on_disk = ["TW900", "TW900", "TW901"]
        assert await eventually(
            lambda: (
                canonical in shown
                and sorted(d.code for d in shown[canonical].diagnostics) == on_disk
            )
        )
        if uri != canonical:
            assert list(shown[uri].diagnostics) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("spelling", [0, 1], ids=["canonical-uri", "plain-uri"])
async def test_a_pulled_open_document_is_not_reported_from_disk(project, spelling):
    uri = spellings(project)[spelling]
    async with session(
        "vscode-1.96", folders=[project], options={"workspaceScan": "diagnostics"}
    ) as editor:
        await index(editor)
        editor.open(uri, IN_BUFFER)
        assert [d.code for d in await editor.diagnostics(uri)] == ["TW901"]
        await rescan(editor, project)
        items = await asyncio.wait_for(workspace_pull(editor), TIMEOUT_S)
        for key in spellings(project):
            if key in items and key != uri:
                pytest.fail(f"the file on disk was reported for the open {uri} as {key}")
        assert [d.code for d in items[uri].items] == ["TW901"] and items[uri].version == 1
        assert [d.code for d in await editor.diagnostics(uri)] == ["TW901"]


def _read_with_a_crashing_engine(tmp_path, monkeypatch):
    import torchward.analysis
    from torchward.analysis import LintSettings
    from torchward.server.encoding import ColumnCodec
    from torchward.server.scan import read_file

    def crash(*args, **kwargs):
        raise RuntimeError("injected engine bug")

    monkeypatch.setattr(torchward.analysis, "analyze_source", crash)
    path = tmp_path / "train.py"
    path.write_text(ON_DISK)
    return read_file(str(path), uri_of(path), "train", LintSettings(), ColumnCodec("utf-16"), None)


def test_an_exception_in_the_scans_analysis_is_raised_in_strict_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHWARD_STRICT", "1")
    with pytest.raises(RuntimeError, match="injected engine bug"):
        _read_with_a_crashing_engine(tmp_path, monkeypatch)


def test_users_get_an_internal_error_problem_instead(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHWARD_STRICT", "0")
    entry = _read_with_a_crashing_engine(tmp_path, monkeypatch)
    assert [p.kind for p in entry.report.problems] == ["internal-error"]
    assert "injected engine bug" in entry.report.problems[0].message
