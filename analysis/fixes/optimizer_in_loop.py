"""TW017 optimizer-in-loop: hoist ``opt = Optimizer(...)`` to just before the loop.

The finding's span is the constructor call; its first evidence is the step. The fix
moves the whole statement before the innermost loop around the construction.

Proof obligations (each checked on the source; any failure means no fix):

1. The statement is a single ``target = Optimizer(...)`` whose target is a name or a
   ``self.attr`` path, directly in the loop's body (not under an ``if``/``with``/``try``,
   where it might not run every iteration).
2. No name the constructor call reads (``model`` in ``model.parameters()``, ``lr``) is
   bound anywhere in the loop — assigned, augmented, a loop or ``with`` target, deleted:
   the hoisted call then builds the optimizer over the same objects every iteration
   would have.
3. The target is bound nowhere else in the loop and not read in the loop before the
   construction, so every use in the loop saw the optimizer this statement built.

4. No object built in the loop takes the optimizer (a scheduler ``LambdaLR(opt, ...)``
   re-created each iteration on a kept optimizer re-bases on the rate the last one left:
   otherwise unsafe).

With them, the only change is that the optimizer's state survives from one step to the
next. That is safe when the loop that rebuilds it also steps it (a fresh optimizer per
update is never what anyone means); when it is rebuilt once per epoch and an inner loop
steps it, the restart may be deliberate (warm restarts): unsafe.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .tree import Rewrite


def bound_names(tree, scope: cst.CSTNode) -> set[str]:
    """Every name (or dotted path) bound inside ``scope``: assignments, loop and ``with``
    targets, augmented assignments, walrus, ``del`` and imports."""
    found: set[str] = set()

    def targets(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.Name, cst.Attribute)):
            found.add(tree.text(node))
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                targets(element.value)
        elif isinstance(node, (cst.StarredElement, cst.Subscript)):
            targets(node.value)

    span = tree.spans[scope]
    for node in tree.within(span, cst.CSTNode):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                targets(target.target)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            targets(node.target)
        elif isinstance(node, cst.AsName):
            targets(node.name)
        elif isinstance(node, (cst.NamedExpr, cst.Del)):
            targets(node.target)
    return found


def read_names(tree, node: cst.CSTNode) -> set[str]:
    """Every name and dotted path ``node`` reads (keyword argument names excluded)."""
    found: set[str] = set()
    keywords = {id(arg.keyword) for arg in tree.within(tree.spans[node], cst.Arg) if arg.keyword}
    for inner in tree.within(tree.spans[node], cst.Name):
        if id(inner) not in keywords:
            found.add(inner.value)
    for inner in tree.within(tree.spans[node], cst.Attribute):
        found.add(tree.text(inner))
    return found


class OptimizerInLoopFixer(Fixer):
    code = "TW017"

    def build(self, tree, finding):
        call = tree.at(finding.span, cst.Call)
        statement = tree.statement(call) if call is not None else None
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return
        assign = statement.body[0]
        if (
            not isinstance(assign, cst.Assign)
            or len(assign.targets) != 1
            or assign.value is not call
            or not isinstance(assign.targets[0].target, (cst.Name, cst.Attribute))
        ):
            return
        loops = tree.loops_around(finding.span)
        if not loops:
            return
        loop = loops[0]
        if (
            not isinstance(loop.body, cst.IndentedBlock)
            or tree.parents.get(statement) is not loop.body
        ):
            return  # obligation 1: runs unconditionally, once per iteration
        name = tree.text(assign.targets[0].target)
        bound = bound_names(tree, loop)
        if read_names(tree, call) & bound:
            return  # obligation 2: the constructor's inputs are loop-invariant
        for other in loop.body.body:
            if other is statement:
                break
            if name in read_names(tree, other) or name in bound_names(tree, other):
                return  # obligation 3: nothing in the loop saw another binding
        after = loop.body.body[loop.body.body.index(statement) + 1 :]
        if any(name in bound_names(tree, other) for other in after):
            return
        if isinstance(loop, cst.For) and name in _target_names(tree, loop):
            return
        step_spans = [e.span for e in finding.evidence[:1]]
        every_step = bool(step_spans) and any(
            (inner := tree.loops_around(span)) and inner[0] is loop for span in step_spans
        )
        rewrite = Rewrite(tree)
        rewrite.replace(statement, cst.RemovalSentinel.REMOVE)  # type: ignore[arg-type]  # Rewrite passes the sentinel on to LibCST, which removes the statement
        rewrite.insert_before(loop, statement.with_changes(leading_lines=()))
        wrapped = _wrapped_in_loop(tree, loop, name)
        applicability = Applicability.SAFE if every_step and not wrapped else Applicability.UNSAFE
        yield self.fix(f"Construct `{name}` once, before the loop", applicability, rewrite)


def _wrapped_in_loop(tree, loop: cst.CSTNode, name: str) -> bool:
    """Obligation 4 fails: another object built in the loop takes the optimizer
    (``LambdaLR(opt, ...)``, ``GradScaler``-style wrappers). A scheduler built on a fresh
    optimizer each iteration starts from the constructor's learning rate; built again on
    one kept optimizer it re-bases on the rate the last one left (a warm-up factor then
    compounds): the hoist would change more than the optimizer's state."""
    for call in tree.within(tree.spans[loop], cst.Call):
        if any(
            isinstance(arg.value, (cst.Name, cst.Attribute)) and tree.text(arg.value) == name
            for arg in call.args
        ) and not (isinstance(call.func, cst.Attribute) and tree.text(call.func.value) == name):
            callee = tree.text(call.func).rsplit(".", 1)[-1]
            if callee[:1].isupper() or "sched" in callee.lower():
                return True
    return False


def _target_names(tree, loop: cst.For) -> set[str]:
    return {tree.text(n) for n in tree.within(tree.spans[loop.target], cst.Name)}
