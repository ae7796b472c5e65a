"""The parameter count of one ``torch.nn`` layer from its constructor's arguments.

Each formula follows the layer's ``reset_parameters`` / ``__init__`` in torch (2.x):
weights and biases only, buffers (BatchNorm's running statistics) are not parameters.
A size that cannot be followed raises :class:`Unknown`.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from ..syntax.names import qualified_name

__all__ = ["Unknown", "layer_params"]

_TENSORS = {"zeros", "ones", "randn", "rand", "empty", "full", "Tensor", "FloatTensor"}


class Unknown(Exception):
    """A value the counter cannot follow."""


class _Arguments(dict):
    """A layer's arguments by name. One the counter could not follow is kept as
    :data:`_UNFOLLOWED` and raises :class:`Unknown` only when a formula reads it: an
    LSTM's ``dropout=dropout if num_layers > 1 else 0`` or a conv's ``padding`` size
    nothing."""

    def __getitem__(self, name: str) -> Any:
        found = super().__getitem__(name)
        if found is _UNFOLLOWED:
            raise Unknown
        return found


_UNFOLLOWED = object()


def _arguments(
    node: ast.Call, counter, env: dict, names: tuple[str, ...], defaults: dict[str, Any]
) -> dict[str, Any]:
    values = _Arguments(defaults)
    written = [*zip(names, node.args), *((k.arg, k.value) for k in node.keywords)]
    for name, arg in written:
        if name in names:
            try:
                values[name] = counter.value(arg, env)
            except Unknown:
                values[name] = _UNFOLLOWED
    missing = [n for n in names if n not in values]
    if missing:
        raise Unknown
    return values


def _product(value: Any, dims: int = 1) -> int:
    if isinstance(value, (tuple, list)):
        return math.prod(int(v) for v in value)
    return int(value) ** dims


def layer_params(tail: str, node: ast.Call, counter, env: dict) -> int:
    a = lambda names, **d: _arguments(node, counter, env, names, d)  # noqa: E731
    if tail == "Linear":
        v = a(("in_features", "out_features", "bias"), bias=True)
        return v["in_features"] * v["out_features"] + (v["out_features"] if v["bias"] else 0)
    if tail == "Bilinear":
        v = a(("in1_features", "in2_features", "out_features", "bias"), bias=True)
        return v["in1_features"] * v["in2_features"] * v["out_features"] + (
            v["out_features"] if v["bias"] else 0
        )
    if tail.startswith(("Conv", "ConvTranspose")) and tail[-2:] in ("1d", "2d", "3d"):
        v = a(
            (
                "in_channels",
                "out_channels",
                "kernel_size",
                "stride",
                "padding",
                "output_padding",
                "groups",
                "bias",
            )
            if "Transpose" in tail
            else (
                "in_channels",
                "out_channels",
                "kernel_size",
                "stride",
                "padding",
                "dilation",
                "groups",
                "bias",
            ),
            groups=1,
            bias=True,
            stride=1,
            padding=0,
            dilation=1,
            output_padding=0,
        )
        kernel = _product(v["kernel_size"], int(tail[-2]))
        return v["in_channels"] * v["out_channels"] // v["groups"] * kernel + (
            v["out_channels"] if v["bias"] else 0
        )
    if tail in ("Embedding", "EmbeddingBag"):
        v = a(("num_embeddings", "embedding_dim"))
        return v["num_embeddings"] * v["embedding_dim"]
    if tail == "LayerNorm":
        v = a(
            ("normalized_shape", "eps", "elementwise_affine", "bias"),
            eps=0,
            elementwise_affine=True,
            bias=True,
        )
        n = _product(v["normalized_shape"])
        return (n + (n if v["bias"] else 0)) if v["elementwise_affine"] else 0
    if tail == "RMSNorm":
        v = a(("normalized_shape", "eps", "elementwise_affine"), eps=0, elementwise_affine=True)
        return _product(v["normalized_shape"]) if v["elementwise_affine"] else 0
    if tail.startswith(("BatchNorm", "SyncBatchNorm", "InstanceNorm")):
        affine = not tail.startswith("InstanceNorm")
        v = a(("num_features", "eps", "momentum", "affine"), eps=0, momentum=0, affine=affine)
        return 2 * v["num_features"] if v["affine"] else 0
    if tail == "GroupNorm":
        v = a(("num_groups", "num_channels", "eps", "affine"), eps=0, affine=True)
        return 2 * v["num_channels"] if v["affine"] else 0
    if tail == "MultiheadAttention":
        v = a(
            (
                "embed_dim",
                "num_heads",
                "dropout",
                "bias",
                "add_bias_kv",
                "add_zero_attn",
                "kdim",
                "vdim",
            ),
            dropout=0,
            bias=True,
            add_bias_kv=False,
            add_zero_attn=False,
            kdim=None,
            vdim=None,
        )
        e = v["embed_dim"]
        kdim, vdim = v["kdim"] or e, v["vdim"] or e
        return (
            e * e
            + e * kdim
            + e * vdim
            + e * e
            + (4 * e if v["bias"] else 0)
            + (2 * e if v["add_bias_kv"] else 0)
        )
    if tail in ("LSTM", "GRU", "RNN"):
        v = a(
            (
                "input_size",
                "hidden_size",
                "num_layers",
                "bias",
                "batch_first",
                "dropout",
                "bidirectional",
            ),
            num_layers=1,
            bias=True,
            batch_first=False,
            dropout=0,
            bidirectional=False,
        )
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[tail]
        h, dirs = v["hidden_size"], 2 if v["bidirectional"] else 1
        total = 0
        for layer in range(v["num_layers"]):
            width = v["input_size"] if layer == 0 else h * dirs
            total += dirs * (gates * h * (width + h) + (2 * gates * h if v["bias"] else 0))
        return total
    if tail in ("LSTMCell", "GRUCell", "RNNCell"):
        v = a(("input_size", "hidden_size", "bias"), bias=True)
        gates = {"LSTMCell": 4, "GRUCell": 3, "RNNCell": 1}[tail]
        h = v["hidden_size"]
        return gates * h * (v["input_size"] + h) + (2 * gates * h if v["bias"] else 0)
    if tail == "Parameter" and node.args and isinstance(node.args[0], ast.Call):
        inner = node.args[0]
        if (qualified_name(inner.func, counter.imports) or "").rsplit(".", 1)[-1] in _TENSORS:
            sizes = [counter.value(s, env) for s in inner.args if not isinstance(s, ast.Starred)]
            if len(sizes) == 1 and isinstance(sizes[0], tuple):
                sizes = list(sizes[0])
            if tail == "Parameter" and all(isinstance(s, int) for s in sizes):
                return math.prod(sizes)
    raise Unknown
