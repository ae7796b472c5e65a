"""A hint reaches the editor as ``DiagnosticSeverity.Hint`` (issue 28).

VS Code draws a Hint as faint dots under the code and leaves it out of the Problems
count, which is what a hint is for: right, but rarely worth acting on. The hint here is
the user's own choice (a severity override in the client's settings); the rules'
own hints travel the same mapping.
"""

from __future__ import annotations

import asyncio

import pytest
from harness import session
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


def _published(editor) -> dict:
    published = editor.client.published.get(URI)
    return {d.code: d.severity for d in published.diagnostics} if published else {}


async def test_a_finding_overridden_to_hint_is_published_as_a_hint_diagnostic():
    configuration = {"": {"severity": {"TW900": "hint"}}}
    async with session("vscode-1.65", configuration=configuration) as editor:
        editor.open(URI, SCRIPT)
        # the client's settings arrive after the first publish: wait for the one they shape
        for _ in range(500):
            if _published(editor).get("TW900") == types.DiagnosticSeverity.Hint:
                break
            await asyncio.sleep(0.01)
        severities = _published(editor)
    assert severities["TW900"] == types.DiagnosticSeverity.Hint
    assert severities["TW901"] == types.DiagnosticSeverity.Error  # the others are untouched
