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
from .configlayouts import as_counted
from .names import UnknownNameError, normalize, suggestions
from .paramcount import (
    DECODER_TYPES,
    ENCODER_DECODER_TYPES,
    ENCODER_TYPES,
    MissingFieldError,
    check_numbers,
    decoder_params,
    decoder_shape,
    encoder_decoder_params,
    encoder_params,
    field_name,
    infer_kind,
    required,
)
from .visioncount import VISION_TYPES, vision_params, vit_params

__all__ = [
    "Architecture",
    "ConfigFileError",
    "all_architectures",
    "from_config",
    "kind_of",
    "lookup_model",
    "parameter_count",
    "read_config_json",
    "spellings",
]


KNOWN_TYPES = DECODER_TYPES | ENCODER_TYPES | ENCODER_DECODER_TYPES | VISION_TYPES


def kind_of(model_type: str, config: Mapping[str, Any] | None = None) -> str:
    """The broad kind the cost model branches on, from a ``model_type`` with a family
    table, else from the fields of ``config`` (:func:`.paramcount.infer_kind`)."""
    if model_type not in KNOWN_TYPES and config is not None:
        return infer_kind(config)
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
    other_towers: int = 0
    """Parameters of the towers beside the one ``config`` describes (a multimodal
    checkpoint's vision / audio encoders and projector): weights only to the cost model."""
    text_tower: Mapping[str, Any] | None = attrs.field(
        default=None, converter=lambda c: None if c is None else MappingProxyType(dict(c))
    )
    """A contrastive image-text model's text tower (``config`` is its vision tower): the
    cost model runs it as a stack of its own (:func:`.shape.shape_of`)."""

    @property
    def kind(self) -> str:
        return kind_of(self.model_type, self.config)

    @property
    def params(self) -> int:
        return parameter_count(self)

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (differs from ``params`` only for MoE)."""
        if self.kind == "decoder":
            active = decoder_params(self.model_type, self.config, active=True)
            return active + self.other_towers
        return self.params

    @property
    def is_moe(self) -> bool:
        return self.active_params != self.params


def parameter_count(arch: Architecture) -> int:
    """Total parameters, computed from the structure (tied weights counted once)."""
    return _own_params(arch.model_type, arch.config) + arch.other_towers


def _own_params(model_type: str, config: Mapping[str, Any]) -> int:
    kind = kind_of(model_type, config)
    if kind == "decoder":
        return decoder_params(model_type, config)
    if kind == "encoder":
        return encoder_params(model_type, config)
    if kind == "encoder-decoder":
        return encoder_decoder_params(model_type, config)
    if model_type in VISION_TYPES:
        return vision_params(model_type, config)
    return _vit_tower(model_type, config)


def _vit_tower(model_type: object, cfg: Mapping[str, Any]) -> int:
    """A vision transformer with no family table, counted as HF's ViT without its head."""
    for name in ("patch_size", "image_size"):
        if not isinstance(cfg.get(name), int):
            raise MissingFieldError(model_type, name)
    h = required(cfg, "hidden size", model_type)
    fields = dict(
        hidden_size=h,
        num_hidden_layers=required(cfg, "layers", model_type),
        intermediate_size=cfg.get("intermediate_size") or 4 * h,
        patch_size=cfg["patch_size"],
        image_size=cfg["image_size"],
        num_channels=cfg.get("num_channels", 3),
        num_labels=0,
        add_pooling_layer=False,
    )
    n = vit_params(fields)
    pooler = cfg.get("pooler_output_size")
    if isinstance(pooler, int) and pooler > 0:  # ViTModel's pooler (dense + tanh)
        n += h * pooler + pooler
    if cfg.get("vision_use_head"):  # SigLIP's attention-pooling head: probe, MHA, LN, MLP
        inner = fields["intermediate_size"]
        n += h + (4 * h * h + 4 * h) + 2 * h + (2 * h * inner + inner + h)
    return n


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


class ConfigFileError(LookupError, ValueError):
    """A config.json that cannot be read as one: one line saying why (the CLI's
    configuration error, exit 2, like :class:`.paramcount.MissingFieldError`)."""


