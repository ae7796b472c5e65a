"""The editor's ``torchward.useCache`` setting reaches the estimate, as ``--use-cache`` does.

An LM forward returns its KV cache unless the call or the config says ``use_cache=False``
(issue 27): the setting ("auto", true, false) is laid over the script's and the project's
choice, and the peak the code lens and the ``torchward/estimate`` request show changes with it.
"""

from __future__ import annotations

import pytest
from harness import fresh_uri, session
from lsprotocol import types
from test_hover_and_estimates import _fits_for, _plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

INFER = """\
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2").cuda().eval()


def main(loader):
    with torch.no_grad():
        for batch in loader:
            logits = model(batch.cuda()).logits
"""


async def _shown(use_cache) -> tuple[int, list[str]]:
    """The estimate's peak and the code lenses' titles under ``useCache = use_cache``."""
    options = {"targetGpu": "A100 80GB", "useCache": use_cache}
    async with session("vscode-1.96", options=options) as editor:
        uri = fresh_uri()
        editor.open(uri, INFER)
        await editor.diagnostics(uri)
        await _fits_for(editor, uri, 1)
        answer = _plain(
            await editor.client.protocol.send_request_async("torchward/estimate", {"uri": uri})
        )
        lenses = await editor.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri))
        )
        messages = [m.message for m in editor.client.messages]
    assert not any("useCache" in m for m in messages), messages
    assert answer["status"] == "ok"
    return answer["peak"], [lens.command.title for lens in lenses or []]


async def test_use_cache_false_drops_the_kv_cache_from_the_peak_and_true_matches_auto():
    auto, auto_lenses = await _shown("auto")
    off, off_lenses = await _shown(False)
    on, _ = await _shown("true")
    assert off < auto  # the returned KV cache is gone
    assert on == auto  # gpt2's config keeps the cache: "auto" already counts it
    assert auto_lenses and off_lenses != auto_lenses


async def test_an_invalid_use_cache_value_is_reported_and_auto_applies():
    async with session("vscode-1.96", options={"useCache": "sometimes"}) as editor:
        uri = fresh_uri()
        editor.open(uri, INFER)
        await editor.diagnostics(uri)
        messages = [m.message for m in editor.client.messages]
    assert any("useCache" in m and '"auto"' in m for m in messages), messages
