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

A Trainer also calls back: a ``TrainerCallback``'s ``on_step_end`` (and the other
per-step methods of the table's ``[callbacks]``) runs once per optimizer step, inside the
Trainer's loop, with the model passed as ``model=``. A class is a callback by its base, or
by use: an instance (or the class) handed to ``trainer.add_callback`` or to
``Trainer(callbacks=[...])``. Its per-step methods run inside a loop standing for the
Trainer's, which steps the optimizer on every pass (tagged ``"transformers"``, so the
Trainer's own zeroing is never asked of the callback): a ``torch.cuda.synchronize()``
there waits on every training step.
"""

from __future__ import annotations

import ast

from ..facts.values import Kind, Value
from ..syntax.names import dotted, qualified_name
from . import Adapter, HookPlan
from .table import current

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


def is_callback_class(index, class_name: str) -> bool:
    """Derived from a callback class of the table, or handed to a trainer as a callback
    (itself or a local subclass that inherits the method)."""
    callbacks = current().callbacks
    return bool(index.all_bases(class_name) & callbacks.classes) or any(
        class_name in {ancestor.name for ancestor in index.lineage(registered)}
        for registered in registered_callbacks(index)
    )


def registered_callbacks(index) -> set[str]:
    """Local classes the module hands to a trainer as callbacks: ``x.add_callback(Cb())``
    or ``x.add_callback(Cb)`` (a registering method of the table), or
    ``Trainer(..., callbacks=[Cb(), ...])`` on a trainer class of the table."""
    callbacks = current().callbacks
    found: set[str] = set()
    for node in ast.walk(index.tree):
        if not isinstance(node, ast.Call):
            continue
        handed: list[ast.expr] = []
        if isinstance(node.func, ast.Attribute) and node.func.attr in callbacks.register:
            handed = node.args[:1]
        elif _builds_a_trainer(index, node.func):
            for keyword in node.keywords:
                if keyword.arg in callbacks.keywords and isinstance(
                    keyword.value, (ast.List, ast.Tuple)
                ):
                    handed = keyword.value.elts
        for item in handed:
            name = dotted(item.func if isinstance(item, ast.Call) else item)
            if name is not None and name in index.classes:
                found.add(name)
    return found


def _builds_a_trainer(index, func: ast.expr) -> bool:
    name = qualified_name(func, index.imports)
    if name is not None:
        return current().is_trainer(name)
    local = dotted(func)
    return local is not None and local in index.classes and is_trainer_class(index, local)


class TrainerAdapter(Adapter):
    def hook(self, index, info):
        name = info.node.name
        table = current()
        if name in table.callbacks.per_step and is_callback_class(index, info.class_name):
            return HookPlan(
                FRAMEWORK,
                backward_returned=False,
                steps=True,  # the Trainer steps on every pass of the loop they run in
                model_parameter=table.callbacks.model,
            )
        if name not in table.trainer_hooks or not is_trainer_class(index, info.class_name):
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
