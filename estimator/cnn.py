"""Activations of torchvision CNNs, by walking the network the way torchvision builds it.

For training, what matters is the tensors autograd saves: every convolution's input,
every BatchNorm's input, and ReLU's output (torchvision's ReLUs are in place, so the
BatchNorm output and the ReLU output are one storage). The walk below counts those, block
by block, at each block's spatial resolution. For ResNet-50 at 224² it gives 21.3 M
elements per image; the T4 measurements in ``shared/calibration/t4_measured_peaks.json``
(batch 16 → 32 under AMP) imply 22.6 M (45 MB per image at 2 bytes), so the walk is
within 6% before workspaces.

For inference, the live set is the current block's input, output and a temporary: about
three times the largest tensor of the network.

Returned counts are *elements*; the caller multiplies by the activation dtype size.
"""

from __future__ import annotations

import math

from .architecture import Architecture
from .visioncount import _B0_STAGES, _divisible

__all__ = ["cnn_activation_elements", "input_resolution", "is_modelled"]


def is_modelled(arch: Architecture) -> bool:
    return arch.model_type in (
        "torchvision-resnet",
        "torchvision-convnext",
        "torchvision-efficientnet",
        "script-cnn",
    )


def _resnet(cfg, image: int) -> tuple[int, int]:
    bottleneck = cfg["block"] == "bottleneck"
    expansion = 4 if bottleneck else 1
    base_width, groups = cfg.get("width_per_group", 64), cfg.get("groups", 1)
    side = image // 2
    stem = 64 * side * side
    saved = 3 * image * image + 2 * stem  # input, conv1 out, bn1/relu out
    side = math.ceil(side / 2)
    saved += 64 * side * side  # maxpool output (its int64 indices: see below)
    saved += 4 * 64 * side * side  # maxpool indices are int64: 4 × a 2-byte element
    largest = stem
    inplanes = 64
    for stage, blocks in enumerate(cfg["layers"]):
        planes = 64 * 2**stage
        width = int(planes * base_width / 64) * groups if bottleneck else planes
        out = planes * expansion
        for b in range(blocks):
            in_side = side
            if b == 0 and stage > 0:
                side = math.ceil(side / 2)
            s_in, s = in_side * in_side, side * side
            if bottleneck:  # conv1, bn1/relu at input res; conv2, bn2, conv3 at output res
                saved += 2 * width * s_in + 2 * width * s + out * s + out * s
            else:
                saved += 2 * planes * s + planes * s + out * s
            if b == 0 and (stage > 0 or inplanes != out):
                saved += out * s  # downsample conv output (saved by its BatchNorm)
            largest = max(largest, out * s, width * s_in)
            inplanes = out
    return saved, largest


def _convnext(cfg, image: int) -> tuple[int, int]:
    dims, depths = cfg["dims"], cfg["depths"]
    side = image // 4
    saved = 3 * image * image + 2 * dims[0] * side * side
    largest = 0
    for i, (d, depth) in enumerate(zip(dims, depths)):
        s = side * side
        # block: dwconv out, LayerNorm out, Linear1 out (4d), GELU out (4d), Linear2 out,
        # layer-scale product; plus the block input saved by the dwconv
        saved += depth * (d * s * 5 + 8 * d * s)
        largest = max(largest, 4 * d * s)
        if i + 1 < len(dims):
            saved += 2 * d * s
            side //= 2
    return saved, largest


def _efficientnet(cfg, image: int) -> tuple[int, int]:
    wm, dm = cfg["width_mult"], cfg["depth_mult"]
    side = image // 2
    stem = _divisible(32 * wm)
    saved = 3 * image * image + 3 * stem * side * side
    largest = stem * side * side
    for expand, _kernel, stride, cin, cout, layers in _B0_STAGES:
        cin, cout = _divisible(cin * wm), _divisible(cout * wm)
        for i in range(int(math.ceil(layers * dm))):
            inp = cin if i == 0 else cout
            exp = _divisible(inp * expand)
            s_in = side * side
            if i == 0 and stride == 2:
                side = math.ceil(side / 2)
            s = side * side
            # expand conv, bn, SiLU (not in place) at input res; depthwise, bn, SiLU, SE
            # product at output res; projection conv and bn; stochastic depth mask
            saved += (3 * exp * s_in if exp != inp else 0) + 4 * exp * s + 2 * cout * s
            largest = max(largest, exp * s_in)
    return saved, largest


