"""From a partial :class:`RunConfig` to a complete one, naming every value we had to assume.

A missing input is never silently defaulted: each assumption becomes a field with
source ``assumed`` and low confidence, is listed in :attr:`Resolved.missing`, and carries
an optimistic and a pessimistic alternative (:data:`ALTERNATIVES`) that the cost model
evaluates to widen its interval. A model given only as a parameter count (``--params
7B``) borrows the structure of the catalog decoder nearest in size — said in the output.
"""

from __future__ import annotations

from typing import Any

import attrs

from . import dependencies
from .architecture import Architecture, all_architectures, lookup_model, read_config_json
from .localmodels import from_hf_cache, lookup_user_model
from .names import UnknownNameError, normalize
from .runconfig import Field, RunConfig, parse_param_count
from .shape import ModelShape, shape_of
from .units import count_text

__all__ = ["Resolved", "resolve", "unknown_fields"]

UNSIZED_LAYERS_SPREAD = 0.5  # a workspace nn.Module with layers whose sizes could not be followed
Models = tuple[tuple[str, str], ...]  # (name, JSON record) pairs, see .localmodels


@attrs.frozen
class Resolved:
    config: RunConfig
    arch: Architecture
    shape: ModelShape
    model_label: str
    missing: tuple[str, ...]
    """Fields that were assumed (each is in ``config`` with source ``assumed``)."""
    notes: tuple[str, ...] = ()
    proxy: bool = False
    """The structure is borrowed from another checkpoint (only a parameter count was given)."""
    widen: float = 0.0
    """Extra relative allowance on the high end (a workspace module with unsized layers)."""


def _max_positions(arch: Architecture) -> int | None:
    c = arch.config
    return c.get("max_position_embeddings") or c.get("n_positions")


def max_positions(r: Resolved) -> int | None:
    """The longest sequence the model can take: learned / absolute positions only (rotary
    and ALiBi models extrapolate, so their config's figure is not a hard limit)."""
    c = r.arch.config
    if r.arch.model_type in ("gpt2", "bert", "roberta", "distilbert", "opt", "bart", "xlm-roberta"):
        value = c.get("max_position_embeddings") or c.get("n_positions")
        if r.arch.model_type in ("roberta", "xlm-roberta") and value:
            value -= 2  # RoBERTa's position ids start after the padding index
        return int(value) if value else None
    return None


def _defaults(arch: Architecture, mode: str, shape: ModelShape) -> dict[str, Any]:
    positions = _max_positions(arch) or 2048
    seq = min(positions, 512 if shape.kind in ("encoder", "encoder-decoder") else 2048)
    training = mode == "train"
    return {
        "batch_size": 8 if training else 1,
        "seq_len": seq,
        "image_size": shape.image_size or 224,
        "max_new_tokens": 256,
        "num_beams": 1,
        "use_cache": True,
        "dtype": "amp-bf16" if training else "bf16",
        "optimizer": "adamw",
        "checkpointing": False,
        "attention": "eager" if shape.eager_only else "sdpa",
        "sharding": "none",
        "offload": "none",
        "gpus": 1,
        "accumulation": 1,
        "grads_persist": False,
    }


# name → (optimistic, pessimistic) alternative for an assumed value; callables get the default.
ALTERNATIVES = {
    "batch_size": (lambda d: 1, lambda d: d * 4),
    "seq_len": (lambda d: min(d, 128), lambda d: d * 2),
    # a CIFAR-sized input at the optimistic end: an image size nobody gave is a real unknown
    "image_size": (lambda d: min(d, 32), lambda d: d),
    "max_new_tokens": (lambda d: 1, lambda d: d * 8),
    "dtype": (lambda d: "bf16", lambda d: "fp32"),
    "optimizer": (lambda d: "sgd", lambda d: "adamw"),
}
# models whose patch / position embeddings take one input side only (remedies.image_limits)
_FIXED_SIDE = ("vision-transformer", "clip", "diffusion-transformer")
# assumptions that make an estimate low-confidence
_CRITICAL = ("batch_size", "seq_len", "image_size", "dtype")

