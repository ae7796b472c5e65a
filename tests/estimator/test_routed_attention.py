"""A mixture of attention heads (JetMoE's MoA) counted from its config's fields (issue 27).

Counted as dense attention, JetMoE's routed q / o experts were -14% of its parameters at the
oracle's cut and its training step -18% (bench/oracle_memory.py, the jetmoe rows). The
parameters are held to the installed transformers' own model built on the meta device, the
saved bytes to what bench/oracle_breakdown.py listed on real CPU tensors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from torchward.estimator.activations import saved_terms_per_token  # noqa: E402
from torchward.estimator.architecture import from_config  # noqa: E402
from torchward.estimator.paramcount import decoder_params, decoder_shape  # noqa: E402
from torchward.estimator.precision import numerics  # noqa: E402
from torchward.estimator.shape import shape_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _fields(**changes) -> dict:
    config = transformers.JetMoeConfig(**changes)
    fields = config.to_dict()
    fields.pop("architectures", None)
    return fields


def _model(fields: dict):
    with torch.device("meta"):
        return transformers.JetMoeForCausalLM(transformers.JetMoeConfig(**fields))


@pytest.mark.parametrize(
    "changes",
    [
        dict(num_hidden_layers=2),
        # another expert count, top-k and KV width: JetMoeConfig derives the heads from them
        dict(num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=1, kv_channels=64),
        dict(num_hidden_layers=3, num_key_value_heads=8, tie_word_embeddings=False),
    ],
)
def test_parameters_equal_the_model_built_from_the_same_fields(changes) -> None:
    fields = _fields(**changes)
    model = _model(fields)
    assert decoder_params("jetmoe", fields) == sum(p.numel() for p in model.parameters())
    assert from_config(fields, name="jetmoe").params == sum(p.numel() for p in model.parameters())


def test_one_layers_linear_weights_are_its_experts_and_kv_projection() -> None:
    """What 4/8-bit loading would quantise: every expert matrix and the dense projections."""
    fields = _fields(num_hidden_layers=2)
    layer = _model(fields).model.layers[0]
    matrices = sum(p.numel() for name, p in layer.named_parameters() if p.dim() >= 2)
    routers = sum(p.numel() for name, p in layer.named_parameters() if "router" in name)
    stack = shape_of(from_config(fields, name="jetmoe")).stacks[0]
    assert stack.linear_params_per_layer() == matrices - routers


def test_only_jetmoe_of_the_installed_config_defaults_reads_as_a_mixture_of_heads() -> None:
    """The signal (routed experts, ``kv_channels``, heads = KV heads × top-k) against every
    default config: Qwen3-MoE and others match the head arithmetic with ``head_dim``, Zamba2
    has ``kv_channels`` without experts."""
    found = set()
    for model_type in transformers.CONFIG_MAPPING:
        try:
            fields = transformers.CONFIG_MAPPING[model_type]().to_dict()
            shape = decoder_shape(model_type, fields)
        except Exception:  # noqa: BLE001 - configs that do not build, or are no decoder
            continue
        if shape.get("attention_experts"):
            found.add(model_type)
    assert found == {"jetmoe"}


def test_training_saves_what_the_oracle_breakdown_listed() -> None:
    """jetmoe at the oracle's cut (bench/oracle_memory.py ``family_config``: widths / 8, 4
    layers), pure bf16, SDPA: ``bench/oracle_breakdown.py jetmoe --batch 4 --dtype bf16``
    listed per token per layer, around the attention, the gathered inputs and outputs of the
    q and o experts (2,048 + 2,048 + 1,024 gate-weighted), the rotated q (1,024), the cache's
    K and V (1,024), their repeated copies (2,048), the kernel's output (1,024 + 16 of fp32
    logsumexp) and the router's indices and gates (60): 10,316; in the MoE block the gathered
    input, the experts' output and its weighted copy (1,024 each), the gate-and-up output
    (5,632), the activation and the product (2,816 each) and its router (60): 14,396."""
    spec_path = ROOT / "bench" / "oracle_memory.py"
    import importlib.util

    spec = importlib.util.spec_from_file_location("oracle_memory", spec_path)
    assert spec and spec.loader
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    fields = json.loads(json.dumps(oracle.family_config("jetmoe", "decoder"), default=str))
    stack = shape_of(from_config(fields, name="jetmoe")).stacks[0]
    terms = saved_terms_per_token(stack, numerics("bf16"), eager=False, context=512)
    assert terms["attention"] == pytest.approx(10_316, abs=16)  # less the logsumexp
    assert terms["mlp"] == 14_396


def test_dense_attention_is_unchanged_by_the_mixture_of_heads_count() -> None:
    """Mixtral (routed feed-forward experts, dense attention) is not read as one."""
    config = transformers.MixtralConfig(num_hidden_layers=2)
    fields = config.to_dict()
    with torch.device("meta"):
        model = transformers.MixtralForCausalLM(config)
    assert decoder_shape("mixtral", fields)["attention_experts"] is None
    assert decoder_params("mixtral", fields) == sum(p.numel() for p in model.parameters())


def test_eager_attention_training_matches_its_real_cpu_measurement(tmp_path) -> None:
    """The same cut trained with ``attention="eager"`` (the calibration harness's
    ``measure.run_one`` on real CPU tensors, as bench/oracle_memory.py runs the REAL_CPU
    families, with ``"attention": "eager"`` in the job): 585,787,904 bytes at its peak
    (backward). The eager kernel saves q, the repeated K and V and the scores, not the
    output (the o experts' gather takes it); the estimate was +0.8%."""
    import importlib.util

    from torchward.estimator.costmodel import workspace_bytes
    from torchward.estimator.estimate import estimate
    from torchward.estimator.runconfig import Field, RunConfig

    spec = importlib.util.spec_from_file_location("oracle_memory", ROOT / "bench/oracle_memory.py")
    assert spec and spec.loader
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    (tmp_path / "config.json").write_text(
        json.dumps(oracle.family_config("jetmoe", "decoder"), default=str)
    )
    fields = dict(
        model=Field(str(tmp_path), "--model"),
        mode=Field("train", "--mode"),
        dtype=Field("bf16", "--dtype"),
        batch_size=Field(4, "--batch-size"),
        seq_len=Field(512, "--seq-len"),
        attention=Field("eager", "--attention"),
        optimizer=Field("adamw", "--optimizer"),
    )
    ours = estimate(RunConfig(**fields)).allocated - 2 * workspace_bytes(None)
    assert ours == pytest.approx(585_787_904, rel=0.02)
