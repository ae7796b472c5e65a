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

Past 400 lines for now (906): the value resolver (:class:`Values`) and ``read_source``
are one reader that issue 12 asks to fold into the analysis engine's facts; splitting
it before that move would be undone by it. Until then the seam is :class:`Values`
(into ``runconfig_values``) apart from ``read_source`` and the model lookup.
"""

from __future__ import annotations

import ast
import json
import os
import re
from typing import Any

from torchward.estimator import dependencies
from torchward.estimator.runconfig import RunConfig

from .modulecount import UNTRACED, ModuleCount, ModuleCounter, module_constants
from .moduletrace import trace_cnn, traced_params
from .names import ImportTable, dotted, qualified_name
from .runconfig_calls import CallReader
from .runconfig_includes import exec_target, include
from .runconfig_paths import UNDECIDED, PathConditions

__all__ = ["read_script", "read_source"]

_CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
_ARG_PARSERS = (
    "parse_args",
    "get_args",
    "parse_opt",
    "get_parser",
    "get_args_parser",
    "create_argparser",
)
_EVAL_NAME = re.compile(r"(^|_)(val|valid|validation|eval|test|sample)(_|$|loader|set|data)", re.I)
_NOT_MODEL_NAMES = ("scratch", "resume", "none", "", "auto")


class ConfigObject(dict):
    """An instance of a config dataclass the script defines (``GPTConfig(n_layer=12)``):
    its field defaults updated with the call's keywords; attributes read as keys."""


_ENV_GETTERS = ("os.environ.get", "os.getenv", "environ.get", "getenv")
_NUMERIC: dict[str, Any] = {
    "int": int,
    "float": float,
    "round": round,
    "max": max,
    "min": min,
    "abs": abs,
    "bool": bool,
    "str": str,
    "len": len,
}
_HARDWARE = {
    "torch.cuda.is_available": True,
    "cuda.is_available": True,
    "torch.cuda.is_bf16_supported": True,
    "torch.backends.mps.is_available": False,
}
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


_LITERAL_NODES = (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp)


# Expressions one top-level question may evaluate (the dev set's scripts need at most 72):
# parameters followed to the call sites of same-named methods in a large model file grow
# exponentially (a BERT modelling file: a minute), and past this the answer is "unknown".
_STEPS = 2000


class _Unknown(Exception):
    """An expression the reader cannot follow."""


