"""transformers' own vision configs read as what they build (issue 27's oracle families)."""

from __future__ import annotations

import json

import pytest
from torchward.estimator.activations import saved_terms_per_token
from torchward.estimator.architecture import from_config
from torchward.estimator.paramcount import MissingFieldError
from torchward.estimator.precision import numerics
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig

# transformers 5.25's ResNetConfig() defaults: ResNet-50's layout
HF_RESNET = {
    "model_type": "resnet",
    "num_channels": 3,
    "embedding_size": 64,
    "hidden_sizes": [256, 512, 1024, 2048],
    "depths": [3, 4, 6, 3],
    "layer_type": "bottleneck",
    "hidden_act": "relu",
}


def test_transformers_resnet_is_counted_as_the_torchvision_resnet_of_its_layout() -> None:
    arch = from_config(HF_RESNET, name="resnet")
    assert arch.model_type == "torchvision-resnet"
    assert arch.params == 25_557_032  # torchvision's resnet50 (and microsoft/resnet-50)
    basic = dict(HF_RESNET, layer_type="basic", hidden_sizes=[64, 128, 256, 512], depths=[2] * 4)
    assert from_config(basic, name="r18").params == 11_689_512  # torchvision's resnet18


def test_an_unusual_resnet_layout_is_not_taken_for_torchvision_s() -> None:
    """A layout torchvision's ResNet does not have stays a one-line refusal."""
    wide = dict(HF_RESNET, hidden_sizes=[512, 1024, 2048, 4096])
    with pytest.raises(MissingFieldError, match="model_type 'resnet'"):
        from_config(wide, name="wide")


def test_dinov2_s_layer_scales_save_two_projection_outputs(tmp_path) -> None:
    fields = {
        "model_type": "dinov2",
        "hidden_size": 768,
        "num_hidden_layers": 4,
        "num_attention_heads": 12,
        "mlp_ratio": 4,
        "patch_size": 14,
        "image_size": 518,
        "layerscale_value": 1.0,
        "hidden_act": "gelu",
    }
    (tmp_path / "config.json").write_text(json.dumps(fields))
    config = RunConfig(
        model=Field(str(tmp_path), "--model"),
        mode=Field("train", "--mode"),
        dtype=Field("amp-bf16", "--dtype"),
        batch_size=Field(2, "--batch-size"),
        image_size=Field(224, "--image-size"),
    )
    stack = resolve(config).shape.stacks[0]
    assert stack.layer_scale
    terms = saved_terms_per_token(stack, numerics("amp-bf16"), eager=False, context=257)
    assert terms["layer scales"] == 2 * 2 * 768
