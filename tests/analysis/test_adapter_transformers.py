"""Hugging Face Trainer adapter (analysis/effects/transformers.py), trl trainers included.

Snippets follow the Trainer documentation's customisation pattern — subclass ``Trainer``
(or ``Seq2SeqTrainer``, or a ``trl`` trainer such as ``SFTTrainer``) and override
``compute_loss(self, model, inputs, return_outputs=False, ...)`` or ``training_step`` —
restated in our words. A line a rule must report ends with ``# expect: TWxxx``.
"""

from __future__ import annotations

from test_trust_classes import assert_exact, assert_quiet, severities
from torchward.analysis import Severity

WEIGHTED_LOSS = """
    import torch
    from torch import nn
    from transformers import Trainer, TrainingArguments

    class WeightedLossTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            logits = outputs.get("logits")
            loss_fct = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
            loss = loss_fct(logits.view(-1, self.model.config.num_labels), labels.view(-1))
            return (loss, outputs) if return_outputs else loss

    args = TrainingArguments(output_dir="out", gradient_accumulation_steps=4)
"""

LOSS_KEPT_ON_THE_TRAINER = """
    from transformers import Seq2SeqTrainer

    class LoggingTrainer(Seq2SeqTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_history = []

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**inputs)
            loss = outputs.loss
            self.loss_history.append(loss)  # expect: TW001
            return (loss, outputs) if return_outputs else loss
"""

LOSS_LOGGED_AS_A_NUMBER = LOSS_KEPT_ON_THE_TRAINER.replace(
    "self.loss_history.append(loss)  # expect: TW001", "self.loss_history.append(loss.item())"
)

TRL_SUBCLASS = """
    import torch.nn.functional as F
    from trl import SFTTrainer

    class DistillTrainer(SFTTrainer):
        def __init__(self, *args, teacher=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.teacher = teacher
            self.kl_terms = []

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**inputs)
            kl = F.kl_div(outputs.logits.log_softmax(-1), inputs["teacher_probs"], reduction="batchmean")
            self.kl_terms.append(kl)  # expect: TW001
            loss = outputs.loss + kl
            return (loss, outputs) if return_outputs else loss
"""

# an overridden training_step runs its own backward through the Trainer's accelerator;
# the Trainer still steps and zeroes afterwards
CUSTOM_TRAINING_STEP = """
    from transformers import Trainer

    class ClippingTrainer(Trainer):
        def training_step(self, model, inputs, num_items_in_batch=None):
            model.train()
            loss = self.compute_loss(model, inputs)
            self.accelerator.backward(loss)
            return loss.detach() / self.args.gradient_accumulation_steps
"""

CUSTOM_TRAINING_STEP_KEEPING_THE_LOSS = """
    from transformers import Trainer

    class KeepingTrainer(Trainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.kept = []

        def training_step(self, model, inputs, num_items_in_batch=None):
            outputs = model(**inputs)
            loss = outputs.loss
            self.accelerator.backward(loss)
            self.kept.append(loss)  # expect: TW001
            return loss.detach()
"""


def test_a_weighted_compute_loss_as_the_docs_write_it_is_clean():
    for code in ("TW001", "TW003", "TW014", "TW018", "TW019"):
        assert_quiet(WEIGHTED_LOSS, code)


def test_a_loss_kept_on_the_trainer_in_compute_loss_is_a_retained_graph():
    assert_exact(LOSS_KEPT_ON_THE_TRAINER, "TW001")
    # kept before the backward the Trainer runs on the returned loss
    assert severities(LOSS_KEPT_ON_THE_TRAINER, "TW001") == [Severity.ERROR]
    assert_quiet(LOSS_LOGGED_AS_A_NUMBER, "TW001")


def test_a_trl_trainer_subclass_is_a_trainer():
    assert_exact(TRL_SUBCLASS, "TW001")


def test_an_overridden_training_step_leaves_zeroing_and_scaling_to_the_trainer():
    for code in ("TW001", "TW003", "TW014"):
        assert_quiet(CUSTOM_TRAINING_STEP, code)


def test_a_loss_kept_after_the_accelerator_backward_in_training_step_is_reported():
    assert_exact(CUSTOM_TRAINING_STEP_KEEPING_THE_LOSS, "TW001")
    assert severities(CUSTOM_TRAINING_STEP_KEEPING_THE_LOSS, "TW001") == [Severity.WARNING]
