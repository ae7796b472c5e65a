"""What a call folds to on a plain launch: launch mode's model of the calls that make a
run configuration.

``argparse`` parsers and what ``parse_args`` returns (:mod:`.launch_arguments`),
``HfArgumentParser`` over the script's dataclasses, a config dataclass the script defines
(``GPTConfig(n_layer=24)``: a namespace of its fields), config files the script loads (the
caller's data: :class:`~.launch_driver.LaunchInputs`), the environment and the hardware as
a plain single-GPU launch sees them, ``dict(...)`` and ``locals()``, and the pure builtins
(``int``, ``len``, ``min``...). A collaborator of :class:`~.launch.LaunchFolding`, which
folds every other expression.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable
from typing import TYPE_CHECKING

from ..syntax.names import dotted
from .binding import field_default
from .conditions import PathCondition
from .constants import (
    STRING_METHODS,
    UNDECIDED,
    Items,
    TensorShape,
    apply_folded,
    is_items,
    string_method,
    worst_condition,
)
from .launch_arguments import ArgumentDefaults, DataclassParser, Namespace, parser_call
from .launch_library import library_fields

if TYPE_CHECKING:
    from .interpreter import FunctionRun
    from .launch import LaunchFolding

__all__ = ["LaunchCalls", "is_dataclass"]

_PURE_CALLS = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
}
#: what a default single-GPU launch on a CUDA machine answers
_HARDWARE: dict[str, Hashable] = {
    "torch.cuda.is_available": True,
    "torch.cuda.is_bf16_supported": True,
    "torch.cuda.device_count": 1,
    "torch.backends.mps.is_available": False,
    "torch.distributed.is_initialized": False,
    "torch.distributed.is_available": True,
}
_ENVIRONMENT_GETTERS = ("os.environ.get", "os.getenv")
#: factories whose sizes are their positional arguments (or one tuple of them)
_TENSOR_FACTORIES = frozenset(
    f"torch.{name}" for name in ("randn", "rand", "zeros", "ones", "empty", "Tensor")
)
_CONFIG_LOADERS = ("json.load", "safe_load", "yaml.load", "full_load")


class LaunchCalls:
    """Call folding for one run's :class:`~.launch.LaunchFolding`: the operands fold
    through ``folding``, the run's path condition and variables are read through ``run``."""

    def __init__(self, run: FunctionRun, folding: LaunchFolding) -> None:
        self.run = run
        self.folding = folding
        self.analyzer = run.analyzer

    def _with_parents(self, node: ast.Call) -> Hashable:
        """``ArgumentParser(parents=[base])``: a new parser holding its parents' flags and
        defaults as they stand here (argparse copies them); a parent nobody can fold
        leaves the parser undecided."""
        parser = ArgumentDefaults()
        for keyword in node.keywords:
            if keyword.arg != "parents":
                continue
            parents, _ = self.folding.fold_pair(keyword.value)
            if not isinstance(parents, tuple) or not all(
                isinstance(p, ArgumentDefaults) for p in parents
            ):
                return UNDECIDED
            for parent in parents:
                for dest, default in parent.defaults:
                    parser = parser.with_flag(dest, default)
        return parser

    def fold_call(self, node: ast.Call, name: str) -> tuple[Hashable, PathCondition]:
        here = self.run.condition
        returns = self.folding.driver.inputs.returns
        if returns and isinstance(node.func, ast.Name) and node.func.id in returns:
            return returns[node.func.id], here  # ``args = parse_args()`` from the project
        if name.endswith("argparse.ArgumentParser") or name == "ArgumentParser":
            return self._with_parents(node), here
        if name.endswith("HfArgumentParser") and node.args:
            listed = node.args[0]
            classes = listed.elts if isinstance(listed, (ast.Tuple, ast.List)) else [listed]
            names = tuple(dotted(c) or "" for c in classes)
            return DataclassParser(names), here
        if isinstance(node.func, ast.Attribute) and node.func.attr.startswith("parse_"):
            receiver, condition = self.folding.fold_pair(node.func.value)
            if isinstance(receiver, DataclassParser):
                if node.func.attr != "parse_args_into_dataclasses":
                    return UNDECIDED, here
                return tuple(self._dataclass_defaults(n) for n in receiver.classes), condition
            parsed = parser_call(node.func.attr, receiver)
            return (parsed, condition) if parsed is not None else (UNDECIDED, here)
        if name.endswith(_CONFIG_LOADERS) and node.args:
            return self._loaded(node.args[0]), here
        if name in _HARDWARE and not node.args:
            return _HARDWARE[name], here
        if name in _TENSOR_FACTORIES and node.args:
            return self._tensor(node), here
        if isinstance(node.func, ast.Attribute) and node.func.attr == "size":
            receiver = self.folding.fold_pair(node.func.value)[0]
            if isinstance(receiver, TensorShape):
                index = [self.folding.fold_pair(a)[0] for a in node.args]
                return apply_folded(receiver.size, tuple((i, here) for i in index), here)
        if name in _ENVIRONMENT_GETTERS and node.args:
            # a plain launch sets no launcher variables: the default, or None
            if len(node.args) > 1:
                return self.folding.fold_pair(node.args[1])
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            return self.folding.fold_pair(default) if default is not None else (None, here)
        handed = self._parser_handed_over(node, name)
        if handed is not None:
            return handed
        config_class = self.analyzer.index.classes.get(name)
        if config_class is not None and is_dataclass(config_class.node):
            return self._dataclass_instance(config_class.node, node), here
        imported = (
            self.folding.driver.inputs.dataclasses.get(node.func.id)
            if config_class is None and isinstance(node.func, ast.Name)
            else None
        )
        if imported is not None:  # ``GPTConfig(**model_args)`` from the project's model.py
            return self._dataclass_instance(imported, node, foreign=True), here
        library = library_fields(name) if config_class is None else None
        if library is not None and name.startswith(("transformers.", "trl.")):
            # ``TrainingArguments(output_dir=..., bf16=True)``: the library's defaults under
            # the keywords (the first positional is ``output_dir``)
            fields = dict(library)
            for keyword in node.keywords:
                if keyword.arg is None:
                    return UNDECIDED, here
                fields[keyword.arg] = self.folding.fold_pair(keyword.value)[0]
            return Namespace(tuple(fields.items())), here
        if name == "locals" and not node.args:
            return self.run._locals(), here
        if name == "vars" and len(node.args) == 1 and not node.keywords:
            # ``vars(parser.parse_args())``: the flags as a dict
            found = self.folding.fold_pair(node.args[0])
            if isinstance(found[0], Namespace):
                return Items(found[0].values), found[1]
            return UNDECIDED, here
        if name == "dict" and not node.args and node.keywords:
            keywords = [(k.arg, self.folding.fold_pair(k.value)) for k in node.keywords]
            if any(key is None or part[0] is UNDECIDED for key, part in keywords):
                return UNDECIDED, here
            items = Items((key, part[0]) for key, part in keywords)
            return items, worst_condition(here, [part for _, part in keywords])
        if name == "dict" and len(node.args) == 1 and not node.keywords:
            found = self.folding.fold_pair(node.args[0])
            return found if is_items(found[0]) else (UNDECIDED, here)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in STRING_METHODS and not node.keywords:
            receiver = self.folding.fold_pair(func.value)
            parts = [self.folding.fold_pair(a) for a in node.args]
            found = string_method(receiver[0], func.attr, [p[0] for p in parts])
            if found is UNDECIDED:
                return UNDECIDED, here
            return found, worst_condition(here, [receiver, *parts])
        function = _PURE_CALLS.get(name)
        if function is None or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return UNDECIDED, here
        parts = [self.folding.fold_pair(a) for a in node.args]
        return apply_folded(function, tuple(parts), here)

    def _tensor(self, node: ast.Call) -> Hashable:
        """``torch.randn(4, 1)``, ``torch.zeros((B, T))``: the shape, when every size folds
        to a non-negative int (``torch.Tensor([1.0, 2.0])`` holds data: not a shape)."""
        sizes = [self.folding.fold_pair(a)[0] for a in node.args]
        data = node.func.attr == "Tensor" if isinstance(node.func, ast.Attribute) else False
        if len(sizes) == 1 and isinstance(sizes[0], tuple) and not data:
            sizes = list(sizes[0])  # ``torch.zeros((B, T))``; ``torch.Tensor((1, 2))`` is data
        if not sizes or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes
        ):
            return UNDECIDED
        return TensorShape(tuple(s for s in sizes if isinstance(s, int)))

    def _loaded(self, source: ast.expr) -> Hashable:
        """``json.load(open("cfg.json"))``: the file's data as the caller reads it
        (:class:`~.launch_driver.LaunchInputs`; the engine opens nothing)."""
        if isinstance(source, ast.Call) and source.args:
            opener = dotted(source.func) or ""
            if opener.rsplit(".", 1)[-1] in ("open", "Path"):
                source = source.args[0]
        filename = self.folding.fold_pair(source)[0]
        if not isinstance(filename, str):
            return UNDECIDED
        return self.folding.driver.inputs.load(filename)

    def _parser_handed_over(
        self, node: ast.Call, name: str
    ) -> tuple[Hashable, PathCondition] | None:
        """``parser = deepspeed.add_config_arguments(parser)``: a library function handed
        the parser returns it with flags of its own added — the flags declared so far
        keep their defaults; what it adds is not known (undecided when read)."""
        if name in self.analyzer.index.top_functions or len(node.args) != 1 or node.keywords:
            return None
        handed = self.folding.fold_pair(node.args[0])
        return handed if isinstance(handed[0], ArgumentDefaults) else None

    def _dataclass_defaults(self, name: str) -> Namespace:
        """A dataclass as a plain launch fills it: the script's own, its fields' defaults
        over those it inherits from a library class (:mod:`.launch_library`); a library
        class, its listed fields; any other field undecided on reading."""
        config_class = self.analyzer.index.classes.get(name)
        if config_class is None:
            return Namespace(tuple((library_fields(name) or {}).items()))
        if not is_dataclass(config_class.node):
            return Namespace(())
        instance = self._dataclass_instance(config_class.node, ast.Call(ast.Name(name), [], []))
        if not isinstance(instance, Namespace):
            return Namespace(())
        for base in config_class.node.bases:  # a subclass of ``TrainingArguments``
            inherited = library_fields(dotted(base) or "")
            if inherited is not None:
                own = dict(instance.values)
                return Namespace(tuple({**inherited, **own}.items()))
        return instance

    def _dataclass_instance(
        self, cls: ast.ClassDef, call: ast.Call, foreign: bool = False
    ) -> Hashable:
        """``GPTConfig(n_layer=12)``: the fields' defaults, the call's arguments bound to
        them in order and by name, as the generated ``__init__`` binds them; ``**config``
        with a dict the launch knows binds its items (a factory's field, an unknown
        ``**``: undecided). ``foreign``: the class is another module's, whose names this
        file cannot fold: a default counts only when it is written as a value."""
        fields: dict[str, Hashable] = {}
        for statement in cls.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                default = field_default(statement.value) if statement.value else None
                if default is None or (foreign and not _written_value(default)):
                    found: Hashable = UNDECIDED
                else:
                    found = self.folding.fold_pair(default)[0]
                fields[statement.target.id] = found
        for name, argument in zip(list(fields), call.args):
            fields[name] = self.folding.fold_pair(argument)[0]
        for keyword in call.keywords:
            if keyword.arg is None:  # ``GPTConfig(**model_args)``: a dict the launch decides
                unpacked = self.folding.fold_pair(keyword.value)[0]
                if not is_items(unpacked):
                    return UNDECIDED
                for key, item in unpacked:
                    if not isinstance(key, str):
                        return UNDECIDED
                    fields[key] = item
                continue
            fields[keyword.arg] = self.folding.fold_pair(keyword.value)[0]
        return Namespace(tuple(fields.items()))

    def locals_items(self) -> Items:
        """``locals()``: the function's variables as a dict of their launch values
        (``dict(locals())`` packages an entry point's parameters for its workers)."""
        return Items(
            (name, value.constant.value if value.constant is not None else UNDECIDED)
            for name, value in self.run.env.items()
            if "." not in name
        )


def _written_value(node: ast.expr) -> bool:
    """A literal (``12``, ``-1``, ``"gelu"``, ``(1, 2)``): the same in any module."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def is_dataclass(cls: ast.ClassDef) -> bool:
    """``@dataclass`` / ``@dataclasses.dataclass(...)`` on a class the script defines."""
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (dotted(target) or "").endswith("dataclass"):
            return True
    return False
