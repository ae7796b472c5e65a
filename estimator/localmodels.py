"""Architectures that are not in the bundled catalog: the user's own, and the offline HF cache.

Three places, all local, none on the network:

- ``[tool.torchward.models.NAME]`` tables and the JSON file named by ``models-file``
  (:func:`parse_model_records`): each entry holds the structural fields of a
  ``config.json`` (HF names, ``model_type`` choosing the counting conventions), either
  flat or under ``config``, plus optional ``aliases`` and ``hf-id``. They are validated
  when the settings are read (an entry that cannot be counted is a configuration error)
  and kept as JSON text, so settings stay hashable and picklable.
- a folder with a ``config.json`` that the script names (``from_pretrained("./ckpt")``):
  :func:`~.architecture.read_config_json`.
- the Hugging Face hub cache, ``$HF_HUB_CACHE`` or ``$HF_HOME/hub`` or
  ``~/.cache/huggingface/hub``: ``models--ORG--NAME/snapshots/*/config.json``
  (:func:`from_hf_cache`), read when the catalog does not know the id.

User entries are looked up before the catalog (they may correct it); the HF cache only
after it. A model found nowhere stays unknown.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import dependencies
from .architecture import Architecture, parameter_count, read_config_json, spellings
from .names import normalize

__all__ = [
    "from_hf_cache",
    "hf_cache_dirs",
    "lookup_user_model",
    "parse_model_records",
    "read_models_file",
    "user_architectures",
]

_META = {"name", "family", "aliases", "hf-id", "hf_id", "published", "note", "config"}


def _architecture(name: str, record: Mapping[str, Any]) -> Architecture:
    config = record.get("config")
    if config is None:
        config = {
            k.replace("-", "_") if k == "model-type" else k: v
            for k, v in record.items()
            if k not in _META
        }
    if not isinstance(config, Mapping):
        raise ValueError("'config' must be a table of config.json fields")
    model_type = config.get("model_type", record.get("model_type"))
    if not isinstance(model_type, str):
        raise ValueError('needs a model_type (like "llama", "bert", "t5", "resnet")')
    config = dict(config, model_type=model_type)
    aliases = record.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ValueError("'aliases' must be a list of strings")
    hf_id = record.get("hf-id", record.get("hf_id"))
    arch = Architecture(
        name=name,
        family=str(record.get("family", model_type)),
        model_type=model_type,
        config=config,
        hf_id=hf_id,
        aliases=aliases,
        note=str(record.get("note", "")),
    )
    try:
        arch.kind  # noqa: B018 - raises for a model_type torchward cannot count
        count = parameter_count(arch)
    except KeyError as error:
        raise ValueError(
            f"missing structural field {error.args[0]!r} for model_type {model_type!r}"
        ) from None
    except (TypeError, ZeroDivisionError, ValueError) as error:
        raise ValueError(f"cannot count its parameters: {error}") from None
    if count <= 0:
        raise ValueError("its structure gives no parameters")
    return arch


def parse_model_records(table: Any, origin: str) -> tuple[tuple[str, str], ...]:
    """Validate ``name → record`` (a TOML table or JSON object) into ``(name, JSON)`` pairs.

    ``origin`` says where they came from (kept in each entry's note). Raises
    ``ValueError`` naming the entry.
    """
    if isinstance(table, list):  # the catalog's own format: [{"name": ..., "config": {...}}]
        try:
            table = {r["name"]: r for r in table}
        except (TypeError, KeyError):
            raise ValueError("a list of models needs a 'name' in every entry") from None
    if not isinstance(table, Mapping):
        raise ValueError("expected a table of model-name = { model_type = ..., structural fields }")
    records = []
    for name, record in table.items():
        if not isinstance(record, Mapping):
            raise ValueError(f"model '{name}': expected a table of config.json fields")
        try:
            _architecture(name, record)
        except ValueError as error:
            raise ValueError(f"model '{name}': {error}") from None
        records.append(
            (
                name,
                json.dumps(
                    dict(record, note=record.get("note") or f"from {origin}"), sort_keys=True
                ),
            )
        )
    return tuple(records)


def read_models_file(path: str) -> tuple[tuple[str, str], ...]:
    """The models of a JSON file: ``{"models": [...]}`` (catalog format) or ``{NAME: {...}}``."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if isinstance(data, Mapping) and "models" in data:
        data = data["models"]
    return parse_model_records(data, os.path.basename(path))


@functools.lru_cache(maxsize=32)
def user_architectures(records: tuple[tuple[str, str], ...]) -> tuple[Architecture, ...]:
    return tuple(_architecture(name, json.loads(text)) for name, text in records)


def lookup_user_model(name: str, records: tuple[tuple[str, str], ...]) -> Architecture | None:
    """The user entry ``name`` means (name, alias, HF id or its last part), or ``None``."""
    if not records:
        return None
    key = normalize(name)
    tail = normalize(name.split("/")[-1])
    for arch in user_architectures(records):
        keys = {normalize(s) for s in spellings(arch)}
        if key in keys:
            return arch
    for arch in user_architectures(records):
        if tail in {normalize(s) for s in spellings(arch)}:
            return arch
    return None


def hf_cache_dirs() -> list[Path]:
    """Where huggingface_hub keeps downloaded repositories, most specific setting first."""
    dirs = []
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if value := dependencies.getenv(variable):
            dirs.append(Path(value).expanduser())
    if home := dependencies.getenv("HF_HOME"):
        dirs.append(Path(home).expanduser() / "hub")
    dirs.append(Path("~/.cache/huggingface/hub").expanduser())
    return list(dict.fromkeys(dirs))


def from_hf_cache(model_id: str) -> Architecture | None:
    """The cached ``config.json`` of ``ORG/NAME`` (newest snapshot), or ``None``. Offline."""
    if "/" not in model_id or model_id.count("/") != 1 or model_id.startswith((".", "/")):
        return None
    folder = "models--" + model_id.replace("/", "--")
    for cache in hf_cache_dirs():
        snapshots = cache / folder / "snapshots"
        try:
            names = dependencies.list_dir(snapshots)
        except OSError:
            continue
        configs = [snapshots / n / "config.json" for n in names]
        found = sorted(
            (c for c in configs if dependencies.is_file(c)),
            key=lambda p: p.stat().st_mtime,  # a newer snapshot is a new name in the listing
            reverse=True,
        )
        for config in found:
            try:
                arch = read_config_json(config, name=model_id)
            except (OSError, ValueError, KeyError):
                continue
            note = f"structure from the local HF cache ({config.parent})"
            return Architecture(
                name=arch.name,
                family=arch.family,
                model_type=arch.model_type,
                config=arch.config,
                hf_id=model_id,
                note="; ".join(n for n in (arch.note, note) if n),
            )
    return None
