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
