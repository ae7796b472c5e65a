"""TW003 missing-zero-grad: insert ``optimizer.zero_grad(set_to_none=True)`` after the step.

The finding's span is the optimizer step (``opt.step()``, ``self.opt.step()``, or a
``GradScaler``'s ``scaler.step(opt)``). The reset goes on the line after the statement
that steps, at its indentation, written with the optimizer's own expression. After the
step rather than at the top of the loop: when the step sits inside an accumulation
``if``, a reset at the top of the loop would throw the accumulated gradients away, while
a reset after the step is right in both shapes. When the loop only steps through a
helper (``train_step(model, x, opt)``), there is no statement to anchor to: no fix.

Safe, except in a loop that calls ``backward(retain_graph=True)``: that looks like a
gradient-comparison harness whose accumulation may be deliberate, so it is unsafe there.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from ..finding import Applicability
from .fixer import Fixer
from .tree import Rewrite, statement_line


def optimizer_of(tree, call: cst.Call) -> cst.BaseExpression | None:
    """The optimizer a ``.step(...)`` call steps: its receiver, or a scaler's argument."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"):
        return None
    receiver = call.func.value
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    if positional and _is_grad_scaler(tree, receiver):
        return positional[0]
    return receiver


def _is_grad_scaler(tree, receiver: cst.BaseExpression) -> bool:
    """Bound in this file to a ``GradScaler(...)`` (any spelling), e.g. ``scaler = amp.GradScaler()``."""
    text = tree.text(receiver)
    for assign in tree.within(tree.spans[tree.module], cst.Assign):
        if any(tree.text(target.target) == text for target in assign.targets):
            value = assign.value
            if isinstance(value, cst.Call) and tree.text(value.func).endswith("GradScaler"):
                return True
    return False


class MissingZeroGradFixer(Fixer):
    code = "TW003"

    def build(self, tree, finding):
        call = tree.at(finding.span, cst.Call)
        optimizer = optimizer_of(tree, call) if call is not None else None
        statement = tree.statement(call) if call is not None else None
        if optimizer is None or not isinstance(statement, cst.SimpleStatementLine):
            return
        name = tree.text(optimizer)
        rewrite = Rewrite(tree)
        rewrite.insert_after(statement, statement_line(f"{name}.zero_grad(set_to_none=True)"))
        loops = tree.loops_around(finding.span)
        harness = bool(loops) and any(
            m.matches(arg, m.Arg(keyword=m.Name("retain_graph"), value=m.Name("True")))
            for arg in tree.within(tree.spans[loops[0]], cst.Arg)
        )
        applicability = Applicability.UNSAFE if harness else Applicability.SAFE
        yield self.fix(
            f"Reset the gradients with `{name}.zero_grad(set_to_none=True)` after the step",
            applicability,
            rewrite,
        )