class Values:
    """Resolves expressions to the Python values they hold on a default launch.

    Sources, each with a confidence: literals at the use site (high); module and function
    assignments, tuple unpacking, dict literals and their subscripts, config dataclasses the
    script defines, ``argparse`` defaults (``store_true`` = ``False``), dataclass field
    defaults and the parameter defaults of an entry point (``@call_parse``, ``fire``) — all
    medium: a launch can override them; parameters followed to the call sites of their
    function; environment variables read as a plain ``python SCRIPT`` launch sees them
    (unset: the ``get`` default, low); JSON / YAML files the script names (medium, read as
    data, never executed).
    """

    undecided = UNDECIDED  # what :meth:`decide` answers for a test the defaults leave open

    def __init__(
        self,
        tree: ast.Module,
        path: str,
        notes: list[str],
        source_text: str = "",
        argv: tuple[str, ...] = (),
    ) -> None:
        self.argv = argv  # the launch's arguments (a plain ``python SCRIPT``: none)
        self.cited: dict[str, str] = {}  # constant → the file:line of an executed config

        self.source_text = source_text
        self.choices: dict[str, tuple] = {}  # flag → its declared choices
        self.path = path
        self.notes = notes
        self.constants: dict[str, tuple[Any, int]] = {}
        self.defaults: dict[str, tuple[Any, int]] = {}
        self.files: dict[str, tuple[dict, str]] = {}  # variable → (data, file path)
        self.assignments: dict[str, list[tuple[ast.expr, ast.stmt]]] = {}
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.dataclasses: dict[str, ast.ClassDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.updates: dict[str, list[ast.Call]] = {}  # NAME.update(...) calls
        self.tree = tree
        self.paths = PathConditions(tree, self)  # indexes parents only; asks back lazily
        self._active: set[int] = set()
        self.cycles = 0  # how often a guard (cycle, depth, a path state in progress) answered
        self._steps = 0  # expressions evaluated for the current top-level question
        self._memo: dict[int, tuple[Any, str] | None] = {}
        fired = _fired(self.paths)
        for node in self.paths.nodes:
            if isinstance(node, ast.Assign):
                self.assignment(node)
            elif (
                isinstance(node, ast.Expr)
                and (executed := exec_target(node)) is not None
                and self.paths.parent(node) is tree
            ):
                include(self, node, executed)  # a config file / configurator, read as data
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._record(node.target, node.value, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
                if _is_entry_point(node, fired):
                    self._entry_defaults(node)
            elif (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr == "update"
                and isinstance(node.value.func.value, ast.Name)
                and len(node.value.args) == 1
            ):
                self.updates.setdefault(node.value.func.value.id, []).append(node.value)
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            if isinstance(node, ast.ClassDef) and _is_dataclass(node):
                self.dataclasses[node.name] = node
                for stmt in node.body:
                    if (
                        isinstance(stmt, ast.AnnAssign)
                        and isinstance(stmt.target, ast.Name)
                        and stmt.value is not None
                    ):
                        default = _field_default(stmt.value)
                        found = self._try(default) if default is not None else None
                        if found is not None:
                            self.defaults.setdefault(stmt.target.id, (found[0], stmt.lineno))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                self._argument(node)
        self._memo.clear()  # values found before every flag was declared are not final
        self._helpers(tree)
        self._memo.clear()

    def _helpers(self, tree: ast.Module) -> None:
        """Flags declared elsewhere: ``add_dict_to_argparser(parser, defaults)`` with a dict
        the script builds, and ``parse_args`` / ``get_args`` imported from a file of the same
        folder (its ``add_argument`` defaults, read as data)."""
        for node in self.paths.nodes:
            if not isinstance(node, ast.Call):
                continue
            name = (dotted(node.func) or "").rsplit(".", 1)[-1]
            if "argparser" in name.lower() and len(node.args) >= 2:
                found = self.get(node.args[1])
                if found is not None and isinstance(found[0], dict):
                    for key, value in found[0].items():
                        if isinstance(key, str):
                            self.defaults.setdefault(key, (value, node.lineno))
        if self.path.startswith("<"):
            return
        from .workspace import WORKSPACE, resolve_module  # the project's modules, by import

        for node in tree.body:
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if not any(a.name in _ARG_PARSERS for a in node.names):
                continue
            module_path = resolve_module(self.path, node.module, node.level)
            module = WORKSPACE.summary(module_path) if module_path is not None else None
            if module is None:
                continue
            for inner in ast.walk(module.tree):
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr == "add_argument"
                ):
                    self._argument(inner)

    def assignment(self, node: ast.Assign, cited: str | None = None) -> None:
        """``NAME = value`` in file order; ``cited``: it came from an executed config file
        (``config/train_x.py:3``), which is what a value read from it cites."""
        for target in node.targets:
            self._record(target, node.value, node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            value = self._literal(node.value)
            if value is not None:
                self.constants[name] = (value, node.lineno)
                if cited is None:
                    self.cited.pop(name, None)
                else:
                    self.cited[name] = cited
            loaded = self._loaded_file(node.value)
            if loaded is not None:
                self.files[name] = loaded

    def _record(self, target: ast.expr, value: ast.expr, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.assignments.setdefault(target.id, []).append((value, stmt))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            if len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts):
                    self._record(t, v, stmt)

    def _entry_defaults(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Parameters of a command-line entry point are its flags; their defaults the job's."""
        args = function.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for arg, default in pairs:
            annotation = arg.annotation
            if isinstance(annotation, ast.Call):  # fastcore Param("", choices=[...])
                for keyword in annotation.keywords:
                    if keyword.arg == "choices":
                        found = self._literal(keyword.value)
                        if isinstance(found, (list, tuple)):
                            self.choices.setdefault(arg.arg, tuple(found))
            value = self._literal(default)
            if value is not None:
                self.defaults.setdefault(arg.arg, (value, default.lineno))

    @staticmethod
    def _literal(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if not isinstance(node, _LITERAL_NODES):
            return None  # a name, call, attribute...: never a literal (and raising costs)
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    def _argument(self, call: ast.Call) -> None:
        names = [
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        if not names:
            return
        dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        action_node = next((k.value for k in call.keywords if k.arg == "action"), None)
        action = self._literal(action_node) if action_node is not None else None
        long_names = [n for n in names if n.startswith("--")] or names
        key = (
            self._literal(dest) if dest is not None else long_names[0].lstrip("-").replace("-", "_")
        )
        if not isinstance(key, str):
            return
        choices = next((k.value for k in call.keywords if k.arg == "choices"), None)
        if choices is not None and isinstance(self._literal(choices), (list, tuple)):
            self.choices.setdefault(key, tuple(self._literal(choices)))
        if default is None:
            if action in ("store_true", "store_false"):
                self.defaults.setdefault(key, (action == "store_false", call.lineno))
            elif action in (None, "store"):
                self.defaults.setdefault(key, (None, call.lineno))  # argparse: None if not given
            return
        value = self._try(default)
        if value is not None:
            self.defaults.setdefault(key, (value[0], call.lineno))

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
        if not filename.endswith(_CONFIG_SUFFIXES) or not dependencies.is_file(full):
            return None
        try:
            text = dependencies.read_text(full)
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

    def signature(self, name: str) -> list[str]:
        """Parameter names of a function or class ``__init__`` the file defines (no self)."""
        for function in self.functions.get(name, ()):
            return [a.arg for a in function.args.posonlyargs + function.args.args]
        cls = self.classes.get(name)
        if cls is not None:
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                    return [a.arg for a in stmt.args.posonlyargs + stmt.args.args][1:]
        return []

    # -- evaluation ----------------------------------------------------------------------
    def get(self, node: ast.AST | None) -> tuple[Any, str] | None:
        """(value, confidence) of an expression, or ``None`` when it cannot be followed."""
        if node is None:
            return None
        return self._try(node)

    def decide(self, test: ast.expr) -> Any:
        """The value of a branch condition on a default launch, or ``UNDECIDED``."""
        found = self._try(test)
        return UNDECIDED if found is None else found[0]

    def _try(self, node: ast.AST) -> tuple[Any, str] | None:
        literal = self._literal(node)
        if literal is not None:
            return literal, "high"
        if isinstance(node, ast.Attribute):
            text = dotted(node) or ""
            if text.startswith("torch.") and text.rsplit(".", 1)[-1] in _TORCH_DTYPES:
                return "torch." + text.rsplit(".", 1)[-1], "high"  # written in place
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if not self._active:
            self._steps = 0
        self._steps += 1
        if key in self._active or len(self._active) > 40 or self._steps > _STEPS:
            self.cycles += 1  # what is being evaluated now depends on this guess
            return None
        self._active.add(key)
        cycles = self.cycles
        try:
            result: tuple[Any, str] | None = (self._eval(node), "medium")
        except (_Unknown, TypeError, ValueError, ArithmeticError, IndexError, KeyError):
            result = None
        except RecursionError:
            result = None
        finally:
            self._active.discard(key)
        if not self._active or cycles == self.cycles:
            # a value found inside a cycle's guard is final only for the cycle's head; one
            # that met no guard is final anywhere (kept: without it, a parameter followed to
            # the call sites of every same-named method is re-evaluated exponentially often)
            self._memo[key] = result
        return result

    def _value(self, node: ast.AST) -> Any:
        found = self._try(node)
        if found is None:
            raise _Unknown
        return found[0]

    def _eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            base = self._try(node.value)
            key = self._try(node.slice)
            if (
                base is not None
                and key is not None
                and isinstance(base[0], (dict, str, list, tuple))
            ):
                return base[0][key[0]]
            if key is not None and isinstance(key[0], str):
                if (
                    base is None
                    and isinstance(node.value, ast.Name)
                    and node.value.id in self.files
                ):
                    return self.files[node.value.id][0][key[0]]
                if key[0] in self.defaults and base is None:
                    return self.defaults[key[0]][0]  # args["batch_size"]: a dict of the flags
            raise _Unknown
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self._value(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            result = {}
            for key_node, value_node in zip(node.keys, node.values):
                if key_node is None:
                    inner = self._value(value_node)
                    if not isinstance(inner, dict):
                        raise _Unknown
                    result.update(inner)
                else:
                    result[self._value(key_node)] = self._value(value_node)
            return result
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](self._value(node.left), self._value(node.right))
        if isinstance(node, ast.UnaryOp):
            inner = self._value(node.operand)
            if isinstance(node.op, ast.Not):
                return not inner
            if isinstance(node.op, ast.USub):
                return -inner
            raise _Unknown
        if isinstance(node, ast.BoolOp):
            operands = [self._try(v) for v in node.values]
            deciding = (lambda v: not v) if isinstance(node.op, ast.And) else bool
            for operand in operands:
                if operand is not None and deciding(operand[0]):
                    return operand[0]  # short-circuits whatever the others hold
            known = [o for o in operands if o is not None]
            if len(known) < len(operands):
                raise _Unknown
            return known[-1][0]
        if isinstance(node, ast.Compare):
            left = self._value(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self._value(right_node)
                if type(op) not in _COMPARE or not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self._value(node.body if self._value(node.test) else node.orelse)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _Unknown

    def _name(self, node: ast.Name) -> Any:
        """The last assignment before ``node`` in its function that runs by default, then
        in the enclosing functions (closures) and the module; a parameter is followed to
        its call sites. ``NAME.update(other)`` calls in between are applied to a dict."""
        if node.id == "__name__":
            return "__main__"  # the script is what runs
        candidates = self.assignments.get(node.id, [])
        function = self.paths.enclosing_function(node)
        scope: ast.AST | None = function
        while True:
            local = [
                (v, s)
                for v, s in candidates
                if self.paths.enclosing_function(s) is scope
                and (scope is None or s.lineno <= node.lineno)
            ]
            for value, stmt in reversed(local):
                state = self.paths.state(stmt)
                if not state.runs:
                    continue
                if state == "unsure":
                    raise _Unknown  # assigned under a condition nobody can decide
                found = self._try(value)
                if found is not None:
                    return self._updated(node.id, found[0], stmt, node, scope)
            if scope is not None and any(a.arg == node.id for a in _all_args(scope.args)):  # type: ignore[attr-defined]
                return self._parameter(scope, node.id)  # type: ignore[arg-type]
            if scope is None:
                break
            scope = self.paths.enclosing_function(scope)
        if node.id in self.constants:
            return self.constants[node.id][0]
        raise _Unknown

    def _updated(self, name: str, value: Any, stmt: ast.stmt, use: ast.AST, scope) -> Any:
        if not isinstance(value, dict) or name not in self.updates:
            return value
        value = dict(value)
        for call in self.updates[name]:
            if (
                stmt.lineno < call.lineno <= getattr(use, "lineno", 0)
                and self.paths.enclosing_function(call) is scope
                and self.paths.state(call).runs
            ):
                extra = self._try(call.args[0])
                if extra is None or not isinstance(extra[0], dict):
                    raise _Unknown  # updated with something unknown: the keys are not knowable
                value.update(extra[0])
        return value

    def _parameter(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> Any:
        """A parameter: the argument of the first call site that runs, else its default."""
        args = function.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        for call in self.paths.calls_by_name.get(function.name, ()):
            if not (
                (isinstance(call.func, ast.Name) and call.func.id == function.name)
                or (isinstance(call.func, ast.Attribute) and call.func.attr == function.name)
            ):
                continue  # passed as a callback: its arguments are not visible here
            if not self.paths.state(call).runs:
                continue
            names = positional
            if names and names[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
                names = names[1:]
            keyword = next((k.value for k in call.keywords if k.arg == name), None)
            argument = keyword
            if argument is None and name in names:
                index = names.index(name)
                if index < len(call.args) and not any(
                    isinstance(a, ast.Starred) for a in call.args[: index + 1]
                ):
                    argument = call.args[index]
            if argument is not None:
                found = self._try(argument)
                if found is not None:
                    return found[0]
        all_positional = args.posonlyargs + args.args
        defaults = dict(
            zip(
                [a.arg for a in all_positional[len(all_positional) - len(args.defaults) :]],
                args.defaults,
            )
        )
        defaults.update(
            {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        )
        if name in defaults:
            return self._value(defaults[name])
        raise _Unknown

    def _attribute(self, node: ast.Attribute) -> Any:
        text = dotted(node) or ""
        if text == "sys.argv":
            return (self.path, *self.argv)  # what the launch passes (plain: nothing)
        if text.startswith("torch.") and text.rsplit(".", 1)[-1] in _TORCH_DTYPES:
            return "torch." + text.rsplit(".", 1)[-1]
        base = self._try(node.value)
        if base is not None and isinstance(base[0], dict):
            return base[0][node.attr]
        if node.attr in self.defaults:
            return self.defaults[node.attr][0]
        raise _Unknown

    def _call(self, node: ast.Call) -> Any:
        name = dotted(node.func) or ""
        if name in _NUMERIC and not node.keywords:
            return _NUMERIC[name](*(self._value(a) for a in node.args))
        if name in _HARDWARE:  # the job runs on a CUDA GPU (sm80+): what the estimate is for
            return _HARDWARE[name]
        if name.endswith(_ENV_GETTERS):
            # a plain ``python SCRIPT`` launch sets no distributed variables: the default
            if len(node.args) >= 2:
                return self._value(node.args[1])
            if len(node.args) == 1:
                return None
            raise _Unknown
        if name == "dict" and not node.args:
            return {k.arg: self._value(k.value) for k in node.keywords if k.arg}
        if name in self.dataclasses:
            result = ConfigObject()
            for stmt in self.dataclasses[name].body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    default = _field_default(stmt.value) if stmt.value is not None else None
                    found = self._try(default) if default is not None else None
                    if found is not None:
                        result[stmt.target.id] = found[0]
            for keyword in node.keywords:
                if keyword.arg is None:
                    extra = self._value(keyword.value)
                    if not isinstance(extra, dict):
                        raise _Unknown
                    result.update(extra)
                else:
                    result[keyword.arg] = self._value(keyword.value)
            return result
        raise _Unknown


_TORCH_DTYPES = ("bfloat16", "float16", "half", "float32", "float", "float64")


def _all_args(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


def _field_default(value: ast.expr) -> ast.expr | None:
    """``x: int = 3`` → ``3``; ``x: int = field(default=3)`` → ``3``; a factory → ``None``."""
    if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("field"):
        return next((k.value for k in value.keywords if k.arg == "default"), None)
    return value


def _is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (dotted(target) or "").endswith("dataclass"):
            return True
    return any(
        (dotted(b) or "").endswith(("TrainingArguments", "SFTConfig", "Config")) for b in node.bases
    ) and any(isinstance(s, ast.AnnAssign) for s in node.body)


def _is_entry_point(function: ast.FunctionDef | ast.AsyncFunctionDef, fired: set[str]) -> bool:
    """``@call_parse`` / ``@click.command`` / ``@app.command`` / ``fire.Fire(main)``."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (dotted(target) or "").rsplit(".", 1)[-1] in ("call_parse", "command", "script"):
            return True
    return function.name in fired


def _fired(paths: PathConditions) -> set[str]:
    """Functions handed to a command-line runner at the top level (``fire.Fire(main)``):
    calls named ``…Fire`` / ``…CLI`` / ``typer.run`` inside a top-level ``if`` or
    expression statement (the call index is the one the path conditions built)."""
    names: set[str] = set()
    for name, calls in paths.calls_by_name.items():
        if not name.endswith(("Fire", "CLI")) and name != "run":
            continue
        for call in calls:
            if not (dotted(call.func) or "").endswith(("Fire", "typer.run", "CLI")):
                continue  # the name was an argument of this call, or another ``run``
            statement: ast.AST = call
            while (parent := paths.parent(statement)) is not None and not isinstance(
                parent, ast.Module
            ):
                statement = parent
            if isinstance(statement, (ast.If, ast.Expr)):
                names.update(a.id for a in call.args if isinstance(a, ast.Name))
    return names


def _assigned_name(node: ast.AST, values: Values) -> str:
    """The name the statement holding ``node`` assigns (``val_loader = DataLoader(...)``)."""
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = values.paths.parent(current)
    if isinstance(current, (ast.Assign, ast.AnnAssign)):
        targets = current.targets if isinstance(current, ast.Assign) else [current.target]
        return " ".join(ast.unparse(t) for t in targets)
    return ""


def _call_name(call: ast.Call, imports: ImportTable, values: Values | None = None) -> str:
    """Qualified name, else dotted path, else the method name of a call on a call's result.

    A class chosen into a variable first (``optimizer_class = torch.optim.AdamW`` on the
    default branch, then ``optimizer_class(params)``) is called by that class's name."""
    name = qualified_name(call.func, imports) or dotted(call.func)
    if isinstance(call.func, ast.Name) and values is not None and name == call.func.id:
        for value, stmt in reversed(values.assignments.get(call.func.id, [])):
            if (
                isinstance(value, (ast.Attribute, ast.Name))
                and values.paths.state(stmt) == "default"
            ):
                chosen = qualified_name(value, imports) or dotted(value)
                if chosen:
                    return chosen
    if name:
        return name
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def read_source(
    source: str, path: str = "<script>", argv: tuple[str, ...] = ()
) -> tuple[RunConfig, list[str]]:
    """The run configuration ``source`` describes, and notes about what could not be read.

    ``argv``: the arguments the script is launched with (none: a plain ``python SCRIPT``);
    a configurator the script executes applies them (:mod:`.runconfig_includes`)."""
    notes: list[str] = []
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        return RunConfig(), [f"{path}: not parsed ({error.msg})"]
    values = Values(tree, path, notes, source, argv)
    reader = CallReader(
        ImportTable(tree), values, os.path.basename(path) if path.startswith("<") else path
    )
    calls: list[ast.Call] = []
    for node in values.paths.nodes:
        if isinstance(node, ast.Call):
            calls.append(node)
        elif (
            isinstance(node, ast.Subscript)
            and (dotted(node.value) or "").endswith("environ")
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == "WORLD_SIZE"
        ):
            if values.paths.state(node).runs:  # os.environ["WORLD_SIZE"] on the default path
                reader.signals.setdefault("world-size-env", node.lineno)
            else:
                reader.skipped.append((node, values.paths.state(node)))
        elif isinstance(node, ast.Subscript):
            _model_by_name(node, values, reader)
    calls.sort(key=lambda c: (c.lineno, c.col_offset))
    for node in calls:
        state = values.paths.state(node)
        if not state.runs:
            reader.skipped.append((node, state))
            continue
        target = _assigned_name(node, values)
        reader.target = target
        reader.path_cap = state.confidence_cap
        reader.cap = "low" if _EVAL_NAME.search(target) else state.confidence_cap
        reader.call(node, _call_name(node, reader.imports, values))
    reader.cap = "high"
    reader.conventions(values)
    if "model" in reader.fields and _registered_model_call(tree, path, values, reader):
        del reader.fields["model"]  # ``create_model(args.arch)`` builds a project class
    if "model" not in reader.fields:
        _workspace_model(tree, path, values, reader, notes)
    config = reader.config()
    return config, notes + reader.notes


def _model_by_name(node: ast.Subscript, values: Values, reader: CallReader) -> None:
    """``models.__dict__[args.arch]`` / ``torchvision_models.__dict__[name]``: the
    torchvision builder the default name selects."""
    if not (isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__"):
        return
    module = qualified_name(node.value.value, reader.imports) or ""
    if not module.startswith("torchvision.models"):
        return
    state = values.paths.state(node)
    if not state.runs:
        return
    found = values.get(node.slice)
    if found and isinstance(found[0], str) and found[0].lower() not in _NOT_MODEL_NAMES:
        reader.cap = state.confidence_cap
        reader.set("model", found[0], node.lineno, found[1])
        reader.cap = "high"


_LOADS = re.compile(r"(?i)load.*(weight|state_dict|checkpoint|pretrained)|from_pretrained")


def _loads_weights(values: Values) -> bool:
    """Whether the default path loads trained weights (``load_state_dict``,
    ``load_weights_into_gpt``, ``GPT.from_pretrained``)."""
    for node in values.paths.nodes:
        if isinstance(node, ast.Call):
            name = (dotted(node.func) or "").rsplit(".", 1)[-1]
            if _LOADS.search(name) and values.paths.state(node) == "default":
                return True
    return False


def _inside_module_class(node: ast.AST, values: Values, counter: ModuleCounter) -> bool:
    current = values.paths.parent(node)
    while current is not None:
        if isinstance(current, ast.ClassDef) and current.name in counter.modules:
            return True
        current = values.paths.parent(current)
    return False


def _registered_model_call(tree: ast.Module, path: str, values: Values, reader: CallReader) -> bool:
    """Whether the model name read so far came from a call that builds a class of the
    project by key (a decorator registry's ``create_model(args.arch)``, not a hub id)."""
    from .workspace.models import indirect_models

    source = reader.fields["model"].source
    calls = [
        n
        for n in values.paths.nodes
        if isinstance(n, ast.Call) and source == f"{reader.path}:{n.lineno}"
    ]
    return bool(calls) and bool(
        indirect_models(tree, path, calls, lambda n: (values.get(n) or (None,))[0])
    )


def _models_by_key(
    tree: ast.Module, path: str, values: Values, counter: ModuleCounter
) -> dict[int, str]:
    """Calls that build a project model class not named at the call (``models.Net(...)``,
    ``MODELS[args.arch](...)``, ``create_model(args.model)`` over a decorator registry,
    ``models.__dict__[args.arch](...)``): by call, the class name ``counter`` counts it by
    (:func:`torchward.analysis.workspace.models.indirect_models`)."""
    from .workspace.models import indirect_models

    calls = [n for n in values.paths.nodes if isinstance(n, ast.Call)]
    found: dict[int, str] = {}
    for call, model in indirect_models(tree, path, calls, lambda n: (values.get(n) or (None,))[0]):
        if isinstance(model, str):
            found[id(call)] = model
        else:
            counter.adopt(model.name, model.module.tree, model.module.path, model.name)
            found[id(call)] = model.name
    return found


def _workspace_model(
    tree: ast.Module, path: str, values: Values, reader: CallReader, notes: list[str]
) -> None:
    """The script trains its own ``nn.Module``: count it from its layer constructors.

    Among the instantiations of local module classes outside their own bodies, the one
    with the most parameters is the model. Its arguments are followed like every other
    value (literals, constants, argparse defaults); layers that cannot be sized are named
    in a note, and lower the confidence, instead of being guessed.
    """
    called = {  # classes (by convention capitalised) the script instantiates
        n.func.id
        for n in values.paths.nodes
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id[:1].isupper()
    }
    counter = ModuleCounter(tree, path, module_constants(tree), wanted=called)
    chosen = _models_by_key(tree, path, values, counter)
    if not counter.modules:
        return
    best: tuple[int, ast.Call, ModuleCount, str] | None = None
    best_args: tuple[list, dict] = ([], {})
    best_name = ""
    for node in values.paths.nodes:
        if not isinstance(node, ast.Call):
            continue
        name = chosen.get(id(node)) or (node.func.id if isinstance(node.func, ast.Name) else None)
        if name is None or name not in counter.modules:
            continue
        if _inside_module_class(node, values, counter):
            continue  # a layer built inside another module's body, not the model itself
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
        count = counter.count_class(name, args, kwargs)
        if best is None or count.params > best[0]:
            best = (count.params, node, count, confidence)
            best_args = (args, kwargs)
            best_name = name
    if best is None or best[0] == 0:
        return
    params, node, count, confidence = best
    name = best_name
    owner = counter.classes[name][1]
    structure = _decoder_structure(node, values, tree if owner is counter else owner.path, name)
    if structure is None:
        layers = trace_cnn(counter, name, best_args[0], best_args[1])
        if layers is not None and traced_params(layers) > params:
            # the trace followed what the counter could not (self._make_layer(...) blocks)
            params, count, confidence = (
                traced_params(layers),
                ModuleCount(traced_params(layers)),
                "medium",
            )
        if layers is not None:
            first = next((layer for layer in layers if layer[0] == "conv"), None)
            structure = {
                "model_type": "script-cnn",
                "params": params,
                "in_channels": first[1] if first else 3,
                "layers": layers,
            }
    if count.unknown:
        confidence = "low"
        shown = ", ".join(dict.fromkeys(count.unknown))
        notes.append(f"{name}: {params:,} parameters counted; not sized: {shown[:300]}")
    reader.set("model", name, node.lineno, confidence)
    if not _loads_weights(values):  # built from its own layers, nothing loaded into it
        reader.set("pretrained", False, node.lineno, "medium")
    if structure is not None:
        reader.set(
            "structure",
            structure,
            node.lineno,
            "medium",
            f"{reader.path}:{node.lineno} ({name}'s "
            + (
                "config, a GPT-style decoder)"
                if structure["model_type"] == "gpt2"
                else "layers in construction order, a CNN)"
            ),
        )
    reader.set(
        "params", params, node.lineno, confidence, f"{reader.path}:{node.lineno} ({name}'s layers)"
    )


_STRUCTURE_KEYS = {
    "n_layer": ("n_layer", "n_layers", "num_layers", "depth", "num_hidden_layers"),
    "n_embd": ("n_embd", "emb_dim", "n_embed", "d_model", "hidden_size", "dim", "embed_dim"),
    "n_head": ("n_head", "n_heads", "num_heads", "num_attention_heads"),
    "vocab_size": ("vocab_size", "vocab", "n_vocab"),
    "n_positions": ("block_size", "context_length", "n_positions", "max_seq_len", "n_ctx"),
}


def _decoder_structure(
    call: ast.Call, values: Values, module: ast.Module | str, name: str
) -> dict | None:
    """A GPT-style decoder's shape from the config the model is built with.

    The model's class (and its file) must build token embeddings and attention (an
    ``nn.Embedding`` and ``scaled_dot_product_attention`` / ``softmax`` / ``MultiheadAttention``),
    and its config must name the layers, width, heads and vocabulary (``n_layer``,
    ``emb_dim``, ...). The cost model then treats it as a GPT-2-style decoder of that shape:
    learned positions, a 4x GELU MLP, LayerNorm — approximate for other variants.
    """
    if isinstance(module, str):  # a class imported from a file of the same folder
        try:
            text = dependencies.read_text(module, encoding="utf-8-sig")
        except (OSError, ValueError):
            return None
    else:  # the script itself: its text, not an unparse of its tree (a third of a read)
        text = values.source_text or ast.unparse(module)
    if not text or "Embedding" not in text:
        return None
    if not any(
        k in text for k in ("scaled_dot_product_attention", "softmax", "MultiheadAttention")
    ):
        return None
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        found = values.get(arg)
        if found is None or not isinstance(found[0], dict):
            continue
        config = found[0]
        shape: dict[str, Any] = {"model_type": "gpt2"}
        for key, names in _STRUCTURE_KEYS.items():
            value = next((config[n] for n in names if isinstance(config.get(n), int)), None)
            if value is not None and not isinstance(value, bool):
                shape[key] = value
        if all(k in shape for k in ("n_layer", "n_embd", "n_head", "vocab_size")):
            shape.setdefault("n_positions", 1024)
            shape["n_inner"] = 4 * shape["n_embd"]
            drop = next(
                (config[n] for n in ("dropout", "drop_rate", "resid_pdrop") if n in config), 0.0
            )
            shape["resid_pdrop"] = drop if isinstance(drop, (int, float)) else 0.0
            # the file's GELU: torch's fused op, or a Python composite with tanh (saves more)
            composite = "tanh(" in text and "class GELU" in text
            shape["activation_function"] = "gelu_new" if composite else "gelu_pytorch_tanh"
            return shape
    return None


def read_script(path: str, argv: tuple[str, ...] = ()) -> tuple[RunConfig, list[str]]:
    """Read the file at ``path`` (raises ``OSError`` when it cannot be read)."""
    with open(path, encoding="utf-8-sig") as handle:
        return read_source(handle.read(), path, argv)
