"""The architecture catalog: named checkpoints, their structure, and their parameter counts.

Entries live in ``data/models_*.json``. Each holds the fields of the checkpoint's own
``config.json`` (HF names where the model has one; torchvision / diffusers builder
arguments otherwise) and never a parameter count of its own making: counts are computed
by :mod:`.paramcount` and :mod:`.visioncount`, and the published figure recorded beside
an entry (with its source) is what the tests check the computation against. A user's
local ``config.json`` goes through the same path (:func:`read_config_json`), so a model
that is not in the catalog is counted by the same code as one that is.

Names are matched forgivingly (``meta-llama/Llama-2-7b-hf``, ``llama-2-7b``,
``Llama 2 7B``, ``resnet50``); an unknown name raises :class:`UnknownNameError` with the
closest known names, never a guessed count.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

from . import dependencies
from .names import UnknownNameError, normalize, suggestions
from .paramcount import (
    DECODER_TYPES,
    ENCODER_DECODER_TYPES,
    ENCODER_TYPES,
    decoder_params,
    encoder_decoder_params,
    encoder_params,
)
from .visioncount import VISION_TYPES, vision_params

__all__ = [
    "Architecture",
    "all_architectures",
    "kind_of",
    "lookup_model",
    "parameter_count",
    "read_config_json",
    "spellings",
]


def kind_of(model_type: str) -> str:
    """The broad kind the cost model branches on, from a ``model_type``."""
    if model_type in DECODER_TYPES:
        return "decoder"
    if model_type in ENCODER_TYPES:
        return "encoder"
    if model_type in ENCODER_DECODER_TYPES:
        return "encoder-decoder"
    if model_type in VISION_TYPES:
        return {
            "diffusers-unet": "diffusion-unet",
            "dit": "diffusion-transformer",
            "vit": "vision-transformer",
            "clip": "clip",
        }.get(model_type, "cnn")
    raise ValueError(f"unsupported model_type {model_type!r}")


@attrs.frozen
class Architecture:
    """One checkpoint's structure. ``config`` keeps the config.json field names."""

    name: str
    family: str
    model_type: str
    config: Mapping[str, Any] = attrs.field(converter=lambda c: MappingProxyType(dict(c)))
    hf_id: str | None = None
    aliases: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    published_params: int | None = None
    published_source: str | None = None
    published_precision: int | None = None
    """The unit the published figure is rounded to ("1.7B" → 100M), when it is rounded."""
    note: str = ""
    """Why a computed count may differ from the published one, or what the entry leaves out."""

    @property
    def kind(self) -> str:
        return kind_of(self.model_type)

    @property
    def params(self) -> int:
        return parameter_count(self)

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (differs from ``params`` only for MoE)."""
        if self.model_type in DECODER_TYPES:
            return decoder_params(self.model_type, self.config, active=True)
        return self.params

    @property
    def is_moe(self) -> bool:
        return self.active_params != self.params


def parameter_count(arch: Architecture) -> int:
    """Total parameters, computed from the structure (tied weights counted once)."""
    kind = arch.kind
    if kind == "decoder":
        return decoder_params(arch.model_type, arch.config)
    if kind == "encoder":
        return encoder_params(arch.model_type, arch.config)
    if kind == "encoder-decoder":
        return encoder_decoder_params(arch.model_type, arch.config)
    return vision_params(arch.model_type, arch.config)


def _from_record(record: Mapping[str, Any]) -> Architecture:
    published = record.get("published") or {}
    return Architecture(
        name=record["name"],
        family=record["family"],
        model_type=record["model_type"],
        config=record["config"],
        hf_id=record.get("hf_id"),
        aliases=record.get("aliases", ()),
        published_params=published.get("params"),
        published_source=published.get("source"),
        published_precision=published.get("precision"),
        note=record.get("note", ""),
    )


@functools.cache
def _catalog() -> tuple[Architecture, ...]:
    folder = resources.files("torchward.estimator").joinpath("data")
    entries: list[Architecture] = []
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.startswith("models_") and item.name.endswith(".json"):
            entries.extend(_from_record(r) for r in json.loads(item.read_text("utf-8"))["models"])
    return tuple(entries)


def spellings(arch: Architecture) -> list[str]:
    """Every name the catalog answers to for ``arch`` (normalised before matching)."""
    names = [arch.name, *arch.aliases]
    if arch.hf_id:
        names += [arch.hf_id, arch.hf_id.split("/")[-1]]
    return names


@functools.cache
def _index() -> dict[str, Architecture]:
    index: dict[str, Architecture] = {}
    for arch in _catalog():
        for spelling in spellings(arch):
            index.setdefault(normalize(spelling), arch)
    return index


def all_architectures() -> tuple[Architecture, ...]:
    """Every catalog entry, ordered by data file then position in it."""
    return _catalog()


def lookup_model(name: str) -> Architecture:
    """The catalog entry ``name`` means: HF id, short name, alias or torchvision name."""
    index = _index()
    key = normalize(name)
    if key in index:
        return index[key]
    for suffix in ("hf", "base", "pt"):  # "llama-2-7b-hf", "gemma-2b-pt" → "llama-2-7b"
        if key.endswith(suffix) and key[: -len(suffix)] in index:
            return index[key[: -len(suffix)]]
    tail = normalize(name.split("/")[-1])
    if tail in index:
        return index[tail]
    raise UnknownNameError("model", name, suggestions(name, {k: a.name for k, a in index.items()}))


def read_config_json(path: str | PathLike[str], *, name: str | None = None) -> Architecture:
    """Read a local HF-style ``config.json`` (a file, or a folder holding one) into an entry.

    The fields are kept as they are; ``model_type`` chooses the counting conventions.
    Multimodal wrappers that nest the language model under ``text_config`` (Gemma 3,
    LLaVA-style) are read through to that text model, and say so in ``note``.
    """
    p = Path(path)
    if dependencies.is_dir(p):
        p = p / "config.json"
    config = json.loads(dependencies.read_text(p))
    model_type = config.get("model_type")
    note = ""
    if model_type not in DECODER_TYPES | ENCODER_TYPES | ENCODER_DECODER_TYPES | VISION_TYPES:
        text = config.get("text_config")
        if isinstance(text, Mapping) and text.get("model_type") in DECODER_TYPES:
            note = f"language model of a {model_type!r} checkpoint; other towers not counted"
            model_type, config = text["model_type"], dict(text)
        else:
            raise ValueError(f"{p}: model_type {model_type!r} is not one torchward can count")
    label = name or config.get("_name_or_path") or p.parent.name
    return Architecture(
        name=label,
        family=model_type,
        model_type=model_type,
        config=config,
        hf_id=config.get("_name_or_path") or None,
        note=note,
    )
