"""What the job is: the run configuration, each field with where it came from.

The estimator never guesses silently. Every field of :class:`RunConfig` is either absent
(``None``: the cost model names it as missing and widens its interval) or a
:class:`Field` that carries its value, its *source* (``train.py:12``, ``--batch-size``,
``default``) and a *confidence*. The script reader (``torchward.analysis.job.runconfig``),
the command line and the settings all produce the same value type, and
:meth:`RunConfig.merged` lays one over another (flags over settings over script), so the
order of precedence lives in one place.

The vocabulary of each field is closed (:data:`DTYPES`, :data:`OPTIMIZERS`, ...): a value
outside it is an error at the boundary, not a surprise inside the arithmetic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = [
    "ATTENTIONS",
    "CONFIDENCES",
    "DTYPES",
    "FIELD_NAMES",
    "MODES",
    "OPTIMIZERS",
    "QUANTIZE",
    "SHARDINGS",
    "Field",
    "RunConfig",
    "parse_param_count",
]

MODES = ("train", "inference", "generate")
DTYPES = ("fp32", "amp-bf16", "amp-fp16", "bf16", "fp16")
OPTIMIZERS = (
    "adamw",
    "adam",
    "adamw-fused",
    "sgd",
    "sgd-momentum",
    "adadelta",
    "adagrad",
    "rmsprop",
    "rmsprop-momentum",
    "rmsprop-centered",
    "rmsprop-momentum-centered",
    "adafactor",
    "adamw-8bit",
    "paged-adamw",
    "paged-adamw-8bit",
    "lion",
)
ATTENTIONS = ("eager", "sdpa", "flash", "math")  # math: SDPA's math path (fused kernels off)
QUANTIZE = ("8bit", "4bit")
SHARDINGS = ("none", "ddp", "zero-1", "zero-2", "zero-3", "fsdp", "fsdp-grad-op")
OFFLOADS = ("none", "optimizer", "optimizer+params")
CONFIDENCES = ("high", "medium", "low")


@attrs.frozen
class Field:
    """One configuration value and its provenance."""

    value: Any
    source: str
    """``path:line`` for a value read from a file, ``--flag`` for the command line,
    ``settings`` for ``[tool.torchward]``, ``assumed`` for a default the output names."""
    confidence: str = "high"

    def to_dict(self) -> dict:
        return {"value": self.value, "source": self.source, "confidence": self.confidence}


def _opt(validator=None):
    return attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(Field))
    )


@attrs.frozen
class RunConfig:
    """A training, inference or generation job as the cost model needs it.

    Sizes are per device and per micro-batch (``batch_size`` is what one forward sees);
    ``gpus`` is the world size that sharding divides by.
    """

    model: Field | None = _opt()  # catalog name, HF id, or path to a config.json
    params: Field | None = _opt()  # total parameters, when no architecture is known
    mode: Field | None = _opt()  # MODES
    batch_size: Field | None = _opt()
    seq_len: Field | None = _opt()  # training / inference tokens; prompt length for generation
    image_size: Field | None = _opt()
    max_context: Field | None = _opt()  # generation: prompt + new tokens the cache must hold
    max_new_tokens: Field | None = _opt()
    num_beams: Field | None = _opt()
    num_return_sequences: Field | None = _opt()  # sampled sequences per prompt (generate)
    use_cache: Field | None = _opt()  # generation keeps a KV cache (bool; HF default True)
    dtype: Field | None = _opt()  # DTYPES
    optimizer: Field | None = _opt()  # OPTIMIZERS
    checkpointing: Field | None = _opt()  # bool
    attention: Field | None = _opt()  # ATTENTIONS
    lora_rank: Field | None = _opt()
    lora_targets: Field | None = _opt()  # tuple of module names, or "all-linear"
    quantize: Field | None = _opt()  # QUANTIZE
    sharding: Field | None = _opt()  # SHARDINGS
    offload: Field | None = _opt()  # OFFLOADS
    gpus: Field | None = _opt()  # world size
    accumulation: Field | None = _opt()  # gradient accumulation steps
    grads_persist: Field | None = _opt()  # zero_grad(set_to_none=False): grads live all step
    eval_batch_size: Field | None = _opt()  # training jobs: the evaluation pass's batch
    pretrained: Field | None = _opt()  # bool: starts from trained weights (False: from scratch)
    frozen: Field | None = _opt()  # jobparts.Freezing: sub-modules of the model the script freezes
    device_models: Field | None = _opt()  # tuple of jobparts.DeviceModel: other models loaded
    structure: Field | None = _opt()
    """HF-style config (a dict with ``model_type``) of a model the script defines, read from
    the config its constructor gets: lets the cost model give it activations (approximate)."""

    def value(self, name: str, default: Any = None) -> Any:
        field = getattr(self, name)
        return default if field is None else field.value

    def fields(self) -> Iterator[tuple[str, Field]]:
        for name in FIELD_NAMES:
            field = getattr(self, name)
            if field is not None:
                yield name, field

    def merged(self, over: RunConfig) -> RunConfig:
        """This configuration with every field that ``over`` sets replaced by ``over``'s.

        ``model`` and ``params`` are two ways to name the model: a layer that sets
        either replaces both (``--params 7B`` over a script's ``from_pretrained``).
        """
        changes = dict(over.fields())
        if "model" in changes or "params" in changes:
            changes.setdefault("model", None)
            changes.setdefault("params", None)
        return attrs.evolve(self, **changes)

    def with_values(self, source: str = "remedy", **values: Any) -> RunConfig:
        """A copy with ``values`` set (high confidence, ``source``): what-if questions."""
        return attrs.evolve(self, **{k: Field(v, source) for k, v in values.items()})

    def to_dict(self) -> dict:
        return {name: field.to_dict() for name, field in self.fields()}


FIELD_NAMES = tuple(a.name for a in attrs.fields(RunConfig))

_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_param_count(text: str | int | float) -> int:
    """``7B`` → 7e9, ``125M``, ``1.5b``, ``350000000``; raises ``ValueError`` otherwise."""
    if isinstance(text, (int, float)):
        return int(text)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmbgt]?)\s*", text.lower())
    if not match:
        raise ValueError(f"{text!r} is not a parameter count (like 7B, 125M, 350000000)")
    number, suffix = match.groups()
    return int(float(number) * _SUFFIXES.get(suffix, 1))
