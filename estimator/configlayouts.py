"""Where a config puts its structure, moved to where the counts read it.

The counts (:mod:`.paramcount`, :mod:`.visioncount`, :mod:`.cnn`) read a config's top-level
fields by their common names. Some configs say the same things elsewhere: DBRX nests its
experts and KV heads in block configs, and transformers' ResNet and ConvNeXt configs describe
the torchvision networks of the same layout that have a table. This module is that one
translation, kept apart from :mod:`.architecture` (which resolves names and builds the
entry) so that each reading of a layout is in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def as_counted(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """(config, model_type) as the counts read them: nested block fields lifted
    (:func:`_lifted`), and a transformers CNN config of a torchvision layout as that layout's
    entry (any other layout keeps its own model_type, counted or refused as unknown)."""
    model_type = str(config.get("model_type") or "unknown")
    config = _lifted(config)
    if model_type in _TORCHVISION_LAYOUTS:
        layout_type, layout_of = _TORCHVISION_LAYOUTS[model_type]
        layout = layout_of(config)
        if layout is not None:
            return layout, layout_type
    return config, model_type


def _torchvision_resnet(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """transformers' ``resnet`` config as the torchvision ResNet of the same layout: a 64-wide
    stem, stages of ``depths`` blocks whose widths double from 64 × the block's expansion
    (``hidden_sizes``), a 1000-way head; None for any other layout (counted as unknown)."""
    kind = config.get("layer_type", "bottleneck")
    expansion = {"bottleneck": 4, "basic": 1}.get(str(kind))
    depths, widths = config.get("depths"), config.get("hidden_sizes")
    if expansion is None or not isinstance(depths, list) or not isinstance(widths, list):
        return None
    layout = [64 * expansion * 2**k for k in range(len(depths))]
    if config.get("embedding_size", 64) != 64 or widths != layout or len(depths) != 4:
        return None
    block = "bottleneck" if expansion == 4 else "basic"
    # ACT2FN's ReLU is a new tensor, torchvision's is in place
    return {"block": block, "layers": list(depths), "inplace_relu": False}


def _torchvision_convnext(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """transformers' ``convnext`` config as the torchvision ConvNeXt of the same layout (the
    same layers: a 4×4 patch stem and LayerNorm, 7×7 depthwise blocks with two linears and a
    layer scale, a LayerNorm and 2×2 conv between stages, a 1000-way head): ``hidden_sizes``
    are its ``dims``; None for any other layout (counted as unknown)."""
    depths, widths = config.get("depths"), config.get("hidden_sizes")
    if not isinstance(depths, list) or not isinstance(widths, list) or len(depths) != len(widths):
        return None
    if config.get("patch_size", 4) != 4 or config.get("num_channels", 3) != 3:
        return None
    return {"dims": list(widths), "depths": list(depths)}


# Fields a config nests under a block's own config (DBRX: ``attn_config``, ``ffn_config``),
# with the names the counts read them by; the top level wins where both say.
_NESTED_FIELDS = {
    "attn_config": {"kv_n_heads": "num_key_value_heads"},
    "ffn_config": {
        "ffn_hidden_size": "intermediate_size",
        "moe_num_experts": "num_local_experts",
        "moe_top_k": "num_experts_per_tok",
        "ffn_act_fn": "hidden_act",
    },
}


def _lifted(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``config`` with the fields of its nested block configs (:data:`_NESTED_FIELDS`) at the
    top level, so that DBRX's experts, their width and its KV heads are counted (they were
    read as one dense 4·h MLP: -29% of its parameters); an activation given as
    ``{"name": "silu"}`` becomes its name."""
    lifted: dict[str, Any] = {}
    for block, names in _NESTED_FIELDS.items():
        nested = config.get(block)
        if not isinstance(nested, Mapping):
            continue
        for name, as_name in names.items():
            value = nested.get(name)
            if isinstance(value, Mapping):
                value = value.get("name")
            if value is not None and config.get(as_name) is None:
                lifted[as_name] = value
    return dict(config, **lifted) if lifted else config


_TORCHVISION_LAYOUTS = {
    "resnet": ("torchvision-resnet", _torchvision_resnet),
    "convnext": ("torchvision-convnext", _torchvision_convnext),
}
