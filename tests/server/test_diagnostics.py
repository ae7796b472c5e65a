"""Diagnostics end to end: what the editor shows after open and after edits."""

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
        input()
"""
URI = "file:///work/project/train.py"


@pytest.mark.parametrize("client", ALL_CLIENTS)
async def test_open_reports_each_finding_with_code_source_severity_and_docs_link(client):
    async with session(client) as editor:
        editor.open(URI, SCRIPT)
        diagnostics = await editor.diagnostics(URI)
    by_code = {d.code: d for d in diagnostics}
    assert set(by_code) == {"TW900", "TW901", "TW902"}
    assert by_code["TW900"].severity == types.DiagnosticSeverity.Warning
    assert by_code["TW901"].severity == types.DiagnosticSeverity.Error
    assert by_code["TW902"].severity == types.DiagnosticSeverity.Information
    assert all(d.source == "torchward" for d in diagnostics)
    assert by_code["TW900"].code_description.href.endswith("/docs/rules/TW900.md")
    assert by_code["TW900"].range == types.Range(types.Position(2, 8), types.Position(2, 13))
