"""The architecture catalog: sizes, computed counts against published ones, look-ups."""

from __future__ import annotations

import json

import pytest
from torchward.estimator.architecture import (
    Architecture,
    all_architectures,
    lookup_model,
    read_config_json,
    spellings,
)
from torchward.estimator.names import UnknownNameError, normalize

CATALOG = all_architectures()
PUBLISHED = [a for a in CATALOG if a.published_params]
REQUIRED_FAMILIES = {
    "llama-2",
    "llama-3",
    "llama-3.1",
    "llama-3.2",
    "llama-3.3",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2.5",
    "qwen3",
    "qwen3-moe",
    "deepseek-v2",
    "deepseek-v3",
    "gemma",
    "gemma-2",
    "gemma-3",
    "phi",
    "phi-3",
    "phi-4",
    "gpt-2",
    "pythia",
    "falcon",
    "olmo",
    "bert",
    "roberta",
    "deberta-v3",
    "distilbert",
    "t5",
    "flan-t5",
    "bart",
    "whisper",
    "vit",
    "resnet",
    "convnext",
    "efficientnet",
    "clip",
    "stable-diffusion",
    "dit",
}


def test_catalog_holds_at_least_120_checkpoints_across_30_families():
    assert len(CATALOG) >= 120
    assert len({a.family for a in CATALOG}) >= 30


def test_every_family_the_issue_names_is_present():
    assert REQUIRED_FAMILIES <= {a.family for a in CATALOG}


def test_every_attention_and_model_kind_is_represented():
    kinds = {a.kind for a in CATALOG}
    assert {
        "decoder",
        "encoder",
        "encoder-decoder",
        "vision-transformer",
        "cnn",
        "clip",
        "diffusion-unet",
        "diffusion-transformer",
    } <= kinds
    decoders = [a for a in CATALOG if a.kind == "decoder"]
    heads = [
        (a.config.get("num_attention_heads"), a.config.get("num_key_value_heads")) for a in decoders
    ]
    assert any(kv == 1 for _, kv in heads), "MQA"
    assert any(kv and q and 1 < kv < q for q, kv in heads), "GQA"
    assert any("kv_lora_rank" in a.config for a in decoders), "MLA"
    assert any(a.is_moe for a in decoders), "MoE"


@pytest.mark.parametrize("arch", PUBLISHED, ids=lambda a: a.name)
def test_computed_count_matches_the_published_count_within_one_percent(arch: Architecture):
    error = abs(arch.params - arch.published_params) / arch.published_params
    if error <= 0.01:
        return
    # A figure published with two digits ("1.7B") cannot be matched closer than its
    # rounding; such entries must say so and land within half the rounding unit.
    assert arch.published_precision and arch.note, (
        f"{arch.name} is {error:.2%} off and says nothing"
    )
    assert abs(arch.params - arch.published_params) <= arch.published_precision / 2


@pytest.mark.parametrize("arch", PUBLISHED, ids=lambda a: a.name)
def test_every_published_count_names_its_source(arch: Architecture):
    assert arch.published_source and len(arch.published_source) > 10


@pytest.mark.parametrize(
    "arch", [a for a in CATALOG if not a.published_params], ids=lambda a: a.name
)
def test_an_entry_without_a_published_count_says_why(arch: Architecture):
    assert arch.note


def test_shared_calibration_counts_are_all_reproduced_exactly():
    expected = {
        "gpt2": 124439808,
        "bert-base-uncased": 109482240,
        "roberta-base": 124645632,
        "distilbert-base-uncased": 66362880,
        "llama-2-70b": 68976648192,
        "llama-3-70b": 70553706496,
        "qwen2-7b": 7615616512,
        "vit-large-patch16-224": 304326632,
    }
    for name, count in expected.items():
        assert lookup_model(name).params == count


