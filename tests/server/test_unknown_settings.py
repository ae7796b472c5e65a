"""Editor settings naming an unknown rule code or GPU: a warning with a suggestion.

Through the real server: the client's ``torchward`` section names ``TW999`` and a GPU
that does not exist; the server shows one ``window/showMessage`` warning per bad key
(naming the closest known value), keeps analysing with the defaults for those keys,
and applies the valid keys.
"""

from __future__ import annotations

import asyncio

import pytest
from harness import REAL_SERVER, fresh_uri, session
from lsprotocol import types

pytestmark = pytest.mark.asyncio

SCRIPT = "import torch\n\ndef f(model, x):\n    return model(x)\n"


async def _eventually(predicate, timeout_s=10.0):
    for _ in range(int(timeout_s / 0.01)):
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


async def test_unknown_codes_and_gpus_in_editor_settings_are_warned_about():
    options = {"select": ["TW999"], "targetGpu": "potato-9000", "ignore": ["TW0O1"]}
    async with session("vscode-1.96", server=REAL_SERVER, options=options) as editor:
        uri = fresh_uri()
        editor.open(uri, SCRIPT)
        await editor.diagnostics(uri)
        assert await _eventually(lambda: len(editor.client.messages) >= 3)
        messages = [m.message for m in editor.client.messages]
    assert all(m.type == types.MessageType.Warning for m in editor.client.messages)
    select = next(m for m in messages if "'select'" in m)
    assert "unknown rule code or prefix 'TW999'" in select and "did you mean" in select
    assert any("'ignore'" in m and "TW0O1" in m for m in messages)
    gpu = next(m for m in messages if "'targetGpu'" in m)
    assert "unknown GPU or instance 'potato-9000'" in gpu
