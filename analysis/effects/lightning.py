"""PyTorch Lightning: a ``LightningModule``'s hooks and its ``self`` API as training events.

Lightning's fit loop calls ``training_step(batch, batch_idx)`` once per batch. Under
*automatic optimization* (the default) it then runs backward on the returned loss, steps
the optimizers and zeroes the gradients itself, dividing the loss by
``Trainer(accumulate_grad_batches=N)`` when it accumulates: the events it adds are tagged
``"lightning"``, whose traits (in the library-effects table) say it zeroes and scales. Under *manual optimization*
(``self.automatic_optimization = False``) the step's body does all of it by hand —
``opt = self.optimizers()``, ``self.manual_backward(loss)``, ``opt.step()``,
``opt.zero_grad()`` — and Lightning neither zeroes nor scales, so a forgotten
``zero_grad`` or an accumulation gate without ``loss / N`` is the same bug as in a
hand-written loop (``"lightning.manual"``).

``self.log`` / ``self.log_dict`` detach what they keep (storing a logged value is no
leak), but appending the loss to ``self.training_step_outputs`` keeps one graph per
batch until the epoch ends: the hook runs inside a loop (:mod:`.driver`), so the
retained-graph rule sees that store like any other. ``validation_step``, ``test_step``
and ``predict_step`` run under ``no_grad`` in eval mode (``catalog.LIGHTNING_NO_GRAD_HOOKS``, read by the analyzer),
so nothing they keep carries a graph.
"""

from __future__ import annotations

import ast

from ..facts.values import Kind, Value
from . import Adapter, HookPlan

AUTOMATIC = "lightning"
MANUAL = "lightning.manual"


def is_lightning_module(run, receiver: Value) -> bool:
    """A ``LightningModule`` (``self`` in its hooks, or an instance the file built)."""
    if receiver.kind is not Kind.MODEL:
        return False
    if receiver.model_facts is not None and receiver.model_facts.lightning:
        return True
    return bool(receiver.class_name) and run.analyzer.index.is_lightning_class(receiver.class_name)


def uses_manual_optimization(index, class_name: str, seen: frozenset[str] = frozenset()) -> bool:
    """``self.automatic_optimization = False`` in any method, ``automatic_optimization =
    False`` in the class body, or a property returning False — in the class or a local base."""
    info = index.classes.get(class_name)
    if info is None or class_name in seen:
        return False
    for node in ast.walk(info.node):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if (
                any(_names_the_switch(t) for t in targets)
                and isinstance(node.value, ast.Constant)
                and node.value.value is False
            ):
                return True
        elif (
            isinstance(node, ast.FunctionDef)
            and node.name == "automatic_optimization"
            and any(
                isinstance(r, ast.Return)
                and isinstance(r.value, ast.Constant)
                and r.value.value is False
                for r in ast.walk(node)
            )
        ):
            return True
    return any(
        uses_manual_optimization(index, base, seen | {class_name}) for base in info.local_bases
    )


def _names_the_switch(target: ast.expr) -> bool:
    if isinstance(target, ast.Attribute):
        return target.attr == "automatic_optimization"
    return isinstance(target, ast.Name) and target.id == "automatic_optimization"


class LightningAdapter(Adapter):
    """The hooks Lightning calls; ``self``'s API (``manual_backward``, ``optimizers``,
    ``log``) is the library-effects table's ``lightning_module`` entries (:mod:`.library`)."""

    def hook(self, index, info):
        if info.node.name != "training_step" or not index.is_lightning_class(info.class_name):
            return None
        if uses_manual_optimization(index, info.class_name):
            return HookPlan(MANUAL, backward_returned=False, steps=False)
        return HookPlan(AUTOMATIC, backward_returned=True, steps=True)


ADAPTER = LightningAdapter()
