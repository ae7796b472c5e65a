"""Read a script's run configuration from its source, for the VRAM estimator.

The script is parsed with ``ast`` and never imported or run. Calls are recognised by
qualified name through :class:`~.names.ImportTable` (``transformers.TrainingArguments``,
``torch.optim.AdamW``), falling back to the call's last name for methods on values
(``.from_pretrained``, ``.generate``, ``.gradient_checkpointing_enable``). Values are
followed to where real scripts keep them: literals (high confidence), module constants
and ``argparse`` defaults (medium: the command line can override them), and keys of a
JSON (or, when PyYAML is installed, YAML) config file the script names (medium).

Every field carries ``path:line``. The fields found go into an
:class:`~torchward.estimator.runconfig.RunConfig`; what was not found stays ``None``, so
the estimator names it as missing instead of guessing.
"""

from __future__ import annotations

import ast
import json
import os
from typing import Any

from torchward.estimator.runconfig import RunConfig

from .modulecount import UNTRACED, ModuleCount, ModuleCounter, module_constants
from .names import ImportTable, dotted, qualified_name
from .runconfig_calls import CallReader

__all__ = ["read_script", "read_source"]

_CONFIG_SUFFIXES = (".json", ".yaml", ".yml")


class Values:
    """Resolves expressions to Python values: literals, constants, argparse defaults, files."""

    def __init__(self, tree: ast.Module, path: str, notes: list[str]) -> None:
        self.path = path
        self.notes = notes
        self.constants: dict[str, tuple[Any, int]] = {}
        self.defaults: dict[str, tuple[Any, int]] = {}
        self.files: dict[str, tuple[dict, str]] = {}  # variable → (data, file path)
        self.tree = tree
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    value = self._literal(node.value)
                    if value is not None:
                        self.constants[target.id] = (value, node.lineno)
                    loaded = self._loaded_file(node.value)
                    if loaded is not None:
                        self.files[target.id] = loaded
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                self._argument(node)

    @staticmethod
    def _literal(node: ast.AST) -> Any:
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    def _argument(self, call: ast.Call) -> None:
        names = [
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        if default is None or not names:
            return
        key = (
            self._literal(dest)
            if dest is not None
            else max(names, key=len).lstrip("-").replace("-", "_")
        )
        value = self.get(default)
        if value is not None:
            self.defaults[key] = (value[0], call.lineno)

    def _loaded_file(self, node: ast.AST) -> tuple[dict, str] | None:
        """``json.load(open("cfg.json"))``, ``yaml.safe_load(open(...))`` → (data, path)."""
        if not isinstance(node, ast.Call) or not node.args:
            return None
        name = dotted(node.func) or ""
        if not name.endswith(("json.load", "safe_load", "yaml.load", "full_load")):
            return None
        inner = node.args[0]
        if (
            isinstance(inner, ast.Call)
            and inner.args
            and (dotted(inner.func) or "").endswith("open")
        ):
            inner = inner.args[0]
        filename = self._literal(inner)
        if isinstance(filename, str):
            return self.read_file(filename)
        return None

    def read_file(self, filename: str) -> tuple[dict, str] | None:
        full = os.path.join(os.path.dirname(os.path.abspath(self.path)), filename)
        if not filename.endswith(_CONFIG_SUFFIXES) or not os.path.isfile(full):
            return None
        try:
            with open(full, encoding="utf-8") as handle:
                text = handle.read()
            if filename.endswith(".json"):
                data = json.loads(text)
            else:
                try:
                    import yaml  # optional: not a torchward dependency
                except ImportError:
                    self.notes.append(f"{filename}: YAML config not read (PyYAML is not installed)")
                    return None
                data = yaml.safe_load(text)
        except (OSError, ValueError) as error:
            self.notes.append(f"{filename}: not read ({error})")
            return None
        return (data, full) if isinstance(data, dict) else None

    def get(self, node: ast.AST | None) -> tuple[Any, str] | None:
        """(value, confidence) of an expression, or ``None`` when it cannot be followed."""
        if node is None:
            return None
        value = self._literal(node)
        if value is not None:
            return value, "high"
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id][0], "medium"
        if isinstance(node, ast.Attribute) and node.attr in self.defaults:
            return self.defaults[node.attr][0], "medium"
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in self.files
        ):
            key = self._literal(node.slice)
            data = self.files[node.value.id][0]
            if isinstance(key, str) and key in data:
                return data[key], "medium"
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.FloorDiv)):
            left, right = self.get(node.left), self.get(node.right)
            if left and right and all(isinstance(v[0], int) for v in (left, right)):
                op = {ast.Mult: int.__mul__, ast.Add: int.__add__, ast.FloorDiv: int.__floordiv__}
                return op[type(node.op)](left[0], right[0]), "medium"
        return None