def _side(side: int, kernel: int, stride: int, pad: int) -> int:
    return max(1, (side + 2 * pad - kernel) // max(stride, 1) + 1)


def _walk_layers(layers, c: int, side: int) -> tuple[int, int, int, int]:
    """(saved, largest, channels, side) after ``layers`` (see :func:`_script_cnn`)."""
    saved = largest = 0
    previous = ""
    for layer in layers:
        kind = layer[0]
        if kind == "conv":
            _, cin, cout, k, stride, pad = layer
            if cin > c:  # its input is wider than the tensor before it: a concatenation with
                saved += cin * side * side  # a skip connection (UNet up block), a new tensor
            side, c = _side(side, k, stride, pad), cout
            saved += c * side * side  # its output: saved by the BatchNorm / ReLU / next conv
        elif kind == "convT":
            _, _cin, cout, k, stride, pad = layer
            side, c = max(1, (side - 1) * stride - 2 * pad + k), cout
            saved += c * side * side
        elif kind == "upsample":
            side *= layer[1]
            saved += c * side * side
        elif kind == "bn":
            saved += c * side * side  # its output (shared with an in-place ReLU after it)
        elif kind == "relu":
            if previous not in ("bn", "conv", "add"):
                saved += c * side * side
        elif kind in ("maxpool", "avgpool"):
            _, k, stride, pad = layer
            side = _side(side, k, stride, pad)
            saved += c * side * side * (5 if kind == "maxpool" else 1)  # + int64 indices
        elif kind == "adaptive":
            side = layer[1]
            saved += c * side * side
        elif kind == "linear":
            c, side = layer[2], 1
            saved += c
        elif kind == "dropout":
            saved += c * side * side // 2  # the 1-byte mask (in 2-byte element units)
        elif kind == "block":
            entry_c, entry_side = c, side
            s_main, l_main, c, side = _walk_layers(layer[1], c, side)
            s_short, l_short, _, _ = _walk_layers(layer[2], entry_c, entry_side)
            out = c * side * side
            # a path ending in BatchNorm feeds only the sum, which saves nothing: those BN
            # outputs are not kept; the activation after the sum is (counted as the sum)
            ends = sum(1 for path in (layer[1], layer[2]) if path and path[-1][0] == "bn")
            saved += s_main + s_short - ends * out + out
            largest = max(largest, l_main, l_short)
            kind = "add"
        largest = max(largest, c * side * side)
        previous = kind
    return saved, largest, c, side


def _script_cnn(cfg, image: int) -> tuple[int, int]:
    """A CNN a script defines, as the reader traced it (``analysis/job/moduletrace.py``): its
    layers in construction order — convolutions (a convolution wider than its input reads a
    concatenation with a skip connection), transposed convolutions and upsampling,
    BatchNorm, ReLU, pooling, linear, and residual blocks with their shortcut — walked at the
    image's resolution. Approximate:
    construction order stands for the forward's order."""
    c = int(cfg.get("in_channels", 3))
    saved, largest, _, _ = _walk_layers(cfg["layers"], c, image)
    return saved + c * image * image, max(largest, c * image * image)


_WALKS = {
    "script-cnn": _script_cnn,
    "torchvision-resnet": _resnet,
    "torchvision-convnext": _convnext,
    "torchvision-efficientnet": _efficientnet,
}


def cnn_activation_elements(arch: Architecture, image: int) -> tuple[int, int]:
    """(elements saved for backward per image, largest single activation per image)."""
    return _WALKS[arch.model_type](arch.config, image)


def _strides(layers) -> tuple[int, bool]:
    """(product of the down-sampling strides, a linear layer reads a flattened map whose
    size the input fixes: no adaptive pooling before it)."""
    step, adaptive = 1, False
    for layer in layers:
        kind = layer[0]
        if kind == "conv":
            step *= max(int(layer[4]), 1)
        elif kind in ("maxpool", "avgpool"):
            step *= max(int(layer[2]), 1)
        elif kind == "adaptive":
            adaptive = True
        elif kind == "linear" and not adaptive:
            return step, True
        elif kind == "block":
            inner, fixed = _strides(layer[1])
            if fixed:
                return step, True
            step *= inner
    return step, False


def input_resolution(arch: Architecture) -> tuple[int, bool]:
    """(step, fixed): the image side must be a multiple of ``step`` (the network's total
    down-sampling: torchvision's CNNs halve it five times; a script's UNet concatenates its
    up path with its down path, which needs every stage's side to divide evenly); ``fixed``:
    only the side the model was built for works (a ``Linear`` after ``Flatten`` with no
    adaptive pooling reads a map whose size the input decides, as in PyTorch's MNIST Net)."""
    if arch.model_type == "script-cnn":
        return _strides(arch.config.get("layers", ()))
    return 32, False
