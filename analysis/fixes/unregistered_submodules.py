"""TW022 unregistered-submodules: wrap the plain container in ``nn.ModuleList`` / ``nn.ModuleDict``.

The finding's span is the container expression bound to ``self.<attr>``. Proof
obligations, checked on the source (any failure: no fix):

1. The expression is a list display or list comprehension (→ ``nn.ModuleList(...)``,
   ``nn.ModuleList()`` for ``[]``), or a dict display whose keys are all string literals
   without a ``.`` (→ ``nn.ModuleDict(...)``: it rejects other keys at run time).
2. ``torch.nn`` is reachable under a name in this file (``import torch.nn as nn``,
   ``from torch import nn``, ``import torch``).
3. Every use of ``self.<attr>`` in the class is one the wrapper supports the same way:
   iterating it, indexing it, ``len``/``enumerate``/``zip``/``reversed``/``iter`` of it,
   ``append``/``extend``/``insert`` (lists), ``items``/``keys``/``values``/``get``/``update``
   (dicts), or binding it.

Always unsafe: registration adds the modules' parameters to ``parameters()`` and their
keys to ``state_dict()``, so what the optimizer trains changes (the point) and earlier
checkpoints no longer load with ``strict=True``.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .tree import Rewrite, expression

_READERS = {"len", "enumerate", "zip", "reversed", "iter"}
_LIST_METHODS = {"append", "extend", "insert"}
_DICT_METHODS = {"items", "keys", "values", "get", "update"}


def torch_nn_name(tree) -> str | None:
    """How this file can spell ``torch.nn``."""
    for node in tree.within(tree.spans[tree.module], cst.Import):
        for alias in node.names:
            name = tree.text(alias.name)
            bound = tree.text(alias.asname.name) if alias.asname else None
            if name == "torch.nn" and bound:
                return bound
            if name == "torch" and bound is None:
                return "torch.nn"
            if name == "torch" and bound:
                return f"{bound}.nn"
    for node in tree.within(tree.spans[tree.module], cst.ImportFrom):
        if (
            node.module is not None
            and tree.text(node.module) == "torch"
            and not isinstance(node.names, cst.ImportStar)
        ):
            for alias in node.names:
                if tree.text(alias.name) == "nn":
                    return tree.text(alias.asname.name) if alias.asname else "nn"
    return None


def _string_key(key: cst.BaseExpression | None) -> bool:
    if not isinstance(key, cst.SimpleString):
        return False
    text = key.evaluated_value
    return isinstance(text, str) and text != "" and "." not in text


def _supported_use(tree, use: cst.Attribute, wrapper: str) -> bool:
    parent = tree.parents.get(use)
    methods = _LIST_METHODS if wrapper == "ModuleList" else _DICT_METHODS
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is use:
        return True
    if isinstance(parent, cst.Subscript) and parent.value is use:
        return True
    if isinstance(parent, cst.AssignTarget):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value in methods:
        return isinstance(tree.parents.get(parent), cst.Call)
    if isinstance(parent, cst.Arg) and parent.star == "":
        call = tree.parents.get(parent)
        return (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Name)
            and call.func.value in _READERS
        )
    if isinstance(parent, cst.ComparisonTarget) and wrapper == "ModuleDict":
        return isinstance(parent.operator, (cst.In, cst.NotIn))
    return False


class UnregisteredSubmodulesFixer(Fixer):
    code = "TW022"

    def build(self, tree, finding):
        value = tree.at(finding.span, (cst.List, cst.ListComp, cst.Dict))
        if value is None:
            return
        if isinstance(value, cst.Dict):
            if not value.elements or not all(
                isinstance(e, cst.DictElement) and _string_key(e.key) for e in value.elements
            ):
                return  # obligation 1
            wrapper = "ModuleDict"
        else:
            wrapper = "ModuleList"
        nn = torch_nn_name(tree)
        if nn is None:
            return  # obligation 2
        assign = tree.enclosing(value, cst.Assign)
        if assign is None or len(assign.targets) != 1:
            return
        attribute = tree.text(assign.targets[0].target)
        owner = tree.enclosing(assign, cst.ClassDef)
        if owner is None or not attribute.startswith("self."):
            return
        uses = [
            node
            for node in tree.within(tree.spans[owner], cst.Attribute)
            if tree.text(node) == attribute
        ]
        if not all(_supported_use(tree, use, wrapper) for use in uses):
            return  # obligation 3
        empty = isinstance(value, cst.List) and not value.elements
        code = f"{nn}.{wrapper}()" if empty else f"{nn}.{wrapper}({tree.text(value)})"
        rewrite = Rewrite(tree)
        rewrite.replace(value, expression(code))
        yield self.fix(
            f"Register the submodules: wrap `{attribute}` in `{nn}.{wrapper}`",
            Applicability.UNSAFE,
            rewrite,
        )
