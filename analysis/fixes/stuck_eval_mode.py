"""TW011 stuck-eval-mode: insert ``model.train()`` at the top of the epoch loop.

The finding's span is the switch to eval mode (``model.eval()``, ``model.train(False)``)
or a call of a helper that makes it (``evaluate(model, loader)``). The model expression
is the switch's receiver; for a helper defined in this file it is the argument passed
for the parameter the helper switches. The epoch loop is the innermost loop around the
switch that also holds the training step the evidence points at. ``model.train()`` goes
first in that loop's body, so every epoch starts in the mode the first one trained in:
safe. A helper from another file, or a model the fixer cannot name, gets no fix.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .tree import Rewrite, contains, statement_line


def _switched(call: cst.Call) -> cst.BaseExpression | None:
    """The receiver of ``x.eval()`` or ``x.train(False)``."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    if func.attr.value == "eval" and not call.args:
        return func.value
    if (
        func.attr.value == "train"
        and len(call.args) == 1
        and isinstance(call.args[0].value, cst.Name)
        and call.args[0].value.value == "False"
    ):
        return func.value
    return None


def _model_through_helper(tree, call: cst.Call) -> cst.BaseExpression | None:
    if not isinstance(call.func, cst.Name):
        return None
    helper = next(
        (
            f
            for f in tree.within(tree.spans[tree.module], cst.FunctionDef)
            if f.name.value == call.func.value
        ),
        None,
    )
    if helper is None:
        return None
    params = [p.name.value for p in helper.params.params]
    for inner in tree.within(tree.spans[helper], cst.Call):
        receiver = _switched(inner)
        if isinstance(receiver, cst.Name) and receiver.value in params:
            index = params.index(receiver.value)
            for position, arg in enumerate(call.args):
                if arg.keyword is not None and arg.keyword.value == receiver.value:
                    return arg.value
                if arg.keyword is None and not arg.star and position == index:
                    return arg.value
    return None


class StuckEvalModeFixer(Fixer):
    code = "TW011"

    def build(self, tree, finding):
        call = tree.at(finding.span, cst.Call)
        if call is None:
            return
        model = _switched(call) or _model_through_helper(tree, call)
        if model is None:
            return
        others = [
            e.span for e in finding.evidence if not e.path and not contains(finding.span, e.span)
        ]
        loops = tree.loops_around(finding.span)
        loop = next((lp for lp in loops if all(contains(tree.spans[lp], s) for s in others)), None)
        if loop is None or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
            return
        name = tree.text(model)
        rewrite = Rewrite(tree)
        rewrite.insert_before(loop.body.body[0], statement_line(f"{name}.train()"))
        yield self.fix(
            f"Call `{name}.train()` at the start of each epoch", Applicability.SAFE, rewrite
        )
