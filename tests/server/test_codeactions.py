"""Code actions: quick fixes from the finding's own edits, suppression, explain, fix-all."""

from __future__ import annotations

import pytest
from lsprotocol import types

from harness import ALL_CLIENTS, session

pytestmark = pytest.mark.asyncio

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
async def test_open_then_quick_fix_then_apply_clears_the_diagnostic(client):
    async with session(client) as editor:
        editor.open(URI, SCRIPT)
        diagnostic = _by_code(await editor.diagnostics(URI), "TW900")
        actions = await editor.code_actions(URI, [diagnostic])
        fix = next(a for a in actions if a.title == "Replace print with log")
        assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
        editor.apply(fix.edit)
        assert "log(x)" in editor.texts[URI]
        remaining = await editor.diagnostics(URI)
    assert [d.code for d in remaining] == ["TW901"]


async def test_unsafe_fixes_are_labelled_and_never_preferred():
    async with session("vscode-1.96") as editor:
        editor.open(URI, SCRIPT)
        diagnostic = _by_code(await editor.diagnostics(URI), "TW900")
        actions = await editor.code_actions(URI, [diagnostic])
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
async def test_suppressing_a_rule_on_its_line_clears_the_diagnostic(client):
    async with session(client) as editor:
        editor.open(URI, SCRIPT)
        diagnostic = _by_code(await editor.diagnostics(URI), "TW901")
        actions = await editor.code_actions(URI, [diagnostic])
        suppress = next(a for a in actions if a.title == "Suppress TW901 on this line")
        editor.apply(suppress.edit)
        assert editor.texts[URI].splitlines()[3] == "        breakpoint()  # torchward: ignore[TW901]"
        assert [d.code for d in await editor.diagnostics(URI)] == ["TW900"]


async def test_suppression_merges_into_an_existing_ignore_comment():
    source = "def f():\n    print(1); breakpoint()  # torchward: ignore[TW901]\n"
    async with session("vscode-1.96") as editor:
        editor.open(URI, source)
        diagnostic = _by_code(await editor.diagnostics(URI), "TW900")
        actions = await editor.code_actions(URI, [diagnostic])
        suppress = next(a for a in actions if a.title.startswith("Suppress"))
        editor.apply(suppress.edit)
        assert editor.texts[URI].splitlines()[1].endswith("# torchward: ignore[TW901, TW900]")
        assert await editor.diagnostics(URI) == []


async def test_explain_runs_a_command_that_returns_the_rule_documentation():
    async with session("vscode-1.96") as editor:
        editor.open(URI, SCRIPT)
        diagnostic = _by_code(await editor.diagnostics(URI), "TW901")
        actions = await editor.code_actions(URI, [diagnostic])
        explain = next(a for a in actions if a.title == "Explain TW901")
        answer = await editor.command(explain.command.command, *explain.command.arguments)
        unknown = await editor.command("torchward.explain", "TW999")
    assert answer["code"] == "TW901" and answer["markdown"].startswith("# TW901 breakpoint-call")
    assert answer["url"].endswith("TW901.md")
    assert unknown["markdown"] is None and "TW999" in unknown["error"]


async def test_fix_all_applies_safe_fixes_only():
    source = "def f():\n    print(1)\n    print(2)\n    breakpoint()\n"
    async with session("vscode-1.96") as editor:
        editor.open(URI, source)
        await editor.diagnostics(URI)
        actions = await editor.code_actions(URI, [], only=["source.fixAll.torchward"])
        (fix_all,) = actions
        assert fix_all.kind == "source.fixAll.torchward"
        editor.apply(fix_all.edit)
        assert editor.texts[URI] == "def f():\n    log(1)\n    log(2)\n    breakpoint()\n"
        assert [d.code for d in await editor.diagnostics(URI)] == ["TW901"]


async def test_a_quick_fix_is_not_offered_for_a_diagnostic_from_an_older_version():
    async with session("vscode-1.65") as editor:
        editor.open(URI, SCRIPT)
        stale = _by_code(await editor.diagnostics(URI), "TW900")
        editor.type_text(URI, 0, 0, "\n")
        await editor.diagnostics(URI)
        actions = await editor.code_actions(URI, [stale], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == ["Suppress TW900 on this line", "Explain TW900"]


async def test_only_filters_the_kinds_returned():
    async with session("vscode-1.96") as editor:
        editor.open(URI, SCRIPT)
        diagnostics = await editor.diagnostics(URI)
        quick = await editor.code_actions(URI, diagnostics, only=[types.CodeActionKind.QuickFix])
        source = await editor.code_actions(URI, diagnostics, only=[types.CodeActionKind.Source])
    assert all(a.kind == types.CodeActionKind.QuickFix for a in quick)
    assert [a.kind for a in source] == ["source.fixAll.torchward"]