# where the script would say each field, for the "unknown" answer (one place: the CLI and
# the JSON the hover reads both show it)
_WHERE_READ = {
    "mode": "a training loop (loss.backward(), optimizer.step()) or a generate() call",
    "batch_size": "a DataLoader's batch_size, or a --batch-size flag's default",
    "seq_len": "a tokenizer's max_length, a block_size, or a --seq-len flag's default",
    "image_size": (
        "a torchvision dataset (MNIST, CIFAR10, ...) or a Resize / RandomResizedCrop / "
        "CenterCrop transform"
    ),
    "dtype": "torch.autocast, a GradScaler, or 16-bit weights (.half(), torch_dtype=)",
    "optimizer": "a torch.optim / bitsandbytes optimizer built in the script",
    "attention": (
        "attn_implementation= where a transformers model is loaded, or the attention the "
        "model's forward calls"
    ),
    "max_new_tokens": "generate(max_new_tokens=...)",
}


def _from_script_config(model: str, structure: dict[str, Any], source: str) -> Architecture:
    """A transformers model built from a config the script writes
    (:mod:`torchward.analysis.job.runconfig_hfconfig`): the config class's default checkpoint
    with the script's fields laid over its config.json."""
    base = lookup_model(str(structure["defaults_of"]))
    fields = {k: v for k, v in structure.items() if k not in ("model_type", "defaults_of")}
    return Architecture(
        name=model,
        family=base.family,
        model_type=base.model_type,
        config={**base.config, **fields},
        note=(
            f"a {base.model_type} built from the script's config ({source}); what it does not "
            f"set is {base.name}'s, as its config class defaults"
        ),
    )


def _find_arch(config: RunConfig, models: Models = ()) -> tuple[Architecture, str, bool, list[str]]:
    """User entries, then a local config.json path, the catalog, the offline HF cache."""
    notes: list[str] = []
    model = config.value("model")
    structure = config.value("structure")
    if model is not None and isinstance(structure, dict) and "defaults_of" in structure:
        assert config.structure is not None
        arch = _from_script_config(str(model), structure, config.structure.source)
        notes.append(arch.note)
        return arch, str(model), False, notes
    if (
        model is not None
        and config.params is not None
        and config.structure is not None
        and isinstance(structure, dict)
    ):
        # an nn.Module the script defines, with a recognisable decoder structure in its config
        arch = Architecture(
            name=str(model),
            family=str(structure["model_type"]),
            model_type=str(structure["model_type"]),
            config=dict(structure),
            note=(
                f"nn.Module defined in the workspace ({config.structure.source}); activations "
                + (
                    "modelled from its convolution / pooling stack in construction order "
                    "(approximate)"
                    if structure["model_type"] == "script-cnn"
                    else f"modelled as a {structure['model_type']}-style decoder of that "
                    "shape (approximate)"
                )
            ),
        )
        notes.append(arch.note)
        return arch, str(model), False, notes
    if model is not None and config.params is not None:
        # both from one layer: only the script reader sets both, for an nn.Module it counted
        arch = Architecture(
            name=str(model),
            family="custom",
            model_type="custom",
            config={},
            note=f"nn.Module defined in the workspace ({config.params.source})",
        )
        return arch, str(model), False, notes
    if model is not None:
        text = str(model)
        arch = lookup_user_model(text, models)
        if arch is not None:
            notes.append(f"{arch.name}: structure {arch.note}")
        elif dependencies.exists(text):
            arch = read_config_json(text)
            notes.append(f"structure read from {text}")
            if arch.note:  # what the count read from it (an unknown family, other towers)
                notes.append(arch.note)
        else:
            unknown: UnknownNameError | None = None
            try:
                arch = lookup_model(text)
            except UnknownNameError as error:
                unknown = error
            if arch is None or ("/" in text and normalize(arch.hf_id or "") != normalize(text)):
                # ORG/NAME the catalog knows only by a looser spelling: the cached config.json
                # of exactly that repository is the better answer
                cached = from_hf_cache(text)
                if cached is not None:
                    arch = cached
                    notes.append(arch.note)
                elif unknown is not None:
                    raise unknown
        return arch, arch.name, False, notes
    params = config.value("params")
    if params is None:
        raise LookupError("no model: give --model ID or --params N (or a script that names one)")
    count = parse_param_count(params)
    if config.image_size is not None and config.seq_len is None:
        # an image job: a language model's shapes would invent activations (a 1.3 GiB CNN
        # job had been estimated at 248 GiB); weights and state only, said as unknown
        arch = Architecture(
            name=f"{count_text(count)}-parameter model",
            family="custom",
            model_type="custom",
            config={},
            note="only a parameter count is known for an image model",
        )
        notes.append(
            f"only a parameter count ({count:,}) is known for an image model: no layer "
            "shapes are borrowed"
        )
        return arch, arch.name, False, notes
    decoders = [a for a in all_architectures() if a.kind == "decoder" and not a.is_moe]
    proxy = min(decoders, key=lambda a: abs(a.params - count))
    notes.append(
        f"only a parameter count ({count:,}) is known: layer shapes borrowed from "
        f"{proxy.name} ({proxy.params:,} parameters), activations are approximate"
    )
    return proxy, f"{count_text(count)}-parameter model", True, notes


