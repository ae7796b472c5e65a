"""The script changes that apply a chosen plan's remedies (server/plan_edits.py): each
offered only where the script has a place for it, and only until it is applied."""

from __future__ import annotations

from torchward.analysis.fixes.edits import apply_edits
from torchward.server.plan_edits import remedy_edits

HF = """\
from transformers import TrainingArguments

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=16,
)
"""

LOOP = """\
import torch
from transformers import AutoModelForCausalLM


def main():
    model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
"""


def _applied(source: str, changes: dict, read: dict) -> dict[str, str]:
    return {r.title: apply_edits(source, r.edits) for r in remedy_edits(source, changes, read)}


def test_training_arguments_take_each_remedy_as_a_keyword():
    changes = {
        "checkpointing": True,
        "dtype": "amp-bf16",
        "optimizer": "adamw-8bit",
        "batch_size": 4,
        "accumulation": 4,
    }
    found = _applied(HF, changes, {"batch_size": 16, "dtype": "fp32", "optimizer": "adamw"})
    assert set(found) == {
        "gradient checkpointing",
        "mixed precision (amp-bf16)",
        "8-bit AdamW",
        "micro-batch 4 × accumulation 4",
    }
    assert found["gradient checkpointing"] == HF.replace(
        "=16,\n", "=16,\n    gradient_checkpointing=True,\n"
    )
    assert "    bf16=True,\n    fp16=False,\n)" in found["mixed precision (amp-bf16)"]
    assert '    optim="adamw_bnb_8bit",\n)' in found["8-bit AdamW"]
    batch = found["micro-batch 4 × accumulation 4"]
    assert "per_device_train_batch_size=4,\n    gradient_accumulation_steps=4,\n)" in batch


def test_an_existing_keyword_is_changed_in_place():
    source = 'args = TrainingArguments(output_dir="o", gradient_checkpointing=False)\n'
    found = _applied(source, {"checkpointing": True}, {"checkpointing": False})
    assert found == {"gradient checkpointing": source.replace("False", "True")}


def test_a_plain_loop_takes_checkpointing_and_8bit_adamw_as_statements():
    found = _applied(LOOP, {"checkpointing": True, "optimizer": "adamw-8bit"}, {})
    assert found["gradient checkpointing"] == LOOP.replace(
        ".cuda()\n", ".cuda()\n    model.gradient_checkpointing_enable()\n"
    )
    adam = found["8-bit AdamW"]
    assert "bitsandbytes.optim.AdamW8bit(model.parameters(), lr=3e-4)" in adam
    assert adam.startswith(
        "import torch\nfrom transformers import AutoModelForCausalLM\nimport bitsandbytes\n"
    )


def test_applied_remedies_and_unchanged_values_are_not_offered():
    changes = {"checkpointing": True, "optimizer": "adamw-8bit"}
    once = _applied(LOOP, changes, {})
    for text in once.values():
        assert set(_applied(text, changes, {})) == set(once) - {
            t for t, v in once.items() if v == text
        }
    # the plan keeps what the script already runs: nothing to change
    same = {"batch_size": 16, "accumulation": 1, "dtype": "amp-bf16"}
    assert _applied(HF, same, {"batch_size": 16, "dtype": "amp-bf16"}) == {}


def test_launch_changes_and_unparsable_scripts_get_no_edit():
    launch = {"gpus": 8, "sharding": "fsdp", "tensor_parallel": 2, "lora_rank": 16}
    assert _applied(HF, launch, {}) == {}
    assert remedy_edits("def broken(:\n", {"checkpointing": True}, {}) == []