def _call_name(call: ast.Call, imports: ImportTable) -> str:
    """Qualified name, else dotted path, else the method name of a call on a call's result."""
    name = qualified_name(call.func, imports) or dotted(call.func)
    if name:
        return name
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def read_source(source: str, path: str = "<script>") -> tuple[RunConfig, list[str]]:
    """The run configuration ``source`` describes, and notes about what could not be read."""
    notes: list[str] = []
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        return RunConfig(), [f"{path}: not parsed ({error.msg})"]
    values = Values(tree, path, notes)
    reader = CallReader(
        ImportTable(tree), values, os.path.basename(path) if path.startswith("<") else path
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            reader.call(node, _call_name(node, reader.imports))
        elif (
            isinstance(node, ast.Subscript)
            and (dotted(node.value) or "").endswith("environ")
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == "WORLD_SIZE"
        ):
            reader.signals.setdefault("world-size-env", node.lineno)  # os.environ["WORLD_SIZE"]
    if "model" not in reader.fields:
        _workspace_model(tree, path, values, reader, notes)
    config = reader.config()
    return config, notes + reader.notes


def _workspace_model(
    tree: ast.Module, path: str, values: Values, reader: CallReader, notes: list[str]
) -> None:
    """The script trains its own ``nn.Module``: count it from its layer constructors.

    Among the instantiations of local module classes outside their own bodies, the one
    with the most parameters is the model. Its arguments are followed like every other
    value (literals, constants, argparse defaults); layers that cannot be sized are named
    in a note, and lower the confidence, instead of being guessed.
    """
    counter = ModuleCounter(tree, path, module_constants(tree))
    if not counter.modules:
        return
    best: tuple[int, ast.Call, ModuleCount, str] | None = None
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef) and statement.name in counter.modules:
            continue
        for node in ast.walk(statement):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in counter.modules
            ):
                continue
            confidence = "high"
            args, kwargs = [], {}
            for arg in node.args:
                found = values.get(arg)
                args.append(UNTRACED if found is None else found[0])
                confidence = "medium" if found and found[1] != "high" else confidence
            for kw in node.keywords:
                if kw.arg:
                    found = values.get(kw.value)
                    kwargs[kw.arg] = UNTRACED if found is None else found[0]
                    confidence = "medium" if found and found[1] != "high" else confidence
            count = counter.count_class(node.func.id, args, kwargs)
            if best is None or count.params > best[0]:
                best = (count.params, node, count, confidence)
    if best is None or best[0] == 0:
        return
    params, node, count, confidence = best
    name = node.func.id
    if count.unknown:
        confidence = "low"
        shown = ", ".join(dict.fromkeys(count.unknown))
        notes.append(f"{name}: {params:,} parameters counted; not sized: {shown[:300]}")
    reader.set("model", name, node.lineno, confidence)
    reader.set(
        "params", params, node.lineno, confidence, f"{reader.path}:{node.lineno} ({name}'s layers)"
    )


def read_script(path: str) -> tuple[RunConfig, list[str]]:
    """Read the file at ``path`` (raises ``OSError`` when it cannot be read)."""
    with open(path, encoding="utf-8-sig") as handle:
        return read_source(handle.read(), path)
