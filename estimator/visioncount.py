"""Parameter counts of vision and diffusion models, from the builders' own arguments.

The formulas follow the reference implementations line by line — torchvision's
``resnet.py`` / ``convnext.py`` / ``efficientnet.py``, HF ``modeling_vit.py`` /
``modeling_clip.py``, diffusers' ``UNet2DConditionModel`` and the DiT paper's model — so
that a catalog entry needs only the arguments a user would pass to those builders.
BatchNorm counts weight and bias (running statistics are buffers, not parameters).
Each catalog entry with a published count is tested against these within 1%.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["VISION_TYPES", "vision_params"]

Config = Mapping[str, Any]


def vit_params(cfg: Config) -> int:
    """HF ViT: ``ViTForImageClassification`` when ``num_labels`` > 0, else ``ViTModel``."""
    h, inner = cfg["hidden_size"], cfg["intermediate_size"]
    patch, image = cfg["patch_size"], cfg["image_size"]
    tokens = (image // patch) ** 2 + 1
    n = cfg.get("num_channels", 3) * patch * patch * h + h  # patch projection
    n += h + tokens * h  # [CLS] token, learned positions
    n += cfg["num_hidden_layers"] * _pre_ln_block(h, inner) + 2 * h  # + final LayerNorm
    labels = cfg.get("num_labels", 0)
    if labels:
        n += h * labels + labels
    elif cfg.get("add_pooling_layer", True):
        n += h * h + h
    return n


def _pre_ln_block(h: int, inner: int) -> int:
    return 4 * (h * h + h) + (h * inner + inner) + (inner * h + h) + 2 * (2 * h)


def clip_params(cfg: Config) -> int:
    """HF ``CLIPModel``: text tower, vision tower, both projections, logit scale."""
    t, v, proj = cfg["text_config"], cfg["vision_config"], cfg["projection_dim"]
    d = t["hidden_size"]
    text = t["vocab_size"] * d + t.get("max_position_embeddings", 77) * d
    text += t["num_hidden_layers"] * _pre_ln_block(d, t["intermediate_size"]) + 2 * d + d * proj
    dv, patch = v["hidden_size"], v["patch_size"]
    tokens = (v["image_size"] // patch) ** 2 + 1
    vision = (
        3 * patch * patch * dv + dv + tokens * dv + 2 * dv
    )  # conv (no bias), class, pos, pre-LN
    vision += v["num_hidden_layers"] * _pre_ln_block(dv, v["intermediate_size"]) + 2 * dv
    vision += dv * proj
    return text + vision + 1


def resnet_params(cfg: Config) -> int:
    """torchvision ResNet / ResNeXt / Wide ResNet (``block``, ``layers``, ``groups``, ``width_per_group``)."""
    bottleneck = cfg["block"] == "bottleneck"
    expansion = 4 if bottleneck else 1
    groups, base_width = cfg.get("groups", 1), cfg.get("width_per_group", 64)
    n = 3 * 64 * 49 + 2 * 64  # conv1 7x7 + bn1
    inplanes = 64
    for stage, blocks in enumerate(cfg["layers"]):
        planes = 64 * 2**stage
        for b in range(blocks):
            out = planes * expansion
            if bottleneck:
                width = int(planes * (base_width / 64.0)) * groups
                n += inplanes * width + 2 * width + width * width // groups * 9 + 2 * width
                n += width * out + 2 * out
            else:
                n += inplanes * planes * 9 + 2 * planes + planes * planes * 9 + 2 * planes
            if b == 0 and (stage > 0 or inplanes != out):
                n += inplanes * out + 2 * out  # downsample 1x1 conv + bn
            inplanes = out
    classes = cfg.get("num_classes", 1000)
    return n + inplanes * classes + classes


def convnext_params(cfg: Config) -> int:
    """torchvision ConvNeXt (``dims``, ``depths``)."""
    dims, depths = cfg["dims"], cfg["depths"]
    n = 3 * dims[0] * 16 + dims[0] + 2 * dims[0]  # 4x4 stem conv + LayerNorm2d
    for i, (d, depth) in enumerate(zip(dims, depths)):
        block = d * 49 + d + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d) + d  # + layer scale
        n += depth * block
        if i + 1 < len(dims):
            n += 2 * d + d * dims[i + 1] * 4 + dims[i + 1]  # LayerNorm2d + 2x2 conv
    classes = cfg.get("num_classes", 1000)
    return n + 2 * dims[-1] + dims[-1] * classes + classes


# EfficientNet-B0 stages as in torchvision: expand ratio, kernel, stride, in, out, layers.
_B0_STAGES = (
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
)


def _divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def efficientnet_params(cfg: Config) -> int:
    """torchvision EfficientNet-B0..B7 (``width_mult``, ``depth_mult``)."""
    wm, dm = cfg["width_mult"], cfg["depth_mult"]
    stem = _divisible(32 * wm)
    n = 3 * stem * 9 + 2 * stem
    last = stem
    for expand, kernel, _stride, cin, cout, layers in _B0_STAGES:
        cin, cout = _divisible(cin * wm), _divisible(cout * wm)
        for i in range(int(math.ceil(layers * dm))):
            inp = cin if i == 0 else cout
            exp = _divisible(inp * expand)
            if exp != inp:
                n += inp * exp + 2 * exp
            squeeze = max(1, inp // 4)
            n += exp * kernel * kernel + 2 * exp  # depthwise conv + bn
            n += (exp * squeeze + squeeze) + (squeeze * exp + exp)  # squeeze-excitation
            n += exp * cout + 2 * cout  # projection + bn
        last = cout
    head = 4 * last
    classes = cfg.get("num_classes", 1000)
    return n + last * head + 2 * head + head * classes + classes


def _resnet_block(cin: int, cout: int, temb: int) -> int:
    n = 2 * cin + cin * cout * 9 + cout + temb * cout + cout + 2 * cout + cout * cout * 9 + cout
    return n + (cin * cout + cout if cin != cout else 0)


def _transformer(c: int, layers: int, cross: int) -> int:
    block = 2 * c + 3 * c * c + c * c + c  # norm1, self-attention (q, k, v no bias; out)
    block += 2 * c + c * c + 2 * cross * c + c * c + c  # norm2, cross-attention
    block += 2 * c + (c * 8 * c + 8 * c) + (4 * c * c + c)  # norm3, GEGLU feed-forward
    return 2 * c + (c * c + c) + layers * block + (c * c + c)  # GroupNorm, proj_in/out


def unet_params(cfg: Config) -> int:
    """diffusers ``UNet2DConditionModel`` (SD 1.x / 2.x / XL configs)."""
    ch, per_block = cfg["block_out_channels"], cfg["layers_per_block"]
    cross, temb = cfg["cross_attention_dim"], 4 * ch[0]
    tl = cfg.get("transformer_layers_per_block", 1)
    tl = list(tl) if isinstance(tl, (list, tuple)) else [tl] * len(ch)
    attn = [t.startswith("CrossAttn") for t in cfg["down_block_types"]]
    c_in, c_out = cfg.get("in_channels", 4), cfg.get("out_channels", 4)
    n = c_in * ch[0] * 9 + ch[0]
    n += (ch[0] * temb + temb) + (temb * temb + temb)  # time embedding MLP
    if cfg.get("addition_embed_type") == "text_time":
        extra = cfg["projection_class_embeddings_input_dim"]
        n += (extra * temb + temb) + (temb * temb + temb)
    prev = ch[0]
    for i, c in enumerate(ch):
        for j in range(per_block):
            n += _resnet_block(prev if j == 0 else c, c, temb)
            n += _transformer(c, tl[i], cross) if attn[i] else 0
        prev = c
        if i + 1 < len(ch):
            n += c * c * 9 + c  # downsampler
    n += 2 * _resnet_block(ch[-1], ch[-1], temb) + _transformer(ch[-1], tl[-1], cross)
    rev, rev_tl, rev_attn = ch[::-1], tl[::-1], attn[::-1]
    out = rev[0]
    for i, c in enumerate(rev):
        prev_out, out = out, c
        skip_in = rev[min(i + 1, len(ch) - 1)]
        for j in range(per_block + 1):
            skip = skip_in if j == per_block else out
            n += _resnet_block((prev_out if j == 0 else out) + skip, out, temb)
            n += _transformer(out, rev_tl[i], cross) if rev_attn[i] else 0
        if i + 1 < len(ch):
            n += out * out * 9 + out  # upsampler
    return n + 2 * ch[0] + ch[0] * c_out * 9 + c_out


def dit_params(cfg: Config) -> int:
    """DiT (Peebles & Xie 2023): adaLN-Zero blocks, class-conditional, learned sigma."""
    h = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    p, c_in = cfg["patch_size"], cfg.get("in_channels", 4)
    c_out = cfg.get("out_channels", 2 * c_in)
    block = (
        (3 * h * h + 3 * h)
        + (h * h + h)
        + (h * 4 * h + 4 * h)
        + (4 * h * h + h)
        + (h * 6 * h + 6 * h)
    )
    n = c_in * p * p * h + h  # patch embedding (positions are fixed sin-cos buffers)
    n += (256 * h + h) + (h * h + h)  # timestep embedder
    n += (cfg.get("num_embeds_ada_norm", 1000) + 1) * h  # class embedding with a null class
    n += cfg["num_layers"] * block
    return n + (h * 2 * h + 2 * h) + (h * p * p * c_out + p * p * c_out)  # final adaLN + linear


_COUNTERS = {
    "vit": vit_params,
    "clip": clip_params,
    "torchvision-resnet": resnet_params,
    "torchvision-convnext": convnext_params,
    "torchvision-efficientnet": efficientnet_params,
    "diffusers-unet": unet_params,
    "dit": dit_params,
    # a CNN a script defines: its parameters were counted from its constructors
    "script-cnn": lambda cfg: int(cfg["params"]),
}
VISION_TYPES = frozenset(_COUNTERS)


def vision_params(model_type: str, cfg: Config) -> int:
    return _COUNTERS[model_type](cfg)
