"""The layer sequence of a CNN a script defines, for the estimator's activation model.

:class:`~.modulecount.ModuleCounter` counts parameters; this walks the same constructors
in order and writes down the layers that shape activations: ``Conv2d`` (channels, kernel,
stride, padding), ``ConvTranspose2d`` and ``Upsample`` (UNet up blocks), ``BatchNorm2d``,
``ReLU``-like activations, pooling, ``Linear``,
``Dropout``, and residual blocks — a local module class with a ``shortcut`` /
``downsample`` / ``skip`` attribute, whose shortcut runs from the block's input. The
sequence is the order of construction, which stands for the forward's order (what the
estimate calls approximate). A layer whose sizes cannot be followed, or a layer outside
this list that holds parameters, makes the trace ``None``: no activation model is better
than a wrong one.
"""

from __future__ import annotations

import ast
from typing import Any

from ..syntax.names import qualified_name
from .modulecount import ModuleCounter, _bind
from .modulelayers import Unknown

__all__ = ["trace_cnn", "traced_params"]

_ACTIVATIONS = {"ReLU", "ReLU6", "LeakyReLU", "SiLU", "GELU", "ELU", "Mish", "Hardswish"}
_SHORTCUT_NAMES = ("shortcut", "downsample", "skip", "residual", "proj")
_IGNORED = {"Flatten", "Identity", "Softmax", "LogSoftmax", "CrossEntropyLoss", "Sigmoid"}


class _Untraceable(Exception):
    pass


class _ClassRef(dict):
    """A local class passed as a value (``self._make_layer(BasicBlock, 64, 2)``): its
    class-level constants as keys (``block.expansion``)."""

    def __init__(self, name: str, node: ast.ClassDef) -> None:
        super().__init__()
        self.name = name
        for stmt in node.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant)
            ):
                self[stmt.targets[0].id] = stmt.value.value


def trace_cnn(
    counter: ModuleCounter, name: str, args: list[Any], kwargs: dict[str, Any]
) -> list | None:
    """The layers of ``name(*args, **kwargs)`` or ``None`` when it is not a traceable CNN."""
    try:
        layers = _Tracer(counter).class_layers(name, args, kwargs, depth=0)
    except (_Untraceable, Unknown, RecursionError, TypeError, ValueError, ZeroDivisionError):
        return None
    if not any(layer[0] == "conv" for layer in _flatten(layers)):
        return None
    return layers


def traced_params(layers: list) -> int:
    """Parameters of the traced layers (conv weights, BatchNorm affine, Linear with bias);
    a convolution's bias is not in the trace, so this is a floor for biased convolutions."""
    total, channels = 0, 0
    for layer in _flatten(layers):
        if layer[0] in ("conv", "convT"):
            _, cin, cout, k, _s, _p = layer
            total += cin * cout * k * k
            channels = cout
        elif layer[0] == "bn":
            total += 2 * channels
        elif layer[0] == "linear":
            total += layer[1] * layer[2] + layer[2]
            channels = layer[2]
    return total


def _flatten(layers: list) -> list:
    out = []
    for layer in layers:
        if layer[0] == "block":
            out += _flatten(layer[1]) + _flatten(layer[2])
        else:
            out.append(layer)
    return out


