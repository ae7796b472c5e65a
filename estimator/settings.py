"""The estimator's part of ``[tool.torchward]``: run-configuration overrides and user models.

``[tool.torchward.estimate]`` sets any :class:`~.runconfig.RunConfig` field, kebab-case
(``batch-size = 4``, ``dtype = "amp-bf16"``, ``checkpointing = true``), validated against
the same closed vocabularies as the command-line flags. The values lie between what the
script says and the flags (script < settings < flags), each with the source
``pyproject.toml [tool.torchward.estimate]``.

``[tool.torchward.models.NAME]`` and ``models-file`` add architectures
(:mod:`.localmodels`). :class:`EstimatorSettings` carries both, as hashable plain values,
to ``torchward estimate`` and to TW010 (through ``LintSettings.estimator``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

import attrs

from .architecture import Architecture
from .jobparts import device_models_setting, freezing_setting
from .localmodels import user_architectures
from .runconfig import (
    ATTENTIONS,
    DTYPES,
    MODES,
    OFFLOADS,
    OPTIMIZERS,
    QUANTIZE,
    SHARDINGS,
    Field,
    RunConfig,
    parse_param_count,
)

__all__ = [
    "EDITOR_SETTINGS",
    "ESTIMATE_KEYS",
    "EstimatorSettings",
    "parse_estimate_table",
    "with_editor_settings",
]

TABLE = "[tool.torchward.estimate]"


def _positive(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value.strip()


def _params(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f'expected a parameter count like "7B" or 125000000, got {value!r}')
    parse_param_count(value)  # raises ValueError with the reason
    return str(value)


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        if value not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {value!r}")
        return value

    return convert


def _targets(value: Any) -> str | tuple[str, ...]:
    if value == "all-linear":
        return value
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(
            'expected "all-linear" or a list of module names like ["q_proj", "v_proj"]'
        )
    return tuple(value)


# kebab-case key → (RunConfig field, converter); every field is settable.
def _structure(value: Any) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("model_type"), str):
        raise ValueError(f"expected a table with a model_type (an HF config), got {value!r}")
    return dict(value)


ESTIMATE_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "model": ("model", _text),
    "structure": ("structure", _structure),
    "pretrained": ("pretrained", _boolean),
    "eval-batch-size": ("eval_batch_size", _positive),
    "params": ("params", _params),
    "mode": ("mode", _choice(MODES)),
    "batch-size": ("batch_size", _positive),
    "seq-len": ("seq_len", _positive),
    "image-size": ("image_size", _positive),
    "max-context": ("max_context", _positive),
    "max-new-tokens": ("max_new_tokens", _positive),
    "num-beams": ("num_beams", _positive),
    "num-return-sequences": ("num_return_sequences", _positive),
    "use-cache": ("use_cache", _boolean),
    "dtype": ("dtype", _choice(DTYPES)),
    "optimizer": ("optimizer", _choice(OPTIMIZERS)),
    "checkpointing": ("checkpointing", _boolean),
    "attention": ("attention", _choice(ATTENTIONS)),
    "lora-rank": ("lora_rank", _positive),
    "lora-targets": ("lora_targets", _targets),
    "quantize": ("quantize", _choice(QUANTIZE)),
    "sharding": ("sharding", _choice(SHARDINGS)),
    "offload": ("offload", _choice(OFFLOADS)),
    "gpus": ("gpus", _positive),
    "tensor-parallel": ("tensor_parallel", _positive),
    "accumulation": ("accumulation", _positive),
    "grads-persist": ("grads_persist", _boolean),
    "frozen": ("frozen", freezing_setting),
    "device-models": ("device_models", device_models_setting),
}


class KeyedError(ValueError):
    """A bad value, with the sub-key (``estimate.batch-size``) the message is about."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def parse_estimate_table(table: Any) -> tuple[tuple[str, Any], ...]:
    """Validate ``[tool.torchward.estimate]`` into ``(field, value)`` pairs (raises :class:`KeyedError`)."""
    if not isinstance(table, dict):
        raise KeyedError(
            "estimate", "expected a table of run-configuration values (batch-size = 4, ...)"
        )
    if "model" in table and "params" in table:
        raise KeyedError("estimate", "give 'model' or 'params', not both")
    pairs = []
    for key, raw in table.items():
        entry = ESTIMATE_KEYS.get(key)
        if entry is None:
            close = difflib.get_close_matches(key.replace("_", "-"), ESTIMATE_KEYS, n=1)
            hint = (
                f" (did you mean '{close[0]}'?)"
                if close
                else f" (known keys: {', '.join(ESTIMATE_KEYS)})"
            )
            raise KeyedError(f"estimate.{key}", "unknown key" + hint)
        name, convert = entry
        try:
            pairs.append((name, convert(raw)))
        except ValueError as error:
            raise KeyedError(f"estimate.{key}", str(error)) from None
    return tuple(pairs)


@attrs.frozen
class EstimatorSettings:
    """What ``[tool.torchward]`` tells the estimator; hashable and picklable."""

    overrides: tuple[tuple[str, Any], ...] = ()
    models: tuple[tuple[str, str], ...] = ()  # (name, JSON record), see .localmodels
    source: str = "pyproject.toml " + TABLE
    # the editor's settings (EDITOR_SETTINGS), over the project's as a flag would be
    editor: tuple[tuple[str, Any], ...] = ()

    def run_config(self) -> RunConfig:
        """The overrides as a configuration to lay over the script's (flags go over it)."""
        fields = {name: Field(value, self.source) for name, value in self.overrides}
        for name, value in self.editor:
            fields[name] = Field(value, f"editor setting {EDITOR_SETTINGS[name]}")
        return RunConfig(**fields)

    def architectures(self) -> tuple[Architecture, ...]:
        return user_architectures(self.models)

    def identity(self) -> dict:
        """JSON-able, for cache keys: anything that changes an estimate."""
        return {
            "estimate": [[n, list(v) if isinstance(v, tuple) else v] for n, v in self.overrides],
            "models": [list(m) for m in self.models],
            "editor": [list(e) for e in self.editor],
        }

    def __bool__(self) -> bool:
        return bool(self.overrides or self.models or self.editor)


# RunConfig fields an editor sets from its own settings (the language server), and their
# names there
EDITOR_SETTINGS = {"use_cache": "torchward.useCache"}


def with_editor_settings(
    settings: EstimatorSettings | None, **values: Any
) -> EstimatorSettings | None:
    """``settings`` with the editor's values (:data:`EDITOR_SETTINGS`; None: not set, the
    script's or the project's stands), laid over the project's."""
    chosen = tuple((name, value) for name, value in values.items() if value is not None)
    if not chosen:
        return settings
    return attrs.evolve(settings or EstimatorSettings(), editor=chosen)
