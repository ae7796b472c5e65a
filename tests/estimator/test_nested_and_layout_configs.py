"""Configs whose structure sits where the generic count did not look (issue 27, oracle gaps).

DBRX nests its experts, their width and its KV heads under ``ffn_config`` / ``attn_config``
(they were read as one dense 4·h MLP: -29% of the parameters); transformers' ConvNeXt gives
its stage widths as ``hidden_sizes`` (it was refused: no hidden size); JetMoE names its head
width ``kv_channels`` (its KV cache was counted at half its size). Each count is held to the
installed transformers' own model, built on the meta device from the config class's defaults.
"""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from torchward.estimator.architecture import from_config  # noqa: E402


def _params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def _defaults(model_type: str, **changes) -> dict:
    config = transformers.CONFIG_MAPPING[model_type]()
    for name, value in changes.items():
        setattr(config, name, value)
    fields = config.to_dict()
    fields.pop("architectures", None)
    return fields


def test_dbrx_experts_nested_in_ffn_config_are_counted() -> None:
    fields = _defaults("dbrx", n_layers=2)
    fields["attn_config"]["rope_theta"] = 10000.0  # DbrxConfig() lacks what its model reads
    with torch.device("meta"):
        model = transformers.DbrxForCausalLM(transformers.DbrxConfig(**fields))
    assert from_config(fields, name="dbrx").params == _params(model)


def test_transformers_convnext_is_counted_as_its_torchvision_layout() -> None:
    fields = _defaults("convnext", num_labels=1000)
    with torch.device("meta"):
        model = transformers.ConvNextForImageClassification(transformers.ConvNextConfig(**fields))
    arch = from_config(fields, name="convnext")
    assert arch.model_type == "torchvision-convnext"
    assert arch.params == _params(model)


def test_convnext_with_another_stem_is_refused_not_taken_for_torchvision() -> None:
    from torchward.estimator.paramcount import MissingFieldError

    fields = _defaults("convnext", patch_size=2)
    with pytest.raises(MissingFieldError, match="hidden size"):
        from_config(fields, name="convnext")


def test_kv_channels_is_the_head_width_of_the_kv_cache() -> None:
    from torchward.estimator.paramcount import decoder_shape

    fields = _defaults("jetmoe")
    assert fields["kv_channels"] * fields["num_attention_heads"] != fields["hidden_size"]
    assert decoder_shape("jetmoe", fields)["head_dim"] == fields["kv_channels"]


def test_convnext_training_saves_what_the_oracle_breakdown_listed() -> None:
    """transformers' ConvNeXt at the oracle's cut (``hidden_sizes`` / 8, bf16, b8 × 224²;
    ``bench/oracle_breakdown.py convnext --batch 8 --seq 224 --dtype bf16``) kept 54,190,080
    bytes of block tensors at the backward's start — convolution, LayerNorm, linear, GELU
    and residual-sum outputs: 3,386,880 bf16 elements per image — and each LayerNorm's mean
    and rstd over 20,923 pixels per image (681,984 bytes in bf16 on the CPU; fp32 on a GPU,
    which the walk counts: four 16-bit elements per pixel). The walk had been 13 elements
    per block channel, not 12 (the layer-scale product is the block's output or is dropped,
    never a tensor beside it): +13.1% on the oracle's training row."""
    from torchward.estimator.cnn import cnn_activation_elements

    fields = _defaults("convnext", num_labels=1000)
    fields["hidden_sizes"] = [w // 8 for w in fields["hidden_sizes"]]
    arch = from_config(fields, name="convnext")
    pixels = 3 * 224 * 224
    saved, _largest = cnn_activation_elements(arch, 224)
    assert saved == pixels + 3_386_880 + 4 * 20_923


def test_convnext_inference_peak_is_the_widest_blocks_four_tensors() -> None:
    """The same cut's no-grad forward (``bench/oracle_breakdown.py convnext --batch 8 --seq
    224 --dtype bf16 --mode inference``) peaked in the first stage's GELU with the first
    linear's and GELU's outputs (2,408,448 bytes each), the LayerNorm's output and the block's
    input (602,112 each): 376,320 bf16 elements per image, 2.5 × the largest tensor, where the
    ResNet-fitted rule charged 2.35 × (the oracle's inference row: -4.3%)."""
    from torchward.estimator.cnn import cnn_activation_elements, inference_live_elements

    fields = _defaults("convnext", num_labels=1000)
    fields["hidden_sizes"] = [w // 8 for w in fields["hidden_sizes"]]
    arch = from_config(fields, name="convnext")
    live = inference_live_elements(arch, 224, autocast=False)
    assert live == (2 * 2_408_448 + 2 * 602_112) // 2 // 8
    assert live == 2.5 * cnn_activation_elements(arch, 224)[1]
    assert (
        inference_live_elements(
            from_config(_defaults("resnet"), name="resnet"), 224, autocast=False
        )
        is None
    )