def test_opt_350m_embeds_at_512_and_has_no_final_layer_norm():
    """OPT-350m, unlike its siblings, embeds tokens at 512 and projects them in and out of
    its 1024 hidden size (no bias), and is post-LN without a final layer norm. Counted by
    hand from transformers' module tree: embeddings 50272 x 512, positions 2050 x 1024,
    project_in and project_out 2 x 512 x 1024, and 24 layers of four attention projections
    with bias 4 x (1024^2 + 1024), fc1 and fc2 with bias (1024 x 4096 + 4096) + (4096 x
    1024 + 1024) and two LayerNorms 2 x 2 x 1024: 331,196,416."""
    assert lookup_model("facebook/opt-350m").params == 331_196_416
    assert lookup_model("opt-125m").params == 125_239_296  # same widths: no projection


@pytest.mark.parametrize(
    "name, total, active",
    [
        ("mixtral-8x7b", 46.7e9, 12.9e9),
        ("qwen3-30b-a3b", 30.5e9, 3.3e9),
        ("qwen3-235b-a22b", 235e9, 22e9),
        ("deepseek-v3", 671e9, 37e9),
        ("phi-3.5-moe", 41.9e9, 6.6e9),
    ],
)
def test_moe_models_report_total_and_active_parameters(name, total, active):
    arch = lookup_model(name)
    assert arch.params == pytest.approx(total, rel=0.01)
    assert arch.active_params == pytest.approx(active, rel=0.03)


def test_no_two_entries_share_a_lookup_key():
    owners: dict[str, str] = {}
    for arch in CATALOG:
        for spelling in spellings(arch):
            owner = owners.setdefault(normalize(spelling), arch.name)
            assert owner == arch.name, f"{spelling!r} names both {owner} and {arch.name}"


@pytest.mark.parametrize(
    "spelling, name",
    [
        ("meta-llama/Llama-2-7b-hf", "llama-2-7b"),
        ("llama-2-7b", "llama-2-7b"),
        ("Llama 2 7B", "llama-2-7b"),
        ("llama2_7b", "llama-2-7b"),
        ("Llama-2-7b-hf", "llama-2-7b"),
        ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
        ("resnet50", "resnet50"),
        ("torchvision.models.resnet50", "resnet50"),
        ("microsoft/resnet-50", "resnet50"),
        ("vit_b_16", "vit-base-patch16-224"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
        ("openai/whisper-large-v3", "whisper-large-v3"),
        ("google/flan-t5-xl", "flan-t5-xl"),
        ("gpt2", "gpt2"),
        ("some-org/Mistral-7B-v0.1", "mistral-7b-v0.1"),
    ],
)
def test_a_model_is_found_by_hf_id_short_name_alias_or_torchvision_name(spelling, name):
    assert lookup_model(spelling).name == name


def test_an_unknown_model_raises_with_close_suggestions_and_no_count():
    with pytest.raises(UnknownNameError) as err:
        lookup_model("llama-2-8b")
    assert "llama-2-7b" in err.value.candidates
    assert "did you mean" in str(err.value)


def test_a_local_config_json_is_read_into_the_same_structure(tmp_path):
    config = dict(
        lookup_model("llama-3-8b").config,
        model_type="llama",
        _name_or_path="my-org/my-llama",
        architectures=["LlamaForCausalLM"],
    )
    (tmp_path / "config.json").write_text(json.dumps(config))
    arch = read_config_json(tmp_path)
    assert (arch.model_type, arch.kind, arch.name) == ("llama", "decoder", "my-org/my-llama")
    assert arch.params == 8030261248
    assert read_config_json(tmp_path / "config.json").params == arch.params


def test_a_multimodal_config_is_read_through_to_its_language_model(tmp_path):
    text = dict(lookup_model("gemma-3-4b").config, model_type="gemma3_text")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gemma3", "text_config": text}))
    arch = read_config_json(tmp_path, name="gemma-3-4b-it")
    assert arch.params == lookup_model("gemma-3-4b").params
    assert "text tower of a 'gemma3' checkpoint" in arch.note


def test_a_config_json_missing_a_field_the_count_needs_is_refused_naming_it(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 768}))
    with pytest.raises(
        ValueError, match="'mamba'.*missing structural field: attention heads"
    ) as refused:
        read_config_json(tmp_path)
    assert isinstance(refused.value, LookupError)  # the CLI's configuration error, exit 2
    assert "\n" not in str(refused.value)
