"""TW006 bce-activation-mismatch: drop the sigmoid, or switch to the logits loss.

Sigmoid into a logits loss: drop the sigmoid (see :mod:`.activations`). Raw logits into
``BCELoss`` / ``binary_cross_entropy``: rename the loss to ``BCEWithLogitsLoss`` /
``binary_cross_entropy_with_logits`` — they take the same arguments (``weight``,
``reduction``). When the loss is called inline (``nn.BCELoss()(z, y)``,
``F.binary_cross_entropy(z, y)``) nothing else uses it: safe. When the call goes through a
criterion bound elsewhere (``crit = nn.BCELoss()``), the rename happens at that binding
and changes every use of ``crit``: unsafe.

Proof obligations of a *safe* rename: the loss is called inline (nothing else uses it),
the finding has high confidence (the input is proven raw logits by dataflow), and the
renamed name is spelt through torch (``nn.``, ``torch.nn.``, ``F.``) — a ``BCELoss`` of
another library may not have a logits twin. Each failing obligation makes it unsafe.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability, Confidence
from .activations import drop_activation
from .fixer import Fixer
from .tree import Rewrite

TORCH_OWNERS = {"nn", "torch.nn", "F", "functional", "nn.functional", "torch.nn.functional"}
RENAMES = {
    "BCELoss": "BCEWithLogitsLoss",
    "binary_cross_entropy": "binary_cross_entropy_with_logits",
}


def _renamed(func: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(func, cst.Attribute) and func.attr.value in RENAMES:
        return func.with_changes(attr=cst.Name(RENAMES[func.attr.value]))
    return None


class BceActivationMismatchFixer(Fixer):
    code = "TW006"

    def build(self, tree, finding):
        rewrite, applicability, title = drop_activation(tree, finding, ("sigmoid",))
        if rewrite is not None:
            yield self.fix(title, applicability, rewrite)
            return
        call = tree.at(finding.span, cst.Call)
        if call is None:
            return
        target, applicability = self._loss_constructor(tree, call)
        new = (
            _renamed(target.func if isinstance(target, cst.Call) else target)
            if target is not None
            else None
        )
        if new is None:
            return
        old = target.func if isinstance(target, cst.Call) else target
        rewrite = Rewrite(tree)
        rewrite.replace(old, new)
        owner = tree.text(old.value) if isinstance(old, cst.Attribute) else ""
        if finding.confidence is not Confidence.HIGH or owner not in TORCH_OWNERS:
            applicability = Applicability.UNSAFE  # not provably torch's loss
        yield self.fix(
            f"Replace `{tree.text(old)}` with `{tree.module.code_for_node(new)}`",
            applicability,
            rewrite,
        )

    @staticmethod
    def _loss_constructor(tree, call: cst.Call):
        """The node naming the loss: the function called, an inline ``nn.BCELoss()``, or the
        constructor call a criterion name was bound to."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in RENAMES:
            return func, Applicability.SAFE
        if isinstance(func, cst.Call):
            return func, Applicability.SAFE
        text = tree.text(func)
        for assign in tree.within(tree.spans[tree.module], cst.Assign):
            if any(tree.text(t.target) == text for t in assign.targets) and isinstance(
                assign.value, cst.Call
            ):
                return assign.value, Applicability.UNSAFE
        return None, None
