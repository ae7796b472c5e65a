"""Choosing a plan in the editor offers its remedies as code actions where one change of the
script applies them: the real server, estimator and planner, over the protocol."""

from __future__ import annotations

import asyncio

import pytest
from harness import fresh_uri, session
from lsprotocol import types

pytestmark = pytest.mark.asyncio

# full fine-tuning of GPT-2 large in fp32 with batch 16: no single GPU of the price table
# runs it as written, so every plan adds remedies, and the script's TrainingArguments call
# is where they go
TRAINER = """\
from datasets import load_dataset
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2-large")
args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=16,
    num_train_epochs=1,
)
trainer = Trainer(model=model, args=args, train_dataset=load_dataset("imdb")["train"])
trainer.train()
"""
KIND = "refactor.rewrite.torchward.plan"


def _plain(value):
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


async def _estimated(editor, uri: str) -> None:
    await editor.diagnostics(uri)
    for _ in range(500):
        if any(_plain(f)["uri"] == uri for f in editor.client.gpu_fits):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the document was never estimated")


async def _plan_actions(editor, uri: str) -> list[types.CodeAction]:
    found = await editor.code_actions(uri, [])
    return [action for action in found if action.kind == KIND]


async def test_choosing_a_plan_offers_its_remedies_as_code_actions():
    async with session("vscode-1.96", options={"targetGpu": "A100 80GB"}) as editor:
        uri = fresh_uri()
        editor.open(uri, TRAINER)
        await _estimated(editor, uri)
        assert await _plan_actions(editor, uri) == []  # nothing chosen yet
        planned = _plain(await editor.command("torchward.plan", uri))
        assert planned["status"] == "ok"
        # a plan that keeps one GPU and needs checkpointing: its remedies are all code
        wanted = next(
            p
            for p in planned["plans"]
            if p["gpus"] == 1 and "gradient checkpointing" in p["remedies"]
        )
        chosen = _plain(await editor.command("torchward.choosePlan", uri, wanted["rank"]))
        assert chosen["status"] == "ok" and chosen["gpu"] == wanted["instance"]
        assert "torchward plan: apply gradient checkpointing" in chosen["actions"]
        actions = await _plan_actions(editor, uri)
        assert sorted(a.title for a in actions) == sorted(chosen["actions"])
        (checkpointing,) = [a for a in actions if a.title.endswith("gradient checkpointing")]
        editor.apply(checkpointing.edit)
        text = editor.texts[uri]
        assert "    gradient_checkpointing=True,\n)" in text
        assert text.replace("    gradient_checkpointing=True,\n", "") == TRAINER
        # applied: no longer offered; the other remedies still are
        after = await _plan_actions(editor, uri)
        assert [a.title for a in after] == [a.title for a in actions if a is not checkpointing]
        # the document is estimated again with the remedy: a plan of it needs no checkpointing
        await _estimated(editor, uri)


async def test_a_plan_without_code_changes_offers_none():
    # a plain loop at the batch size it runs: plans only change the GPU (and the launch)
    script = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM


def main(dataset):
    model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(dataset, batch_size=2)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
"""
    async with session("vscode-1.96", options={"targetGpu": "A100 80GB"}) as editor:
        uri = fresh_uri()
        editor.open(uri, script)
        await _estimated(editor, uri)
        planned = _plain(await editor.command("torchward.plan", uri))
        first = planned["plans"][0]
        assert first["remedies"] == []
        chosen = _plain(await editor.command("torchward.choosePlan", uri, 1))
        assert chosen["status"] == "ok" and chosen["actions"] == []
        assert await _plan_actions(editor, uri) == []
