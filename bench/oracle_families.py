"""Parameter counts of the oracle's families (bench/oracle_families.json) against transformers.

Each family's config class is built with its defaults, its stacks cut to two layers (counts
are linear in depth; two layers keep a first dense layer beside MoE ones), and the model is
built on the meta device (no memory, no weights) by the Auto class the JSON names; its
``sum(p.numel())`` is the truth torchward's count from the same config.json fields
(:func:`torchward.estimator.architecture.from_config`) is held against.

    .venv/bin/python bench/oracle_families.py          # the table, one row per family

Needs ``transformers`` (the ``test`` extra). ``tests/estimator/test_generic_config_counts.py``
asserts the same rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FAMILIES = Path(__file__).with_name("oracle_families.json")
_DEPTH_FIELDS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
)
_TOWERS = ("text_config", "vision_config", "audio_config")


def families() -> list[dict[str, Any]]:
    return list(json.loads(FAMILIES.read_text("utf-8"))["families"])


def _shallow(config: Any) -> None:
    """Cut every stack of ``config`` (and of its towers) to two layers, in place."""
    for name in _DEPTH_FIELDS:
        if isinstance(getattr(config, name, None), int):
            setattr(config, name, 2)
    for name in ("layer_types", "mlp_layer_types"):
        if isinstance(getattr(config, name, None), list):
            setattr(config, name, list(getattr(config, name))[:2])
    if isinstance(getattr(config, "first_k_dense_replace", None), int):
        config.first_k_dense_replace = 1  # one dense layer, one MoE layer
    for tower in _TOWERS:
        sub = getattr(config, tower, None)
        if sub is not None and hasattr(sub, "to_dict"):
            _shallow(sub)


def small_config(model_type: str) -> Any:
    from transformers import CONFIG_MAPPING

    config = CONFIG_MAPPING[model_type]()
    _shallow(config)
    return config


def meta_count(model_type: str, cls: str) -> int:
    """Parameters of the transformers model ``cls`` builds from :func:`small_config`, on meta."""
    import torch
    import transformers

    config = small_config(model_type)
    with torch.device("meta"):
        model = getattr(transformers, cls).from_config(config)
    return sum(p.numel() for p in model.parameters())


def torchward_count(model_type: str) -> tuple[int, str]:
    """(parameters, note) torchward counts from the same config's fields."""
    from torchward.estimator.architecture import from_config

    arch = from_config(small_config(model_type).to_dict(), name=model_type)
    return arch.params, arch.note


def main() -> int:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    worst = 0.0
    print(f"{'model_type':<14} {'counted':<8} {'transformers':>14} {'torchward':>14} {'error':>8}")
    for family in families():
        t = family["model_type"]
        truth = meta_count(t, family["cls"])
        ours, _ = torchward_count(t)
        error = (ours - truth) / truth
        worst = max(worst, abs(error))
        print(f"{t:<14} {family['counted']:<8} {truth:>14,} {ours:>14,} {error:>+8.2%}")
    print(f"worst |error| {worst:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
