"""TW014 unscaled-gradient-accumulation: divide the loss by the accumulation count.

The finding's span is the backward statement; its evidence holds the ``if`` that gates
the optimizer step, whose ``%`` operand is the accumulation count (``accum`` in
``(i + 1) % accum == 0``, ``8`` in ``step % 8 == 7``). The division goes where the
loss meets backward, so the logged loss keeps its meaning: ``loss.backward()`` becomes
``(loss / accum).backward()``, and ``scaler.scale(loss).backward()`` becomes
``scaler.scale(loss / accum).backward()``. Unsafe: the update shrinks by the count,
which is the fix, but a learning rate tuned for the unscaled sum needs retuning.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .tree import Rewrite, parenthesized


def accumulation_count(tree, finding) -> cst.BaseExpression | None:
    for item in finding.evidence:
        gate = tree.at(item.span, cst.If) if not item.path else None
        if gate is None:
            gate = next(tree.starting_at(item.span.line, item.span.column, cst.If), None)
        if gate is None:
            continue
        for operation in tree.within(tree.spans[gate.test], cst.BinaryOperation):
            if isinstance(operation.operator, cst.Modulo):
                return operation.right
    return None


def _operand(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` as an operand of ``/`` (numbers and unary minus bind tighter; sums do not)."""
    return (
        node
        if isinstance(node, (cst.Integer, cst.Float, cst.UnaryOperation))
        else parenthesized(node)
    )


def _divided(node: cst.BaseExpression, count: cst.BaseExpression) -> cst.BaseExpression:
    return cst.BinaryOperation(left=_operand(node), operator=cst.Divide(), right=_operand(count))


class UnscaledGradientAccumulationFixer(Fixer):
    code = "TW014"

    def build(self, tree, finding):
        count = accumulation_count(tree, finding)
        call = tree.at(finding.span, cst.Call)
        if (
            count is None
            or call is None
            or not isinstance(call.func, cst.Attribute)
            or call.func.attr.value != "backward"
        ):
            return
        loss = call.func.value
        scaled = (
            isinstance(loss, cst.Call)
            and isinstance(loss.func, cst.Attribute)
            and loss.func.attr.value == "scale"
            and len(loss.args) == 1
        )
        target = loss.args[0].value if scaled else loss

        def divide(node: cst.CSTNode) -> cst.BaseExpression:
            assert isinstance(node, cst.BaseExpression)
            divided = _divided(node, count)
            return (
                divided
                if scaled
                else divided.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            )

        rewrite = Rewrite(tree)
        rewrite.replace(target, divide)
        result = tree.module.code_for_node(call.deep_replace(target, divide(target)))
        yield self.fix(
            f"Replace `{tree.text(call)}` with `{result}`", Applicability.UNSAFE, rewrite
        )