def resolve(config: RunConfig, models: Models = ()) -> Resolved:
    """Complete ``config``: architecture found, every missing field assumed and named.

    ``models``: the user's own entries (``EstimatorSettings.models``), looked up first.
    """
    arch, label, proxy, notes = _find_arch(config, models)
    widen = 0.0
    if arch.model_type == "custom":
        shape = ModelShape(
            "custom",
            parse_param_count(config.value("params")),
            note=f"{label}: parameters counted from its layer constructors",
        )
        if config.params.confidence == "low":  # layers it could not size: the high end widens
            widen = UNSIZED_LAYERS_SPREAD
            notes.append(
                f"{label}: some layers could not be sized; the high end allows "
                f"{UNSIZED_LAYERS_SPREAD:.0%} more"
            )
    else:
        shape = shape_of(arch)
    if proxy:
        count = parse_param_count(config.value("params"))
        shape = attrs.evolve(shape, params=count)
    elif config.params is not None and arch.model_type != "custom":
        shape = attrs.evolve(shape, params=parse_param_count(config.value("params")))
    mode = config.value("mode")
    assumed: dict[str, Field] = {}
    if mode is None:
        mode = "train"
        assumed["mode"] = Field(mode, "assumed", "low")
    for name, value in _defaults(arch, mode, shape).items():
        if getattr(config, name) is None:
            if name == "image_size" and shape.kind in (
                "decoder",
                "encoder",
                "encoder-decoder",
                "custom",
            ):
                continue
            if name == "seq_len" and shape.kind not in ("decoder", "encoder", "encoder-decoder"):
                continue
            if name == "attention" and not shape.stacks:
                continue  # no attention layers torchward models (a CNN, a custom module)
            if name in ("max_new_tokens", "num_beams", "use_cache") and mode != "generate":
                continue
            if name in ("optimizer", "accumulation", "grads_persist") and mode != "train":
                continue
            if name == "image_size" and shape.image_size and shape.kind in _FIXED_SIDE:
                # its position embeddings fix the input: the model's config says the size
                source = f"{label}'s config (its position embeddings fix the input size)"
                assumed[name] = Field(shape.image_size, source, "medium")
                continue
            assumed[name] = Field(value, "assumed", "low")
    if (
        shape.kind in ("decoder", "encoder", "encoder-decoder")
        and "seq_len" in assumed
        and mode == "generate"
        and config.max_context is not None
    ):
        new = config.value("max_new_tokens", assumed.get("max_new_tokens", Field(0, "")).value)
        assumed["seq_len"] = Field(
            max(1, int(config.value("max_context")) - int(new)),
            "max_context - max_new_tokens",
            "high",
        )
    filled = attrs.evolve(config, **assumed)
    silent = {
        "num_beams",
        "use_cache",
        "sharding",
        "offload",
        "gpus",
        "accumulation",
        "grads_persist",
        "checkpointing",
    }  # the ordinary default: named in config, not a warning
    missing = tuple(n for n, f in assumed.items() if n not in silent and f.source == "assumed")
    if not shape.stacks and shape.cnn is not None and shape.kind != "cnn":
        notes.append(shape.note)
    return Resolved(filled, arch, shape, label, missing, tuple(notes), proxy, widen)


def is_critical(name: str) -> bool:
    return name in _CRITICAL


def unknown_fields(r: Resolved) -> list[dict[str, Any]]:
    """Each assumed field: what was assumed, where the script would have said it, and how
    the user gives it (the estimate command's flag, the same key under
    ``[tool.torchward.estimate]``)."""
    out = []
    for name in r.missing:
        key = name.replace("_", "-")
        value = r.config.value(name)
        number = isinstance(value, int) and not isinstance(value, bool)
        out.append(
            {
                "field": name,
                "assumed": value,
                "read_from": _WHERE_READ.get(name),
                "give": (
                    f"--{key} {'N' if number else 'VALUE'} or `{key} = ...` under "
                    "[tool.torchward.estimate]"
                ),
            }
        )
    return out
