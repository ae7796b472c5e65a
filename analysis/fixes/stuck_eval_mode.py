"""TW011 stuck-eval-mode: insert ``model.train()`` at the top of the epoch loop.

The finding's span is the switch to eval mode (``model.eval()``, ``model.train(False)``)
or a call of a helper that makes it (``evaluate(model, loader)``). The model expression
is the switch's receiver; for a helper defined in this file it is the argument passed
for the parameter the helper switches. The epoch loop is the innermost loop around the
switch that also holds the training step the evidence points at. ``model.train()`` goes
first in that loop's body. A helper from another file, or a model the fixer cannot
name, gets no fix.

The insertion is **safe** only when every epoch then starts exactly as the first did:

1. *The first epoch trained in train mode, provably.* Before the loop, in the same
   function, the model is switched with ``model.train()`` / ``model.train(True)``, or
   built by a ``torch.nn`` constructor or a class defined in this file (a fresh module
   is in train mode). A model received from a caller, or loaded by a function such as
   ``from_pretrained`` (which returns it in eval mode), may have been put in eval mode
   on purpose (frozen batch-norm fine-tuning): then the fix would change the first
   epoch too.
2. *Writing the model again is harmless.* Its expression is a name or a chain of
   attributes, so ``model.train()`` evaluates nothing else.

Otherwise it is offered as **unsafe**.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .tree import Rewrite, SourceTree, contains, is_plain_reference, statement_line


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
        proven = is_plain_reference(model) and trains_on_entry(tree, name, loop)
        yield self.fix(
            f"Insert `{name}.train()` as the first statement of `{_loop_header(tree, loop)}`",
            Applicability.SAFE if proven else Applicability.UNSAFE,
            rewrite,
        )


def _loop_header(tree: SourceTree, loop: cst.For | cst.While) -> str:
    """The loop as the user knows it (``for epoch in …``, ``for step in …``): the title
    names the loop rather than assuming it runs once per epoch."""
    if isinstance(loop, cst.For):
        return f"for {tree.text(loop.target)} in …"
    return "while …"


def trains_on_entry(tree: SourceTree, name: str, loop: cst.CSTNode) -> bool:
    """Obligation 1: before ``loop``, in its function, ``name`` is switched to train mode
    or built fresh (by ``torch.nn`` or a class of this file)."""
    scope = tree.function_of(loop)
    start = tree.spans[loop]
    local_classes = {node.name.value for node in tree.within(tree.spans[tree.module], cst.ClassDef)}
    for call in tree.within(tree.spans[scope], cst.Call):
        span = tree.spans[call]
        if (span.line, span.column) >= (start.line, start.column):
            continue
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "train"
            and tree.text(func.value) == name
            and (
                not call.args
                or (isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "True")
            )
        ):
            return True
        assign = tree.parents.get(call)
        if (
            isinstance(assign, cst.Assign)
            and assign.value is call
            and any(tree.text(t.target) == name for t in assign.targets)
        ):
            built = tree.text(func)
            if built.startswith(("nn.", "torch.nn.")) or built in local_classes:
                return True
    return False
