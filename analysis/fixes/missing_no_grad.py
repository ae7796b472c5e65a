"""TW002 missing-no-grad: wrap the evaluation loop in ``with torch.no_grad():``.

The finding's span is the loop header. The whole loop statement moves one level down
into a new ``with`` block: LibCST re-indents it with the file's own indent unit (tabs
stay tabs), keeps its comments, and leaves multi-line strings inside untouched (their
text is data). Comments above the loop stay above the ``with``. ``torch`` is written
the way the file imports it, and imported when it is not.

Under ``no_grad`` the loop computes the same numbers; only the graphs are not recorded.
So the wrap is **safe** only when no graph the loop records is ever used:

1. *No gradient is taken from the loop's values.* The analysis proved
   :attr:`~torchward.analysis.finding.Proof.LOOP_NEVER_BACKPROPAGATED`: no ``backward()``
   or ``autograd.grad`` runs in the loop, in a loop around it or after it in the
   function; nothing the loop computes is stored where it outlives the function; the
   function returns no value with a graph.
2. *No helper the analysis cannot see may train.* No call in the loop is named like a
   training step (``*backward*``, ``*step*``, ``train*``, ``fit*``): one defined in another
   file could take a gradient the analysis never saw.
3. *Nothing from the loop is kept where others can reach it* (checked on the tree, as
   a second line of defence for containers the analysis does not know): the loop assigns
   no attribute (``self.last = out``), stores into no attribute, parameter or global
   (``self.outputs.append(out)``, ``bank.extend(...)``, ``cache[k] = out`` for a ``cache``
   the function did not create).
4. *Grad mode does not leak.* The loop neither ``yield``\\ s nor ``await``\\ s: a generator
   suspended inside ``with no_grad()`` would switch gradients off in its consumer.

Otherwise the wrap is offered as **unsafe**.
"""

from __future__ import annotations

import re

import libcst as cst

from ..finding import Applicability, Proof
from .fixer import Fixer
from .imports import Imports
from .tree import LOOPS, Rewrite, SourceTree, expression

TRAINING_CALL = re.compile(r"backward|step|^train|^fit", re.IGNORECASE)


def callee_name(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def may_train_unseen(tree: SourceTree, loop: cst.CSTNode) -> bool:
    """Obligation 2 fails: a call in the loop is named like a training step."""
    return any(
        TRAINING_CALL.search(callee_name(call)) for call in tree.within(tree.spans[loop], cst.Call)
    )


STORING_METHODS = {"append", "extend", "insert", "add", "update", "put", "appendleft", "setdefault"}


def _root(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node


def _is_local(tree: SourceTree, target: cst.BaseExpression, scope: cst.CSTNode) -> bool:
    """A plain name the function binds itself (not a parameter, global or attribute)."""
    if not isinstance(target, cst.Name) or not isinstance(scope, cst.FunctionDef):
        return False
    if any(p.name.value == target.value for p in tree.within(tree.spans[scope.params], cst.Param)):
        return False
    return any(
        isinstance(tree.parents.get(name), cst.AssignTarget)
        for name in tree.within(tree.spans[scope], cst.Name)
        if name.value == target.value
    )


def keeps_values_outside(tree: SourceTree, loop: cst.CSTNode) -> bool:
    """Obligation 3 fails: the loop stores into something that outlives the function."""
    scope = tree.function_of(loop)
    span = tree.spans[loop]
    targets: list[cst.BaseExpression] = []
    for assign in tree.within(span, cst.AssignTarget):
        if isinstance(assign.target, (cst.Attribute, cst.Subscript)):
            targets.append(assign.target)
    for augmented in tree.within(span, cst.AugAssign):
        if isinstance(augmented.target, (cst.Attribute, cst.Subscript)):
            targets.append(augmented.target)
    for call in tree.within(span, cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in STORING_METHODS:
            targets.append(call.func.value)
    return any(
        isinstance(target, cst.Attribute) or not _is_local(tree, _root(target), scope)
        for target in targets
    )


def leaks_grad_mode(tree: SourceTree, loop: cst.CSTNode) -> bool:
    """Obligation 4 fails: the loop suspends (``yield``/``await``) inside the new block."""
    span = tree.spans[loop]
    return any(True for _ in tree.within(span, cst.Yield)) or any(
        True for _ in tree.within(span, cst.Await)
    )


class MissingNoGradFixer(Fixer):
    code = "TW002"

    def build(self, tree, finding):
        loop = next((node for node in tree.within(finding.span, LOOPS)), None) or self._loop_at(
            tree, finding
        )
        if loop is None or not isinstance(loop.body, cst.IndentedBlock):
            return
        rewrite = Rewrite(tree)
        torch = Imports(tree, rewrite).module("torch")
        manager = cst.WithItem(item=expression(f"{torch}.no_grad()"))

        def wrap(node: cst.BaseCompoundStatement) -> cst.With:
            return cst.With(
                items=[manager],
                body=cst.IndentedBlock(body=[node.with_changes(leading_lines=())]),
                leading_lines=node.leading_lines,
            )

        rewrite.replace(loop, wrap)
        proven = (
            Proof.LOOP_NEVER_BACKPROPAGATED in finding.proofs
            and not may_train_unseen(tree, loop)
            and not keeps_values_outside(tree, loop)
            and not leaks_grad_mode(tree, loop)
        )
        yield self.fix(
            f"Wrap the loop in `with {torch}.no_grad():`",
            Applicability.SAFE if proven else Applicability.UNSAFE,
            rewrite,
        )

    @staticmethod
    def _loop_at(tree, finding):
        for node, span in tree.spans.items():
            if isinstance(node, LOOPS) and (span.line, span.column) == (
                finding.span.line,
                finding.span.column,
            ):
                return node
        return None
