"""TW024 validation-in-train-mode: ``model.eval()`` before the pass, ``model.train()`` after.

The finding's span is the header of the evaluation loop; its first evidence is the
forward call inside it. Proof obligations, checked on the source (any failure: no fix):

1. The model is called as a plain name or attribute (``model(x)``, ``self.net(x)``), and
   the loop binds that name nowhere, so the inserted calls switch the model the loop runs.
2. The loop contains no ``return``, ``yield`` or ``raise`` (outside nested functions): the
   ``model.train()`` after it runs whenever the loop ends, so the model leaves the pass in
   the mode it entered it — training mode, which is what the finding established.

Then only the evaluation changes (dropout off; batch norm uses, and no longer updates,
its running statistics): safe — provided also that

3. no module's mode is set apart from the model's anywhere in the file: no ``.eval()`` or
   ``.train(...)`` on another receiver (``model.backbone.eval()`` to freeze batch norm,
   ``m.eval()`` over ``model.modules()``, ``teacher.eval()``). ``model.train()`` after the
   pass sets *every* submodule to train mode, so a part kept in eval mode on purpose
   would train differently from then on. When any such switch exists, the fix is unsafe.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .optimizer_in_loop import bound_names
from .tree import LOOPS, Rewrite, statement_line

_LEAVING = (cst.Return, cst.Raise, cst.Yield)


def _leaves_early(tree, loop: cst.CSTNode) -> bool:
    for node in tree.within(tree.spans[loop], cst.CSTNode):
        if isinstance(node, _LEAVING) and tree.enclosing(node, (cst.FunctionDef, cst.Lambda)) is (
            tree.enclosing(loop, (cst.FunctionDef, cst.Lambda))
        ):
            return True
    return False


class ValidationInTrainModeFixer(Fixer):
    code = "TW024"

    def build(self, tree, finding):
        start = (finding.span.line, finding.span.column)
        loop = next(
            (
                node
                for node in tree.within(tree.spans[tree.module], cst.CSTNode)
                if isinstance(node, LOOPS)
                and (tree.spans[node].line, tree.spans[node].column) == start
            ),
            None,
        )
        if loop is None or not finding.evidence:
            return
        forward = tree.at(finding.evidence[0].span, cst.Call)
        if forward is None or not isinstance(forward.func, (cst.Name, cst.Attribute)):
            return  # obligation 1
        model = tree.text(forward.func)
        if model in bound_names(tree, loop):
            return  # obligation 1: rebound in the loop
        if _leaves_early(tree, loop):
            return  # obligation 2
        rewrite = Rewrite(tree)
        rewrite.insert_before(loop, statement_line(f"{model}.eval()"))
        rewrite.insert_after(loop, statement_line(f"{model}.train()"))
        yield self.fix(
            f"Run the evaluation in eval mode: `{model}.eval()` before it, `{model}.train()` after",
            Applicability.UNSAFE if _switches_other_modes(tree, model) else Applicability.SAFE,
            rewrite,
        )


def _switches_other_modes(tree, model: str) -> bool:
    """Obligation 3 fails: some ``.eval()`` / ``.train(...)`` in the file switches a
    receiver other than ``model`` (a submodule, a loop over modules, another model)."""
    for call in tree.within(tree.spans[tree.module], cst.Call):
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("eval", "train")
            and tree.text(func.value) != model
        ):
            return True
    return False
