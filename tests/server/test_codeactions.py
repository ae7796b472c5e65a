"""Code actions: quick fixes from the finding's own edits, suppression, explain, fix-all."""

from __future__ import annotations

import pytest
from harness import ALL_CLIENTS, fresh_uri
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = """\
def train(model, loader):
    for x in loader:
        print(x)
        breakpoint()
"""
URI = "file:///work/project/train.py"


def _by_code(diagnostics, code):
    return next(d for d in diagnostics if d.code == code)


@pytest.mark.parametrize("client", ALL_CLIENTS)
async def test_open_then_quick_fix_then_apply_clears_the_diagnostic(client, editors):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    diagnostic = _by_code(await editor.diagnostics(uri), "TW900")
    actions = await editor.code_actions(uri, [diagnostic])
    fix = next(a for a in actions if a.title == "Replace print with log")
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    editor.apply(fix.edit)
    assert "log(x)" in editor.texts[uri]
    remaining = await editor.diagnostics(uri)
    assert [d.code for d in remaining] == ["TW901"]


async def test_unsafe_fixes_are_labelled_and_never_preferred(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.96")
    editor.open(uri, SCRIPT)
    diagnostic = _by_code(await editor.diagnostics(uri), "TW900")
    actions = await editor.code_actions(uri, [diagnostic])
    actions = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    titles = [a.title for a in actions]
    assert titles == [
        "Replace print with log",
        "Drop the printed values (unsafe)",
        "Suppress TW900 on this line",
        "Explain TW900",
    ]
    unsafe = actions[1]
    assert not unsafe.is_preferred


@pytest.mark.parametrize("client", ["vscode-1.65", "neovim-0.11"])
async def test_suppressing_a_rule_on_its_line_clears_the_diagnostic(client, editors):
    uri = fresh_uri()
    editor = await editors(client)
    editor.open(uri, SCRIPT)
    diagnostic = _by_code(await editor.diagnostics(uri), "TW901")
    actions = await editor.code_actions(uri, [diagnostic])
    suppress = next(a for a in actions if a.title == "Suppress TW901 on this line")
    editor.apply(suppress.edit)
    assert editor.texts[uri].splitlines()[3] == "        breakpoint()  # torchward: ignore[TW901]"
    assert [d.code for d in await editor.diagnostics(uri)] == ["TW900"]


async def test_suppression_merges_into_an_existing_ignore_comment(editors):
    uri = fresh_uri()
    source = "def f():\n    print(1); breakpoint()  # torchward: ignore[TW901]\n"
    editor = await editors("vscode-1.96")
    editor.open(uri, source)
    diagnostic = _by_code(await editor.diagnostics(uri), "TW900")
    actions = await editor.code_actions(uri, [diagnostic])
    suppress = next(a for a in actions if a.title.startswith("Suppress"))
    editor.apply(suppress.edit)
    assert editor.texts[uri].splitlines()[1].endswith("# torchward: ignore[TW901, TW900]")
    assert await editor.diagnostics(uri) == []


async def test_explain_runs_a_command_that_returns_the_rule_documentation(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.96")
    editor.open(uri, SCRIPT)
    diagnostic = _by_code(await editor.diagnostics(uri), "TW901")
    actions = await editor.code_actions(uri, [diagnostic])
    explain = next(a for a in actions if a.title == "Explain TW901")
    answer = await editor.command(explain.command.command, *explain.command.arguments)
    unknown = await editor.command("torchward.explain", "TW999")
    assert answer["code"] == "TW901" and answer["markdown"].startswith("# TW901 breakpoint-call")
    assert answer["url"] is None  # no published rule pages: shown in the editor instead
    assert unknown["markdown"] is None and "TW999" in unknown["error"]


@pytest.mark.parametrize(
    "client", ["vscode-1.96", "vscode-1.65"]
)  # resolved lazily / built at once
async def test_fix_all_applies_safe_fixes_only(client, editors):
    uri = fresh_uri()
    source = "def f():\n    print(1)\n    print(2)\n    breakpoint()\n"
    editor = await editors(client)
    editor.open(uri, source)
    await editor.diagnostics(uri)
    actions = await editor.code_actions(uri, [], only=["source.fixAll.torchward"])
    (fix_all,) = actions
    assert fix_all.kind == "source.fixAll.torchward"
    editor.apply((await editor.resolved(fix_all)).edit)
    assert editor.texts[uri] == "def f():\n    log(1)\n    log(2)\n    breakpoint()\n"
    assert [d.code for d in await editor.diagnostics(uri)] == ["TW901"]


async def test_a_quick_fix_is_not_offered_for_a_diagnostic_from_an_older_version(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.65")
    editor.open(uri, SCRIPT)
    stale = _by_code(await editor.diagnostics(uri), "TW900")
    editor.type_text(uri, 0, 0, "\n")
    await editor.diagnostics(uri)
    actions = await editor.code_actions(uri, [stale], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == ["Suppress TW900 on this line", "Explain TW900"]


async def test_only_filters_the_kinds_returned(editors):
    uri = fresh_uri()
    editor = await editors("vscode-1.96")
    editor.open(uri, SCRIPT)
    diagnostics = await editor.diagnostics(uri)
    quick = await editor.code_actions(uri, diagnostics, only=[types.CodeActionKind.QuickFix])
    source = await editor.code_actions(uri, diagnostics, only=[types.CodeActionKind.Source])
    assert all(a.kind == types.CodeActionKind.QuickFix for a in quick)
    assert [a.kind for a in source] == ["source.fixAll.torchward"]
