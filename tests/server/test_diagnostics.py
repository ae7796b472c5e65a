"""Diagnostics end to end: what the editor shows after open and after edits."""

from __future__ import annotations

import asyncio

import pytest
from harness import ALL_CLIENTS, PULL_CLIENTS, PUSH_CLIENTS, fresh_uri, session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = """\
def train(model, loader):
    for x in loader:
        print(x)
        breakpoint()
        input()
"""
URI = "file:///work/project/train.py"


@pytest.mark.parametrize("client", ALL_CLIENTS)
async def test_open_reports_each_finding_with_code_source_severity_and_docs_link(client, editors):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    diagnostics = await editor.diagnostics(uri)
    by_code = {d.code: d for d in diagnostics}
    assert set(by_code) == {"TW900", "TW901", "TW902"}
    assert by_code["TW900"].severity == types.DiagnosticSeverity.Warning
    assert by_code["TW901"].severity == types.DiagnosticSeverity.Error
    assert by_code["TW902"].severity == types.DiagnosticSeverity.Information
    assert all(d.source == "torchward" for d in diagnostics)
    assert by_code["TW900"].code_description is None  # the project publishes no rule pages
    assert by_code["TW900"].range == types.Range(types.Position(2, 8), types.Position(2, 13))


async def test_evidence_becomes_related_information_and_the_finding_travels_in_data(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.96")
    editor.open(uri, SCRIPT)
    diagnostics = await editor.diagnostics(uri)
    breakpoint_ = next(d for d in diagnostics if d.code == "TW901")
    (related,) = breakpoint_.related_information
    assert related.location.uri == uri
    assert related.location.range.start == types.Position(0, 0)
    assert related.message
    print_ = next(d for d in diagnostics if d.code == "TW900")
    # an open document's diagnostics carry the finding by key (issue 11: ~1 KB less per
    # diagnostic on each keystroke); the server looks it up for code actions
    assert print_.data["finding"].startswith("TW900#")
    assert print_.data["version"] == 1
    actions = await editor.code_actions(uri, [print_])
    assert [a.title for a in actions if a.edit is not None and "Suppress" not in a.title]


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.11"])
async def test_columns_on_a_non_ascii_line_are_in_the_negotiated_encoding(client, editors):
    uri = fresh_uri()
    # "é" is one UTF-16 unit but two UTF-8 bytes; "𝛼" is two UTF-16 units, four bytes
    source = 'def f():\n    s = "é𝛼"; print(s)\n'
    editor = await editors(client)
    editor.open(uri, source)
    (diagnostic,) = await editor.diagnostics(uri)
    encoding = editor.result.capabilities.position_encoding
    line = source.splitlines()[1]
    prefix = line[: line.index("print")]
    expected = (
        len(prefix.encode("utf-16-le")) // 2
        if encoding in (None, "utf-16")
        else len(prefix.encode("utf-8"))
    )
    assert diagnostic.range.start == types.Position(1, expected)
    assert diagnostic.range.end.character == expected + len("print")
    if client == "neovim-0.11":
        assert encoding == "utf-8" and expected == 18  # code points: 13
    else:
        assert expected == 15


@pytest.mark.parametrize("client", ["vscode-1.65", "vscode-1.96"])
async def test_an_edit_moves_diagnostics_and_fixing_the_code_clears_them(client, editors):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    assert len(await editor.diagnostics(uri)) == 3
    editor.type_text(uri, 0, 0, "import os\n\n")
    diagnostics = await editor.diagnostics(uri)
    assert {d.range.start.line for d in diagnostics} == {4, 5, 6}
    editor.replace_all(uri, "def train(model, loader):\n    pass\n")
    assert await editor.diagnostics(uri) == []


@pytest.mark.parametrize("client", PUSH_CLIENTS)
async def test_pushed_diagnostics_carry_the_version_and_closing_clears_them(client, editors):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    await editor.diagnostics(uri)
    assert editor.client.published[uri].version == 1
    editor.close(uri)
    for _ in range(400):
        if not editor.client.published[uri].diagnostics:
            break
        await asyncio.sleep(0.005)
    assert list(editor.client.published[uri].diagnostics) == []


async def test_a_burst_of_edits_publishes_only_for_the_final_version():
    async with session("vscode-1.65", options={"debounceMs": 50}) as editor:
        editor.open(URI, "x = 1\n")
        await editor.diagnostics(URI)
        editor.client.published.clear()
        for _ in range(20):
            editor.type_text(URI, 0, 0, "#")
        diagnostics = await editor.diagnostics(URI)
        await asyncio.sleep(0.1)
        assert editor.client.published[URI].version == 21
        assert diagnostics == []


@pytest.mark.parametrize("client", PULL_CLIENTS)
async def test_pull_returns_an_unchanged_report_for_a_known_result_id(client, editors):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    identifier = types.TextDocumentIdentifier(uri)
    first = await editor.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(identifier)
    )
    again = await editor.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(identifier, previous_result_id=first.result_id)
    )
    assert first.kind == "full" and len(first.items) == 3
    assert again.kind == "unchanged" and again.result_id == first.result_id
    assert editor.client.published == {}  # a pulling client is never pushed to


async def test_workspace_pull_reports_every_open_document(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.96")
    editor.open(uri, SCRIPT)
    clean = fresh_uri("clean")
    editor.open(clean, "x = 1\n")
    report = await editor.client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    items = [item for item in report.items if item.uri in (uri, clean)]
    assert {item.uri: len(item.items) for item in items} == {uri: 3, clean: 0}
    assert all(item.version == 1 for item in items)


@pytest.mark.parametrize(
    "text",
    ["", "\n\n\n", "x = '\x00\x01\x02'\x00\n", "\ufeffprint(1)\r\nprint(2)\rprint(3)\n"],
    ids=["empty", "blank", "binary", "bom-and-mixed-line-ends"],
)
async def test_odd_documents_are_answered_without_harm(text, editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.65")
    editor.open(uri, text)
    diagnostics = await editor.diagnostics(uri)
    editor.type_text(uri, 0, 0, "y = 2\n")
    await editor.diagnostics(uri)
    if "\x00" in text:
        (note,) = diagnostics
        assert note.severity == types.DiagnosticSeverity.Information and "binary" in note.message
    elif "print" in text:
        assert [d.range.start.line for d in diagnostics] == [0, 1, 2]
    else:
        assert diagnostics == []


async def test_a_50000_line_document_is_analysed(editors):
    uri = fresh_uri()
    body = "".join(f"value_{i} = {i}\n" for i in range(50_000)) + "print(value_1)\n"
    editor = await editors("vscode-1.65")
    editor.open(uri, body)
    diagnostics = await editor.diagnostics(uri)
    (diagnostic,) = [d for d in diagnostics if d.code]  # and the on-save notice (onsave.py)
    assert diagnostic.range.start.line == 50_000
