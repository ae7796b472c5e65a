"""Dropping an activation fed to a loss that applies it itself (TW005, TW006).

The evidence of such a finding points at the expression that applied the activation:
``F.softmax(z, dim=1)``, ``torch.sigmoid(z)``, ``z.softmax(-1)`` or ``nn.Sigmoid()(z)``.
Dropping it means replacing that call by its input ``z``. When the call sits inside the
loss call, nothing else sees it: safe. When it was assigned to a name first
(``probs = F.softmax(z, 1)``), the replacement happens at the assignment, and it is safe
only if the loss is the name's one use in the function; otherwise (the probabilities also
feed a metric) the fix is offered as unsafe.

Proof obligations of a *safe* drop: the finding has high confidence (the loss is known
from its constructor or qualified name to apply the activation itself, not guessed from
a name), the activation is not applied inside a ``forward``, and its result has no other
use (it sits inside the loss call, or is a name whose only use is the loss). Each
failing obligation makes the drop unsafe.

Evidence that names a whole model ("``net(x)`` ends in softmax") has no call to drop:
the layer lives in the model's definition. When that definition is an
``nn.Sequential(...)`` bound in this file whose last layer is the activation, the fix
removes that layer — unsafe, since every other user of the model (inference code that
wanted probabilities) changes too. An activation applied by a ``forward`` (the evidence
then points into it) is removed there, unsafe for the same reason.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability, Confidence, Finding
from .tree import Rewrite, SourceTree, parenthesized


def activation_input(
    tree: SourceTree, call: cst.Call, names: tuple[str, ...]
) -> cst.BaseExpression | None:
    """The tensor ``call`` applies one of ``names`` to, or None when it is not such a call."""
    func = call.func
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    keyword = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if (
        isinstance(func, cst.Attribute)
        and tree.text(func.value).split(".")[0] == "self"
        and len(positional) == 1
    ):
        return positional[
            0
        ]  # the analysis bound ``self.act`` to the activation layer, whatever its name
    if isinstance(func, cst.Call):  # nn.Softmax(dim=1)(z)
        layer = tree.text(func.func).rsplit(".", 1)[-1].lower()
        return positional[0] if layer in names and len(positional) == 1 else None
    attr = (
        func.attr.value
        if isinstance(func, cst.Attribute)
        else func.value
        if isinstance(func, cst.Name)
        else ""
    )
    if attr not in names:
        return None
    owner = tree.text(func.value) if isinstance(func, cst.Attribute) else ""
    if owner == "self" or owner.startswith("self."):  # a layer held by the module: self.softmax(z)
        return positional[0] if len(positional) == 1 else None
    if owner in (
        "F",
        "torch",
        "nn.functional",
        "torch.nn.functional",
        "functional",
        "special",
        "torch.special",
    ) or isinstance(func, cst.Name):
        return positional[0] if positional else keyword.get("input")
    return func.value if isinstance(func, cst.Attribute) else None  # z.softmax(dim=-1)


def drop_activation(tree: SourceTree, finding: Finding, names: tuple[str, ...]):
    """(rewrite, applicability, title) for the activation in the finding's evidence.

    The title shows the exact edit: ``Replace `F.softmax(z, dim=1)` with `z```, or the
    layer removed from a ``Sequential``.
    """
    for item in finding.evidence:
        if item.path:
            continue
        call = tree.at(item.span, cst.Call)
        source = activation_input(tree, call, names) if call is not None else None
        if call is None or source is None:
            continue
        kept = _in_place_of(tree, call, source)
        rewrite = Rewrite(tree)
        rewrite.replace(call, lambda _node, new=kept: new)
        inline = finding.span.contains(item.span)
        if _in_forward(tree, call):
            applicability = (
                Applicability.UNSAFE
            )  # every user of the model changes, not only this loss
        else:
            applicability = (
                Applicability.SAFE
                if finding.confidence is Confidence.HIGH
                and (inline or _only_use_is_loss(tree, call, finding))
                else Applicability.UNSAFE
            )
        title = f"Replace `{tree.text(call)}` with `{tree.module.code_for_node(kept)}`"
        return rewrite, applicability, title
    return _drop_final_layer(tree, finding, names)


def _in_forward(tree: SourceTree, call: cst.Call) -> bool:
    """Whether ``call`` sits inside a method named ``forward``."""
    return any(
        isinstance(node, cst.FunctionDef) and node.name.value == "forward"
        for node in tree.ancestors(call)
    )


def _drop_final_layer(tree: SourceTree, finding: Finding, names: tuple[str, ...]):
    for item in finding.evidence:
        call = tree.at(item.span, cst.Call) if not item.path else None
        if call is None or not isinstance(call.func, (cst.Name, cst.Attribute)):
            continue
        model = tree.text(call.func)
        for assign in tree.within(tree.spans[tree.module], cst.Assign):
            value = assign.value
            if not any(tree.text(t.target) == model for t in assign.targets) or not isinstance(
                value, cst.Call
            ):
                continue
            if not tree.text(value.func).endswith("Sequential") or len(value.args) < 2:
                continue
            last = value.args[-1].value
            if (
                isinstance(last, cst.Call)
                and tree.text(last.func).rsplit(".", 1)[-1].lower() in names
            ):
                rewrite = Rewrite(tree)
                args = list(value.args)
                args[-2] = args[-2].with_changes(comma=args[-1].comma)
                rewrite.replace(value, lambda node, kept=args[:-1]: node.with_changes(args=kept))
                title = f"Remove the last layer `{tree.text(last)}` from `{model}`'s `Sequential`"
                return rewrite, Applicability.UNSAFE, title
    return None, None, None


def _bare(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))


# Places where any expression stands alone: the input needs no parentheses there.
_STANDALONE = (cst.Arg, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Expr, cst.Element)


def _in_place_of(
    tree: SourceTree, call: cst.Call, source: cst.BaseExpression
) -> cst.BaseExpression:
    """The activation's input as it must be written where the call stood: bare when it is
    atomic or stands alone there, parenthesised otherwise, so that dropping the call never
    changes precedence (``F.softmax(a + b, 1) * w`` becomes ``(a + b) * w``)."""
    bare = source.with_changes(lpar=(), rpar=())
    if _bare(source) or isinstance(tree.parents.get(call), _STANDALONE):
        return bare if _bare(source) or not source.lpar else source
    return parenthesized(bare)


def _only_use_is_loss(tree: SourceTree, call: cst.Call, finding: Finding) -> bool:
    assign = tree.parents.get(call)
    if (
        not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1
        or not isinstance(assign.targets[0].target, cst.Name)
    ):
        return False
    name = assign.targets[0].target.value
    scope = tree.function_of(assign)
    uses = [
        node
        for node in tree.within(tree.spans[scope], cst.Name)
        if node.value == name and node is not assign.targets[0].target
    ]
    return all(finding.span.contains(tree.spans[node]) for node in uses)
