"""A transformers model the script builds from a config it writes: trained from scratch.

``GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=512))``,
``RobertaForMaskedLM(RobertaConfig.from_dict({...}))`` or
``AutoModelForCausalLM.from_config(config)`` name no checkpoint, yet the architecture is
fully known: the config class's defaults with the fields the script sets. transformers'
config classes default to one published checkpoint each (``GPT2Config()`` is GPT-2 small,
``BertConfig()`` BERT-base, ``LlamaConfig()`` Llama-2-7B...), so the shape is that
checkpoint's ``config.json`` with the script's fields laid over it
(:data:`CONFIG_DEFAULTS`; the estimator does the laying, :mod:`torchward.estimator.resolve`).

Read here: the config call (at the model's call, or the last assignment of the name passed,
in the same function, before the call), its keyword values (or the dict ``from_dict`` is
given), each followed by the script reader. A value it cannot follow is not guessed: the
field is left out and the model's confidence is low, said in a note. A config class
without a known default checkpoint leaves the model unread (the estimate says unknown).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..syntax.names import dotted, qualified_name
from .runconfig_fields import min_confidence

if TYPE_CHECKING:
    from .runconfig_fields import ReaderState

__all__ = ["CONFIG_DEFAULTS", "config_built_model", "is_model_class"]

#: config class -> (model_type, the catalog checkpoint whose config.json its defaults are)
CONFIG_DEFAULTS: dict[str, tuple[str, str]] = {
    "GPT2Config": ("gpt2", "gpt2"),
    "BertConfig": ("bert", "bert-base-uncased"),
    "RobertaConfig": ("roberta", "roberta-base"),
    "LlamaConfig": ("llama", "llama-2-7b"),
    "OPTConfig": ("opt", "opt-125m"),
}

_HEADS = ("Model", "LMHeadModel")


def is_model_class(tail: str) -> bool:
    """``GPT2LMHeadModel``, ``RobertaForMaskedLM``, ``LlamaModel``: a transformers model
    class (not a config, tokenizer or pipeline)."""
    return tail[:1].isupper() and (tail.endswith(_HEADS) or "For" in tail[1:])


def config_built_model(reader: ReaderState, call: ast.Call, name: str) -> bool:
    """Read ``call`` (a model class called with a config, or ``from_config``) as a model
    of that config's shape; whether it was one."""
    given = call.args[0] if call.args else _keyword(call, "config")
    config_call = _config_call(reader, given)
    if config_call is None:
        return False
    class_name, fields_node = _config_class(reader, config_call)
    if class_name not in CONFIG_DEFAULTS:
        return False
    model_type, defaults = CONFIG_DEFAULTS[class_name]
    fields, unread, confidence = _fields(reader, config_call, fields_node)
    if fields is None:
        return False
    if unread:
        confidence = "low"
        reader.notes.append(
            f"{class_name} at line {config_call.lineno}: not followed: {', '.join(unread)}; "
            f"{defaults}'s values are used for them"
        )
    model = name.rsplit(".", 1)[-1] if not name.endswith("from_config") else class_name
    source = f"{reader.path}:{config_call.lineno} ({class_name}, a {model_type} from scratch)"
    reader.set("model", f"{model} ({class_name})", call.lineno, confidence)
    reader.set("pretrained", False, call.lineno, confidence)
    structure = {"model_type": model_type, "defaults_of": defaults, **fields}
    reader.set("structure", structure, config_call.lineno, confidence, source)
    return True


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _config_call(reader: ReaderState, given: ast.expr | None) -> ast.Call | None:
    """The call that built the config ``given`` names: itself, or what the nearest
    assignment that runs by default binds to that name."""
    if isinstance(given, ast.Name):
        given = reader.values.assigned(given)
    return given if isinstance(given, ast.Call) else None


def _config_class(reader: ReaderState, call: ast.Call) -> tuple[str, ast.expr | None]:
    """(the config class's name, the dict ``from_dict`` was given) of a config call."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "from_dict":
        return _class_name(reader, func.value), call.args[0] if call.args else None
    return _class_name(reader, func), None


def _class_name(reader: ReaderState, func: ast.expr) -> str:
    name = qualified_name(func, reader.imports) or dotted(func) or ""
    return name.rsplit(".", 1)[-1] if name.startswith("transformers") else ""


def _fields(
    reader: ReaderState, call: ast.Call, from_dict: ast.expr | None
) -> tuple[dict[str, Any] | None, list[str], str]:
    """(the fields the script sets, those it could not follow, the lowest confidence)."""
    confidence = "high"
    if from_dict is not None:
        found = reader.values.get(from_dict)
        if found is None or not isinstance(found[0], dict):
            return None, [], confidence
        written = {k: v for k, v in found[0].items() if isinstance(k, str)}
        return _plain(written), [], found[1]
    fields: dict[str, Any] = {}
    unread: list[str] = []
    for keyword in call.keywords:
        if keyword.arg is None:
            return None, [], confidence  # ``**kwargs``: what it holds is not listed
        found = reader.values.get(keyword.value)
        if found is None:
            unread.append(keyword.arg)
            continue
        fields[keyword.arg] = found[0]
        confidence = min_confidence(confidence, found[1])
    return _plain(fields), unread, confidence


def _plain(fields: dict[str, Any]) -> dict[str, Any]:
    """Fields a config.json can hold (numbers, strings, booleans, None, lists of them)."""
    return {
        k: v
        for k, v in fields.items()
        if v is None or isinstance(v, (int, float, str, bool, list, tuple))
    }
