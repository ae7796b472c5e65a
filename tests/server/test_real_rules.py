"""The real engine and fixers behind the real entry point (``python -m torchward.server``).

Skipped while the engine has no TW001; independent of its exact messages and spans.
"""

from __future__ import annotations

import pytest
from harness import REAL_SERVER, session
from torchward.analysis import rule_by_code

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(rule_by_code("TW001") is None, reason="TW001 is not implemented yet"),
]

TRAINING = """\
import torch
def train(model, loader, optimizer):
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        losses.append(loss)
        loss.backward()
"""
URI = "file:///work/project/train.py"


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
async def test_a_retained_graph_is_flagged_explained_and_fixed_or_suppressed(client):
    async with session(client, server=REAL_SERVER) as editor:
        editor.open(URI, TRAINING)
        diagnostics = [d for d in await editor.diagnostics(URI) if d.code == "TW001"]
        assert diagnostics, "TW001 should flag the list of losses"
        diagnostic = diagnostics[0]
        assert diagnostic.related_information, "the evidence chain travels as related information"
        hover = await editor.hover(URI, diagnostic.range.start)
        assert "TW001" in hover.contents.value
        actions = await editor.code_actions(URI, [diagnostic])
        fixes = [a for a in actions if a.edit is not None and not a.title.startswith("Suppress")]
        assert fixes, "the fix is built on demand from the finding in the diagnostic's data"
        assert fixes[0].is_preferred
        editor.apply(fixes[0].edit)
        assert "losses.append(loss.detach())" in editor.texts[URI]
        assert not [d for d in await editor.diagnostics(URI) if d.code == "TW001"]


LLAMA_ON_A_SMALL_CARD = """\
from transformers import AutoModelForCausalLM, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments("out", per_device_train_batch_size=8, max_seq_length=2048, bf16=True)
"""


async def test_projected_oom_follows_the_target_gpu_the_editor_sets():
    # TW010 judges against the editor's targetGpu (and torchward.selectGpu), not only pyproject
    async with session("vscode-1.96", server=REAL_SERVER, options={"targetGpu": "t4"}) as editor:
        editor.open(URI, LLAMA_ON_A_SMALL_CARD)
        assert any(d.code == "TW010" for d in await editor.diagnostics(URI))
    async with session("vscode-1.96", server=REAL_SERVER) as editor:
        editor.open(URI, LLAMA_ON_A_SMALL_CARD)
        assert not any(d.code == "TW010" for d in await editor.diagnostics(URI))
