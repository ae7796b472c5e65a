"""Which call of a script builds the model a profile measures (source only, no torch here).

The static reader that ``torchward estimate`` uses names the model and the line it is
built on (the ``model`` field of the run configuration, ``train.py:32``). The profile
builds the model by evaluating *that* call, so both measure the same model. On that line
the call is one of:

- a class or function of the project (``GPT(config)``, ``make_mlp(784, args.hidden)``,
  a class imported from a sibling file, or one a ``from models import *`` brings in), or
  a class of an installed package (``from llms_from_scratch.ch04 import GPTModel``; a
  function of one is never called: it may load data or weights);
- a torchvision builder (``torchvision.models.resnet18()``, or
  ``models.__dict__[args.arch]()`` with the argparse default);
- ``timm.create_model(name, ...)``;
- transformers' ``AutoModel*.from_config(config)`` / ``<Model>(config)``.

A method chain around it (``GPT(config).to(device)``, ``.cuda()``) is not part of the
construction. When the reader names no model (it could not count one), the profile
still looks for it: the last assignment of such a call to a name like ``model`` /
``net`` (not a config class, ``model_config = ModelConfig(...)``, nor a wrapper,
``model = DDP(model)``). A model named by a checkpoint or hub id (``from_pretrained``) is built from its
config instead (:func:`.plan.recipe_for_config`): :func:`find_construction` returns
``None`` for it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Construction", "find_construction", "line_of"]

# methods a script chains on the constructed model that do not change what it is
_CHAINED = {
    "to",
    "cuda",
    "cpu",
    "float",
    "half",
    "bfloat16",
    "train",
    "eval",
    "requires_grad_",
    "to_empty",
}
_MODEL_NAMES = ("model", "net")


@dataclass(frozen=True)
class Construction:
    """The call that returns the model, and where its class comes from.

    ``library``: ``"local"`` (the project's own code), ``"torchvision"``, ``"timm"`` or
    ``"transformers"``. ``label``: the model's name as the output shows it.
    """

    call: ast.Call
    library: str
    label: str


def line_of(source: str) -> int | None:
    """The line of a field's provenance ``path:line`` (``None`` for a flag or a setting)."""
    head = source.split(" ", 1)[0]
    tail = head.rpartition(":")[2]
    return int(tail) if tail.isdigit() else None


def _unchained(call: ast.Call) -> ast.Call:
    """``GPT(config)`` of ``GPT(config).to(device).train()``."""
    while (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in _CHAINED
        and isinstance(call.func.value, ast.Call)
    ):
        call = call.func.value
    return call


class _Classifier:
    """Tells which constructions a script's names lead to (imports and definitions)."""

    def __init__(self, tree: ast.Module, path: str) -> None:
        from torchward.analysis.syntax.names import ImportTable

        self.imports = ImportTable(tree)
        self.folder = Path(path).resolve().parent
        self.local = {
            n.name
            for n in tree.body
            if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.star_local = any(
            isinstance(n, ast.ImportFrom)
            and n.level == 0
            and n.module is not None
            and any(a.name == "*" for a in n.names)
            and self._is_project_module(n.module)
            for n in ast.walk(tree)
        )

    def _is_project_module(self, module: str) -> bool:
        base = self.folder.joinpath(*module.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    def qualified(self, node: ast.expr) -> str:
        from torchward.analysis.syntax.names import dotted, qualified_name

        return qualified_name(node, self.imports) or dotted(node) or ""

    def library(self, call: ast.Call) -> str | None:
        func = call.func
        if isinstance(func, ast.Subscript):  # models.__dict__[args.arch]
            holder = func.value
            if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
                if self.qualified(holder.value).startswith("torchvision.models"):
                    return "torchvision"
            return None
        name = self.qualified(func)
        if name.startswith("torchvision.models."):
            return "torchvision"
        if name in ("timm.create_model", "timm.models.create_model"):
            return "timm"
        if name.startswith("transformers."):
            last = _last(name)
            if last == "from_config":  # AutoModelForCausalLM.from_config(config)
                return "transformers"
            # a model class called with its config (GPT2LMHeadModel(config)), not a config
            if "." not in name[len("transformers.") :] or isinstance(func, ast.Name):
                is_model = last[:1].isupper() and not last.endswith(("Config", "Tokenizer"))
                return "transformers" if is_model else None
            return None
        if isinstance(func, ast.Name):
            if func.id in self.local:
                return "local"
            imported = self.imports.names.get(func.id)
            if imported is not None:
                module = imported.rpartition(".")[0]
                if module and self._is_project_module(module):
                    return "local"
                # a class of an installed package (``from llms_from_scratch.ch04 import
                # GPTModel``); a function of one may load data or weights: not built
                return "local" if func.id[:1].isupper() else None
            if self.star_local and func.id[:1].isalpha():
                return "local"
        return None


def _last(name: str) -> str:
    return name.rpartition(".")[2]


def _label(call: ast.Call, library: str, classifier: _Classifier, config_model: Any) -> str:
    if library in ("torchvision", "timm") and isinstance(config_model, str):
        return config_model
    if library == "timm" and call.args and isinstance(call.args[0], ast.Constant):
        return str(call.args[0].value)
    if isinstance(call.func, ast.Subscript):
        return str(config_model or "torchvision model")
    name = _last(classifier.qualified(call.func))
    if name == "from_config" and isinstance(call.func, ast.Attribute):
        return _last(classifier.qualified(call.func.value))
    return name


def _wraps_or_configures(call: ast.Call) -> bool:
    """``model_config = ModelConfig(...)``, ``model = DDP(model)``: not the model's
    construction, though assigned to a name like ``model``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return (
        name.endswith(("Config", "Args", "Arguments"))
        or "DataParallel" in name
        or (name in ("DDP", "FSDP"))
    )


def _inside_local_class(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    up = parents.get(id(node))
    while up is not None:
        if isinstance(up, ast.ClassDef):
            return True
        up = parents.get(id(up))
    return False


def _candidates_on_line(tree: ast.Module, line: int) -> list[ast.Call]:
    """The calls starting on ``line``, outermost first."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == line]
    return [_unchained(c) for c in calls]


def find_construction(tree: ast.Module, path: str, config: Any) -> Construction | None:
    """The construction of the model ``config`` names (or, unnamed, the one assigned to
    ``model`` / ``net``); ``None`` when there is none to evaluate."""
    classifier = _Classifier(tree, path)
    field = getattr(config, "model", None)
    config_model = field.value if field is not None else None
    if field is not None:
        line = line_of(str(field.source))
        if line is None or not _same_file(str(field.source), path):
            return None  # named by a flag, a setting or a config file: not built here
        for call in _candidates_on_line(tree, line):
            library = classifier.library(call)
            if library is not None:
                return Construction(call, library, _label(call, library, classifier, config_model))
        return None
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    found: list[tuple[int, int, Construction]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or not isinstance(
            node.value, ast.Call
        ):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(
            isinstance(t, ast.Name) and any(m in t.id.lower() for m in _MODEL_NAMES)
            for t in targets
        ):
            continue
        if _inside_local_class(node, parents):
            continue  # a layer of a model, not the model
        call = _unchained(node.value)
        library = classifier.library(call)
        if library is not None and not _wraps_or_configures(call):
            label = _label(call, library, classifier, None)
            found.append((node.lineno, node.col_offset, Construction(call, library, label)))
    if not found:
        return None
    return max(found, key=lambda item: item[:2])[2]


def _same_file(source: str, path: str) -> bool:
    where = source.split(" ", 1)[0].rpartition(":")[0]
    if not where:
        return False
    try:
        return Path(where).resolve() == Path(path).resolve() or Path(where).name == Path(path).name
    except OSError:
        return False
