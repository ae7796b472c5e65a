"""Build the user's model from a :class:`~.request.ModelRecipe` — this runs the user's code.

Called by the worker inside ``FakeTensorMode`` with the measuring device as the default
device, so parameters and buffers are ``FakeTensor``s: nothing is allocated and no
weights are read. Three recipes:

- a factory ``module:function`` (``pkg.models:make_gpt`` or ``models.py:make_gpt``)
  called with the ``k=v`` arguments;
- a script: its imports, ``def``/``class`` statements and the top-level assignments the
  model construction needs are executed (never the rest: not the data loading, not the
  training loop, not the ``if __name__ == "__main__":`` block), then the construction
  expression is evaluated;
- a transformers architecture from its config (catalog, settings, offline HF cache):
  ``AutoModelFor*.from_config`` — no download, no weights.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .request import ModelRecipe

__all__ = ["UserCodeError", "build_model", "load_callable", "uses_transformers"]


class UserCodeError(Exception):
    """The user's code could not be imported or did not build a model."""


def _import_module(spec: str) -> Any:
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec).resolve()
        if not path.is_file():
            raise UserCodeError(f"no such file: {spec}")
        sys.path.insert(0, str(path.parent))
        name = path.stem
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise UserCodeError(f"cannot import {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(spec)


def load_callable(target: str) -> Callable:
    """``module:function`` (or ``file.py:function``, ``module:Class.method``) → the callable."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise UserCodeError(f"{target!r}: expected module:function")
    try:
        obj: Any = _import_module(module_part)
    except UserCodeError:
        raise
    except (Exception, SystemExit) as error:  # the user's code may sys.exit()
        raise UserCodeError(
            f"importing {module_part} failed: {type(error).__name__}: {error}"
        ) from error
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UserCodeError(f"{module_part} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UserCodeError(f"{target} is not callable")
    return obj


def uses_transformers(recipe: ModelRecipe) -> bool:
    return recipe.kind == "config"


def _advice(error: BaseException) -> str:
    """What the user can do about a construction that failed."""
    if isinstance(error, ImportError):
        missing = (getattr(error, "name", None) or "").split(".")[0]
        if missing in ("torchvision", "torchaudio"):  # PyPI's builds pin a CUDA torch on Linux
            return (
                f"install it beside this torch (on a machine without a GPU, the CPU build: "
                f"pip install {missing} --index-url https://download.pytorch.org/whl/cpu)"
            )
        package = f" ({missing})" if missing else ""
        return (
            f"install what the model's code imports{package} into the interpreter that runs "
            "torchward"
        )
    return (
        "profile a function that returns the model instead: "
        "torchward profile FILE.py:FUNCTION [NAME=VALUE ...]"
    )


def _from_script(recipe: ModelRecipe, before_call: Callable[[], None]) -> Any:
    path = Path(recipe.target).resolve()
    # a real module, registered, not a bare dict: ``@dataclass`` and pickling look the
    # class's module up in sys.modules; never ``__main__``, so the script's entry stays off
    module = types.ModuleType("__torchward_profile__")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    sys.path.insert(0, str(path.parent))
    for statement in recipe.prelude:  # one by one: a failure names its statement
        try:
            exec(compile(statement, f"{path} (imports and definitions)", "exec"), namespace)
        except (Exception, SystemExit) as error:  # the user's code may sys.exit()
            shown = statement.splitlines()[0][:120]
            raise UserCodeError(
                f"{path.name}: running `{shown}` (needed to build the model) failed: "
                f"{type(error).__name__}: {error}; {_advice(error)}"
            ) from error
    before_call()
    try:
        return eval(compile(recipe.expression, str(path), "eval"), namespace)
    except (Exception, SystemExit) as error:  # the user's code may sys.exit()
        raise UserCodeError(
            f"{path.name}: building the model as `{recipe.expression}` failed: "
            f"{type(error).__name__}: {error}; {_advice(error)}"
        ) from error


_KINDS = {
    "bert": "encoder",
    "roberta": "encoder",
    "distilbert": "encoder",
    "xlm-roberta": "encoder",
    "t5": "seq2seq",
    "bart": "seq2seq",
}


def _from_config(recipe: ModelRecipe) -> Any:
    try:
        import transformers as tf
    except ImportError:
        raise UserCodeError(
            f"{recipe.label}: building a catalog architecture needs transformers in this "
            "interpreter (pip install transformers), or profile a function that returns the "
            "model (torchward profile FILE.py:FUNCTION)"
        ) from None
    fields = dict(recipe.config)
    fields.pop("model_type", None)
    if "attn_implementation" in fields:
        return _architecture(tf, recipe.model_type, fields)
    try:
        return _architecture(tf, recipe.model_type, {**fields, "attn_implementation": "sdpa"})
    except ValueError:  # no SDPA for this architecture (BLOOM): what from_pretrained gives
        return _architecture(tf, recipe.model_type, {**fields, "attn_implementation": "eager"})


def _architecture(tf: Any, mt: str, fields: dict[str, Any]) -> Any:
    """The transformers model of type ``mt`` built from ``fields`` (no weights)."""
    if mt == "vit":
        vit_config: Any = tf.AutoConfig.for_model(mt, **fields)
        return tf.ViTForImageClassification(vit_config)
    kind = _KINDS.get(mt, "decoder")
    if kind == "encoder":
        fields.setdefault("num_labels", 2)
        return tf.AutoModelForSequenceClassification.from_config(
            tf.AutoConfig.for_model(mt, **fields)
        )
    if kind == "seq2seq":
        if mt == "t5":
            fields.update(pad_token_id=0, decoder_start_token_id=0, eos_token_id=1)
        return tf.AutoModelForSeq2SeqLM.from_config(tf.AutoConfig.for_model(mt, **fields))
    return tf.AutoModelForCausalLM.from_config(tf.AutoConfig.for_model(mt, **fields))


def build_model(recipe: ModelRecipe, before_call: Callable[[], None] = lambda: None) -> Any:
    """The model ``recipe`` describes; ``before_call`` runs after imports, before building."""
    if recipe.kind == "factory":
        factory = load_callable(recipe.target)
        before_call()
        try:
            model = factory(**recipe.arguments)
        except (Exception, SystemExit) as error:  # the user's code may sys.exit()
            raise UserCodeError(
                f"{recipe.target}({', '.join(f'{k}={v!r}' for k, v in recipe.arguments.items())}) "
                f"failed: {type(error).__name__}: {error}"
            ) from error
    elif recipe.kind == "script":
        model = _from_script(recipe, before_call)
    elif recipe.kind == "config":
        before_call()
        model = _from_config(recipe)
    else:
        raise UserCodeError(f"unknown recipe kind {recipe.kind!r}")
    if isinstance(model, tuple) and model:  # a factory returning (model, optimizer, ...)
        model = model[0]
    import torch

    if not isinstance(model, torch.nn.Module):
        raise UserCodeError(
            f"{recipe.label or recipe.target} built a {type(model).__name__}, not an nn.Module"
        )
    return model