def read_config_json(path: str | PathLike[str], *, name: str | None = None) -> Architecture:
    """Read a local HF-style ``config.json`` (a file, or a folder holding one) into an entry.

    The fields are kept as they are (:func:`from_config`). A config.json that is not JSON,
    or whose fields do not give a count, raises a ``ValueError`` with one line saying why
    (:class:`.paramcount.MissingFieldError` names the missing field).
    """
    p = Path(path)
    if dependencies.is_dir(p):
        p = p / "config.json"
    try:
        config = json.loads(dependencies.read_text(p))
    except json.JSONDecodeError as error:
        raise ConfigFileError(f"{p}: not JSON ({error.msg}, line {error.lineno})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigFileError(f"{p}: cannot be read ({error})") from None
    if not isinstance(config, Mapping):
        raise ConfigFileError(f"{p}: not a config.json (a JSON object of fields)")
    return from_config(config, name=name or config.get("_name_or_path") or p.parent.name)


_TOWERS = ("text_config", "vision_config", "audio_config", "speech_config")


def from_config(config: Mapping[str, Any], *, name: str) -> Architecture:
    """The entry for a model's config fields, whatever its ``model_type``.

    A family with a table is counted by it. Any other is counted from its fields, with a
    note naming them. A multimodal config (``text_config`` / ``vision_config`` /
    ``audio_config``) is modelled through its language model when that is a decoder (else
    through its vision tower); the other towers and the projector between them are counted
    in the parameters (:attr:`Architecture.other_towers`). The count is made here, so a
    config that cannot be counted raises :class:`.paramcount.MissingFieldError` at once.
    """
    config, model_type = as_counted(config)
    towers = {k: dict(config[k]) for k in _TOWERS if isinstance(config.get(k), Mapping)}

    notes: list[str] = []
    other = 0
    main_key = ""
    if model_type in KNOWN_TYPES or not towers:
        main_type, main = model_type, dict(config)
        check_numbers(main, main_type)
    else:
        main_key = _main_tower(towers)
        main = towers[main_key]
        main_type = str(main.get("model_type") or f"{model_type}:{main_key}")
        check_numbers(main, main_type)
        counted, skipped = [], []
        for key, tower in towers.items():
            if key == main_key:
                continue
            try:
                check_numbers(tower, str(tower.get("model_type") or key))
                other += _own_params(str(tower.get("model_type") or key), tower)
                counted.append(key.removesuffix("_config"))
            except MissingFieldError as error:
                skipped.append(f"{key.removesuffix('_config')} ({error})")
        projector = _projector(config, towers, main_key)
        other += projector
        what = f"the {main_key.removesuffix('_config')} tower of a {model_type!r} checkpoint"
        if "text" in counted and _contrastive(towers, main_key):
            counted.remove("text")
            what += "; its text tower runs beside it (captions padded to its positions)"
        if counted:
            what += f"; {', '.join(counted)} tower(s)"
            what += " and projector" if projector else ""
            what += " counted as weights, their activations not modelled"
        if skipped:
            what += "; not counted: " + "; ".join(skipped)
        notes.append(what)
    if main_type not in KNOWN_TYPES:
        notes.append(_generic_note(main_type, main))
    contrastive = bool(towers) and model_type not in KNOWN_TYPES
    contrastive = contrastive and _contrastive(towers, main_key)
    arch = Architecture(
        name=name,
        family=main_type,
        model_type=main_type,
        config=main,
        hf_id=config.get("_name_or_path") or None,
        note="; ".join(notes),
        other_towers=other,
        text_tower=towers["text_config"] if contrastive else None,
    )
    arch.params  # noqa: B018 -- counted now: a config that cannot be counted fails here
    return arch


def _contrastive(towers: Mapping[str, Mapping[str, Any]], main_key: str) -> bool:
    """A text tower beside a vision tower that is the main one: CLIP / SigLIP-style."""
    return main_key == "vision_config" and "text_config" in towers


def _main_tower(towers: Mapping[str, Mapping[str, Any]]) -> str:
    text = towers.get("text_config")
    if text is not None:
        kind = kind_of(str(text.get("model_type") or ""), text)
        if kind == "decoder" or len(towers) == 1:
            return "text_config"
    for key in ("vision_config", "audio_config", "speech_config", "text_config"):
        if key in towers:
            return key
    raise AssertionError("no tower")  # pragma: no cover - towers is never empty here


def _width(tower: Mapping[str, Any]) -> int:
    return int(tower.get(field_name(tower, "hidden size") or "", 0) or 0)


def _projector(config: Mapping[str, Any], towers: Mapping[str, Any], main_key: str) -> int:
    """The layers between the towers: CLIP-style projections into a shared space
    (``projection_dim``: one bias-free matrix per tower, plus the logit scale) or a
    LLaVA-style MLP from the vision width to the language model's (``projector_hidden_act``:
    two linear layers with biases)."""
    proj = config.get("projection_dim")
    if isinstance(proj, int) and proj > 0:
        return sum(_width(t) * proj for t in towers.values()) + 1
    text, vision = towers.get("text_config"), towers.get("vision_config")
    if "projector_hidden_act" in config and text is not None and vision is not None:
        t, v = _width(text), _width(vision)
        return v * t + t + t * t + t
    return 0


def _generic_note(model_type: str, config: Mapping[str, Any]) -> str:
    kind = kind_of(model_type, config)
    if kind == "decoder":
        s = decoder_shape(model_type, config)
        fields = list(s["fields"])
        norm = "RMSNorm" if s["norm"] == 1 else "LayerNorm"
        mlp = "gated" if s["mlp"] == "gated" else "plain"
        shape = f"{norm}, {mlp} MLP, {'tied' if s['tied'] else 'untied'} embeddings"
        if s["moe"]:
            shape += f", {s['moe']['experts']} experts (top-{s['moe']['active']})"
        if s.get("mla"):
            shape += ", latent attention (kv_lora_rank)"
    else:
        fields = [
            n
            for n in (
                field_name(config, q)
                for q in ("hidden size", "layers", "vocabulary", "intermediate size")
            )
            if n
        ]
        shape = kind
    return (
        f"model_type {model_type!r} has no family table: counted as a {kind} from its fields "
        f"{', '.join(fields)} ({shape})"
    )
