"""TW019 zero-grad-between-backward-and-step: move the reset to just after the step.

The finding's span is the reset call (``opt.zero_grad()``); its first evidence is the
step it precedes. Proof obligations, each checked on the source (any failure: no fix):

1. The reset and the step are each alone on a statement line (``opt.zero_grad()`` and
   ``opt.step()`` / ``scaler.step(opt)``, nothing else on the line), in the same block.
2. The reset comes before the step in that block.
3. No statement between them calls ``backward``, ``step``, ``zero_grad`` or
   ``autograd.grad``: the gradients the step now sees are exactly those of the backward
   before the reset, and the reset still runs before the next backward.

4. No call between them is named like a training step or a loss (``train_step(...)``,
   ``compute_loss(...)``): a helper from another file may run a backward the analysis
   never saw, whose gradients the moved reset would no longer clear (otherwise unsafe).

Moving the reset then changes only what the step (and any clipping or logging between)
sees: the computed gradients instead of zeros. That is the bug, so the fix is safe.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .missing_no_grad import TRAINING_CALL, callee_name
from .tree import Rewrite

GRADIENT_CALLS = {"backward", "step", "zero_grad", "grad"}


def _lone_call(statement: cst.CSTNode, call: cst.Call) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and statement.body[0].value is call
    )


def _touches_gradients(tree, statement: cst.CSTNode) -> bool:
    for call in tree.within(tree.spans[statement], cst.Call):
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if name in GRADIENT_CALLS:
            return True
    return False


class ZeroGradBeforeStepFixer(Fixer):
    code = "TW019"

    def build(self, tree, finding):
        reset = tree.at(finding.span, cst.Call)
        if reset is None or not finding.evidence:
            return
        step = tree.at(finding.evidence[0].span, cst.Call)
        if step is None:
            return
        reset_line, step_line = tree.statement(reset), tree.statement(step)
        if not (_lone_call(reset_line, reset) and _lone_call(step_line, step)):
            return  # obligation 1
        block = tree.parents.get(reset_line)
        if block is None or tree.parents.get(step_line) is not block:
            return  # obligation 1: the same block
        body = list(getattr(block, "body", ()))
        if reset_line not in body or step_line not in body:
            return
        first, last = body.index(reset_line), body.index(step_line)
        if first >= last:
            return  # obligation 2
        if any(_touches_gradients(tree, s) for s in body[first + 1 : last]):
            return  # obligation 3
        between = body[first + 1 : last]
        unseen = any(
            TRAINING_CALL.search(callee_name(call)) or "loss" in callee_name(call).lower()
            for statement in between
            for call in tree.within(tree.spans[statement], cst.Call)
        )
        rewrite = Rewrite(tree)
        rewrite.replace(reset_line, cst.RemovalSentinel.REMOVE)  # type: ignore[arg-type]  # Rewrite passes the sentinel on to LibCST, which removes the statement
        rewrite.insert_after(step_line, reset_line.with_changes(leading_lines=()))
        yield self.fix(
            f"Reset the gradients after the step: move `{tree.text(reset)}` below `{tree.text(step)}`",
            Applicability.UNSAFE if unseen else Applicability.SAFE,
            rewrite,
        )
