"""The job's structure: which parameters are frozen, which other models share the device.

``requires_grad_(False)`` calls and ``requires_grad = False`` loops (the module a loop's
parameters come from, all-but-these name lists), new layers replacing frozen ones, and the
models ``from_pretrained`` loads beside the trained one, as typed facts
(:func:`torchward.estimator.jobparts.structure_facts`).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchward.estimator.jobparts import structure_facts
from torchward.estimator.runconfig import Field

from .runconfig_fields import ReaderState

if TYPE_CHECKING:
    pass

__all__ = ["StructureReader", "loop_module", "out_features"]


class StructureReader:
    """Frozen modules and the other models on the device."""

    def __init__(self, state: ReaderState) -> None:
        self.state = state  # the field table this read fills, shared with the other readers

    def note(self, values) -> None:
        """Frozen modules and the other models on the device, as typed facts (``frozen``,
        ``device_models``: :func:`torchward.estimator.jobparts.structure_facts`); what no
        model owns is named in a note, not guessed."""
        freezes = list(self.state.freezes)
        replacements: dict[str, int | None] = {}  # sub-modules replaced → a new layer's width
        for node in values.paths.of_type(ast.Assign):  # p.requires_grad = False in a loop
            if (
                len(node.targets) == 1
                and isinstance(node.targets[0], ast.Attribute)
                and node.targets[0].attr == "requires_grad"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, bool)
                and values.paths.state(node).runs
            ):
                named = _named_exceptions(node, values)
                if named is not None and node.value.value is False:  # all but the names listed
                    freezes.append((node.lineno, named[0], False))
                    freezes += [(node.lineno, f"{named[0]}.{m}", True) for m in named[1]]
                    continue
                module = loop_module(node.targets[0].value, node, values)
                freezes.append((node.lineno, module, node.value.value))
            elif (  # model.fc = nn.Linear(...): a new layer is trainable, frozen or not before
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Attribute)
                and isinstance(node.value, ast.Call)
                and re.search(r"Linear|Sequential|Conv", ast.unparse(node.value.func))
                and not ast.unparse(node.targets[0]).startswith("self.")
                and values.paths.state(node).runs
            ):
                replaced = ast.unparse(node.targets[0])
                freezes.append((node.lineno, replaced, True))
                replacements[replaced] = out_features(node.value, values)
        model = self.state.fields["model"].value if "model" in self.state.fields else None
        found = structure_facts(
            self.state.model_var,
            self.state.loads,
            freezes,
            self.state.optimized,
            self.state.path,
            replacements,
            model,
        )
        if found.model is not None and "model" in self.state.fields:
            line = self.state.load_lines[found.model]
            confidence = self.state.fields["model"].confidence
            self.state.fields["model"] = Field(found.model, f"{self.state.path}:{line}", confidence)
            self.state.notes.append(
                f"the optimizer trains {found.model}: that is the model estimated"
            )
        if found.freezing is not None:
            line = min(line for line, _, grad in freezes if not grad)
            self.state.fields["frozen"] = Field(
                found.freezing, f"{self.state.path}:{line}", "medium"
            )
        if found.others:
            self.state.fields["device_models"] = Field(found.others, self.state.path, "medium")
        if found.unowned:
            self.state.notes.append(
                f"parameters are frozen at {', '.join(found.unowned[:4])}: not tied to a model the "
                "estimate sizes, so every parameter is counted trainable (an upper bound on "
                "gradients and optimizer state)"
            )


def out_features(call: ast.Call, values) -> int | None:
    """The width of a new layer: ``nn.Linear(768, num_classes)``'s second argument (or
    ``out_features=``) followed to an integer; the last ``Linear`` of an ``nn.Sequential``
    head. ``None`` when it cannot be followed (the estimate then says the width is not read)."""
    name = ast.unparse(call.func).rsplit(".", 1)[-1]
    if name == "Sequential":
        layers = [a for a in call.args if isinstance(a, ast.Call)]
        return out_features(layers[-1], values) if layers else None
    if name != "Linear":
        return None
    argument = next((k.value for k in call.keywords if k.arg == "out_features"), None)
    if argument is None and len(call.args) > 1:
        argument = call.args[1]
    found = values.get(argument)
    if found is None or isinstance(found[0], bool) or not isinstance(found[0], int):
        return None
    return found[0] if found[0] > 0 else None


def _named_exceptions(node: ast.AST, values) -> tuple[str, list[str]] | None:
    """``for name, p in model.named_parameters(): if name not in ["fc.weight", "fc.bias"]:
    p.requires_grad = False`` → (``model``, [``fc``]): everything but the listed modules."""
    test = values.paths.parent(node)
    loop = values.paths.parent(test) if isinstance(test, ast.If) else None
    if not (
        isinstance(test, ast.If)
        and isinstance(loop, ast.For)
        and isinstance(loop.target, ast.Tuple)
        and len(loop.target.elts) == 2
        and isinstance(loop.target.elts[0], ast.Name)
        and isinstance(loop.iter, ast.Call)
        and isinstance(loop.iter.func, ast.Attribute)
        and loop.iter.func.attr == "named_parameters"
        and isinstance(test.test, ast.Compare)
        and isinstance(test.test.left, ast.Name)
        and test.test.left.id == loop.target.elts[0].id
        and len(test.test.ops) == 1
        and isinstance(test.test.ops[0], ast.NotIn)
    ):
        return None
    listed = test.test.comparators[0]
    found = values.get(listed)
    names = found[0] if found is not None else None
    if names is None and isinstance(listed, (ast.List, ast.Tuple)):
        names = [_formatted(element, values) for element in listed.elts]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        return None
    modules = sorted({n.rsplit(".", 1)[0] for n in names if "." in n})
    return ast.unparse(loop.iter.func.value), modules


def _formatted(node: ast.expr, values) -> str | None:
    """A string, or ``"%s.weight" % name`` with ``name`` followed to a string."""
    found = values.get(node)
    if found is not None and isinstance(found[0], str):
        return found[0]
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
    ):
        argument = values.get(node.right)
        if argument is not None and isinstance(argument[0], str):
            return node.left.value % argument[0]
    return None


def loop_module(expr: ast.expr, node: ast.AST, values) -> str:
    """The module a ``requires_grad`` change is about: ``p`` in ``for p in
    model.bert.parameters():`` is ``model.bert``, ``layer`` in ``for layer in
    model.layers[:8]:`` is ``model.layers[:8]``; anything else as written."""
    text = ast.unparse(expr)
    parent = values.paths.parent(node)
    while parent is not None and not isinstance(parent, (ast.For, ast.FunctionDef)):
        if isinstance(parent, ast.If):
            return text  # a condition picks the parameters (by name): not followed
        parent = values.paths.parent(parent)
    if (
        isinstance(parent, ast.For)
        and isinstance(parent.target, ast.Name)
        and isinstance(expr, ast.Name)
        and parent.target.id == expr.id
    ):
        source = parent.iter
        if (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Attribute)
            and source.func.attr == "parameters"
        ):
            return ast.unparse(source.func.value)
        if not isinstance(source, ast.Call):
            return ast.unparse(source)
    return text