class _Tracer:
    def __init__(self, counter: ModuleCounter) -> None:
        self.counter = counter
        self.cls: ast.ClassDef | None = None  # the class whose methods self.x() finds
        self.returned: list | None = None  # what the method being traced returned

    def class_layers(self, name: str, args, kwargs, depth: int) -> list:
        if depth > 6 or name not in self.counter.classes:
            raise _Untraceable(name)
        node, owner = self.counter.classes[name]
        init = next(
            (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"),
            None,
        )
        if init is None:
            raise _Untraceable(name)
        env = dict(owner.constants)
        env.update({n: _ClassRef(n, c) for n, (c, _) in self.counter.classes.items()})
        env.update(_bind(init.args, list(args), dict(kwargs), owner))
        main: list = []
        shortcut: list = []
        lists: dict[str, list] = {}
        outer, self.cls = self.cls, node
        try:
            self._statements(init.body, env, lists, main, shortcut, owner, depth)
        finally:
            self.cls = outer
        if shortcut or self._has_shortcut(node):
            return [["block", main, shortcut]]  # an identity shortcut is a block too
        return main

    @staticmethod
    def _has_shortcut(node: ast.ClassDef) -> bool:
        return any(
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
            and any(word in n.attr.lower() for word in _SHORTCUT_NAMES)
            for n in ast.walk(node)
        )

    def _statements(self, body, env, lists, main, shortcut, owner, depth) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                key = ast.unparse(target)
                if isinstance(stmt.value, ast.List) and not stmt.value.elts:
                    lists[key] = []  # layers = []: filled by append below
                    continue
                try:
                    env[key] = self.value(stmt.value, env, owner)
                    if isinstance(target, ast.Name):
                        env[target.id] = env[key]
                    continue
                except Unknown:
                    pass
                layers = self.expr(stmt.value, env, lists, owner, depth)
                if layers is None:
                    continue
                if isinstance(target, ast.Name):
                    lists[target.id] = layers
                elif any(word in key.lower() for word in _SHORTCUT_NAMES):
                    shortcut.extend(layers)
                else:
                    main.extend(layers)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                func = stmt.value.func
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in ("append", "extend")
                    and isinstance(func.value, ast.Name)
                    and func.value.id in lists
                    and stmt.value.args
                ):
                    lists[func.value.id].extend(
                        self.expr(stmt.value.args[0], env, lists, owner, depth)
                    )
                elif not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
                    continue  # super().__init__(), self.apply(init): no layers
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                self.returned = self.expr(stmt.value, env, lists, owner, depth)
                return
            elif isinstance(stmt, ast.AugAssign):
                continue
            elif isinstance(stmt, ast.If):
                try:
                    test = self.value(stmt.test, env, owner)
                except Unknown:
                    raise _Untraceable("if") from None
                branch = stmt.body if test else stmt.orelse
                self._statements(branch, env, lists, main, shortcut, owner, depth)
            elif isinstance(stmt, ast.For):
                from .modulecount import _range

                bounds = _range(stmt.iter, env, owner)
                items = range(*bounds) if bounds is not None else self.value(stmt.iter, env, owner)
                if not isinstance(stmt.target, ast.Name) or not isinstance(items, (range, tuple)):
                    raise _Untraceable("for")
                for item in items:
                    env[stmt.target.id] = item
                    self._statements(stmt.body, env, lists, main, shortcut, owner, depth)

    def value(self, node: ast.AST, env: dict, owner: ModuleCounter) -> Any:
        """A plain value; adds list arithmetic (``[stride] + [1] * (n - 1)``) to the counter's."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = self.value(node.left, env, owner), self.value(node.right, env, owner)
            if isinstance(left, tuple) or isinstance(right, tuple):
                if (
                    isinstance(node.op, ast.Add)
                    and isinstance(left, tuple)
                    and isinstance(right, tuple)
                ):
                    return left + right
                if isinstance(node.op, ast.Mult):
                    seq, times = (left, right) if isinstance(left, tuple) else (right, left)
                    if isinstance(times, int):
                        return seq * times
                raise Unknown
        if isinstance(node, (ast.List, ast.Tuple)):
            return tuple(self.value(e, env, owner) for e in node.elts)
        if isinstance(node, ast.BoolOp):
            operands = [self.value(v, env, owner) for v in node.values]
            return all(operands) if isinstance(node.op, ast.And) else any(operands)
        return owner.value(node, env)

    def expr(self, node, env, lists, owner, depth) -> list:
        if isinstance(node, ast.Name) and node.id in lists:
            return list(lists[node.id])
        if isinstance(node, (ast.List, ast.Tuple)):
            return [layer for e in node.elts for layer in self.expr(e, env, lists, owner, depth)]
        if isinstance(node, ast.Starred):
            return self.expr(node.value, env, lists, owner, depth)
        if isinstance(node, ast.Call):
            return self.call(node, env, lists, owner, depth)
        raise _Untraceable(ast.unparse(node)[:30])

    def call(self, node: ast.Call, env, lists, owner, depth) -> list:
        local = node.func.id if isinstance(node.func, ast.Name) else None
        if local and isinstance(env.get(local), _ClassRef):
            local = env[local].name  # a block class passed in as a parameter
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            return self.method(func.attr, node, env, owner, depth)
        if local in self.counter.modules or (local and local in owner.classes):
            args = [self.value(a, env, owner) for a in node.args]
            kwargs = {k.arg: self.value(k.value, env, owner) for k in node.keywords if k.arg}
            return self.class_layers(local, args, kwargs, depth + 1)
        qualified = qualified_name(node.func, owner.imports) or ""
        tail = qualified.rsplit(".", 1)[-1]
        if not qualified.startswith("torch.nn."):
            raise _Untraceable(qualified or ast.unparse(node.func))
        if tail in ("Sequential", "ModuleList"):
            return [layer for a in node.args for layer in self.expr(a, env, lists, owner, depth)]
        values = [self.value(a, env, owner) for a in node.args]
        keywords = {k.arg: self.value(k.value, env, owner) for k in node.keywords if k.arg}
        if tail == "Conv2d":
            names = ("in_channels", "out_channels", "kernel_size", "stride", "padding")
            bound = dict(zip(names, values))
            bound.update({k: v for k, v in keywords.items() if k in names})
            groups = keywords.get("groups", 1)
            if groups != 1 or keywords.get("dilation", 1) != 1:
                raise _Untraceable("grouped or dilated conv")
            k, stride, pad = (
                _square(bound.get("kernel_size")),
                _square(bound.get("stride", 1)),
                _square(bound.get("padding", 0)),
            )
            return [["conv", bound["in_channels"], bound["out_channels"], k, stride, pad]]
        if tail == "ConvTranspose2d":
            names = ("in_channels", "out_channels", "kernel_size", "stride", "padding")
            bound = dict(zip(names, values))
            bound.update({k: v for k, v in keywords.items() if k in names})
            if keywords.get("groups", 1) != 1 or keywords.get("output_padding", 0):
                raise _Untraceable("grouped transposed conv")
            return [
                [
                    "convT",
                    bound["in_channels"],
                    bound["out_channels"],
                    _square(bound.get("kernel_size")),
                    _square(bound.get("stride", 1)),
                    _square(bound.get("padding", 0)),
                ]
            ]
        if tail == "Upsample":
            scale = keywords.get("scale_factor", values[1] if len(values) > 1 else None)
            return [["upsample", _square(int(scale) if isinstance(scale, float) else scale)]]
        if tail == "BatchNorm2d":
            return [["bn"]]
        if tail in _ACTIVATIONS:
            return [["relu"]]
        if tail in ("MaxPool2d", "AvgPool2d"):
            k = _square(values[0] if values else keywords["kernel_size"])
            stride = values[1] if len(values) > 1 else keywords.get("stride") or k
            pad = values[2] if len(values) > 2 else keywords.get("padding", 0)
            kind = "maxpool" if tail == "MaxPool2d" else "avgpool"
            return [[kind, k, _square(stride), _square(pad)]]
        if tail == "AdaptiveAvgPool2d":
            return [["adaptive", _square(values[0] if values else keywords["output_size"])]]
        if tail == "Linear":
            return [["linear", values[0], values[1]]]
        if tail in ("Dropout", "Dropout2d"):
            return [["dropout"]]
        if tail in _IGNORED:
            return []
        raise _Untraceable(tail)

    def method(self, name: str, node: ast.Call, env, owner, depth) -> list:
        """``self._make_layer(block, planes, blocks, stride)``: its statements run with the
        instance's values (``self.in_planes`` updates carry over) and what it returns."""
        body = self.cls.body if self.cls is not None else []
        method = next((s for s in body if isinstance(s, ast.FunctionDef) and s.name == name), None)
        if method is None or depth > 6:
            raise _Untraceable(f"self.{name}")
        args = [self.value(a, env, owner) for a in node.args]
        kwargs = {k.arg: self.value(k.value, env, owner) for k in node.keywords if k.arg}
        local = dict(env)
        local.update(_bind(method.args, args, kwargs, owner))
        self.returned = None
        main: list = []
        self._statements(method.body, local, {}, main, [], owner, depth + 1)
        for key, value in local.items():  # the instance's attributes it set
            if key.startswith("self."):
                env[key] = value
        return self.returned if self.returned is not None else main


def _square(value: Any) -> int:
    if isinstance(value, (tuple, list)):
        if len(set(value)) != 1:
            raise _Untraceable("non-square")
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Untraceable("size")
    return value
