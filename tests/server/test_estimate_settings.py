"""The editor's estimate honours `[tool.torchward.estimate]`, as `torchward estimate` does."""

from __future__ import annotations

from torchward.server.estimates import estimate_source

from torchward.config import Config

SCRIPT = """\
from transformers import AutoModelForCausalLM, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("gpt2")
args = TrainingArguments("out", per_device_train_batch_size=4, max_seq_length=512, fp16=True)
"""


def test_project_overrides_change_the_editor_estimate():
    plain = estimate_source(SCRIPT, "train.py", "a100-80gb")
    project = Config(estimate=(("batch_size", 32),)).estimator_settings()
    overridden = estimate_source(SCRIPT, "train.py", "a100-80gb", project)
    assert overridden.peak > plain.peak * 1.5  # activations scale with the batch
