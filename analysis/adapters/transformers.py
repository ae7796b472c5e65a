"""Hugging Face ``Trainer`` subclasses (``Seq2SeqTrainer`` and the ``trl`` trainers too).

A ``Trainer`` runs the loop: per batch it calls ``training_step(model, inputs)``, which
calls ``compute_loss(model, inputs)``, runs backward through its accelerator (divided by
``TrainingArguments(gradient_accumulation_steps=...)``), then at accumulation boundaries
steps the optimizer and the scheduler and zeroes the gradients. Users override
``compute_loss`` (a custom loss) or ``training_step`` (a custom backward): those bodies
are analysed inside a loop standing for the Trainer's (:mod:`.driver`), with the events
the Trainer adds tagged ``"transformers"``. A loss kept on ``self`` in ``compute_loss``
therefore outlives the iteration like any other store, while the Trainer's own zeroing
and scaling are never asked of the user's code.

``self.accelerator``, ``self.model``, ``self.optimizer`` and ``self.lr_scheduler`` are set
by ``Trainer.__init__``, which the file cannot show; the plan supplies them.
"""

from __future__ import annotations

from ..values import Kind, Value
from . import Adapter, HookPlan
from .effects import current

FRAMEWORK = "transformers"
_SELF_ATTRIBUTES = (
    ("accelerator", Value(kind=Kind.ACCELERATOR)),
    ("lr_scheduler", Value(kind=Kind.SCHEDULER)),
    ("model", Value(kind=Kind.MODEL)),
    ("optimizer", Value(kind=Kind.OPTIMIZER)),
)


def is_trainer_class(index, class_name: str) -> bool:
    """Derived (through local bases too) from a trainer class of the library-effects
    table (``transformers.Trainer``, trl's trainers)."""
    table = current()
    return any(table.is_trainer(base) for base in index.all_bases(class_name))


class TrainerAdapter(Adapter):
    def hook(self, index, info):
        name = info.node.name
        if name not in ("compute_loss", "training_step") or not is_trainer_class(
            index, info.class_name
        ):
            return None
        return HookPlan(
            FRAMEWORK,
            # the Trainer backpropagates what compute_loss returns; an overridden
            # training_step runs its own backward
            backward_returned=name == "compute_loss",
            steps=True,
            model_parameter="model",
            self_attributes=_SELF_ATTRIBUTES,
        )


ADAPTER = TrainerAdapter()
