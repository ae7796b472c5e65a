"""What a script declares as its interface, indexed once for the value evaluator.

:class:`Values` walks the module once (the path conditions' node list) and records what a
launch can set or a value can be followed to: assignments in file order (tuple unpacking
included), literal module constants, ``argparse`` flags with their defaults and choices
(``store_true`` = ``False``; flags declared in a helper module the script imports, or by
``add_dict_to_argparser``), the parameters of a command-line entry point (``@call_parse``,
``fire.Fire(main)``), dataclass field defaults, ``NAME.update(...)`` calls, JSON / YAML
files loaded into a variable, and config files or configurators the script executes
(:mod:`.runconfig_includes`). Evaluation itself is :class:`~.runconfig_values.Evaluator`.
"""

from __future__ import annotations

import ast
import json
import os
from typing import Any

from torchward.estimator import dependencies

from .binding import field_default, parameter_defaults
from .names import dotted
from .runconfig_includes import exec_target, include
from .runconfig_paths import PathConditions
from .runconfig_values import Evaluator, literal

__all__ = ["Values"]

_CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
_ARG_PARSERS = (
    "parse_args",
    "get_args",
    "parse_opt",
    "get_parser",
    "get_args_parser",
    "create_argparser",
)


class Values(Evaluator):
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
        # name -> (value, statement) of each assignment, in file order; a value of None:
        # rebound to something not followed (:meth:`_record`)
        self.assignments: dict[str, list[tuple[ast.expr | None, ast.stmt]]] = {}
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        # module names a function declares ``global`` (and so may rebind): name -> the ids
        # of those functions
        self.rebound_globally: dict[str, set[int]] = {}
        self.dataclasses: dict[str, ast.ClassDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.updates: dict[str, list[ast.Call]] = {}  # NAME.update(...) calls
        # NAME["key"] = value statements, by key
        self.item_stores: dict[str, list[ast.Assign]] = {}
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
                self._item_store(node)
            elif (
                isinstance(node, ast.Expr)
                and (executed := exec_target(node)) is not None
                and self.paths.parent(node) is tree
            ):
                include(self, node, executed)  # a config file / configurator, read as data
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._record(node.target, node.value, node)
            elif isinstance(node, _REBINDING):
                self._rebound(node)
            elif isinstance(node, ast.Global):
                function = self.paths.enclosing_function(node)
                for name in node.names:
                    self.rebound_globally.setdefault(name, set()).add(id(function))
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
                        default = field_default(stmt.value)
                        found = self._try(default) if default is not None else None
                        if found is not None:
                            self.defaults.setdefault(stmt.target.id, (found[0], stmt.lineno))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                self._argument(node)
        for entries in self.assignments.values():
            # in file order (the walk above is breadth-first): "the nearest assignment
            # before a use" is the last one before its line, at any depth of nesting
            entries.sort(key=lambda entry: (entry[1].lineno, entry[1].col_offset))
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
            value = literal(node.value)
            if value is not None:
                self.constants[name] = (value, node.lineno)
                if cited is None:
                    self.cited.pop(name, None)
                else:
                    self.cited[name] = cited
            loaded = self._loaded_file(node.value)
            if loaded is not None:
                self.files[name] = loaded

    def _item_store(self, node: ast.Assign) -> None:
        """``NAME["key"] = value``: a dict (often the flags, ``args = vars(parse_args())``)
        changed in place after it was built."""
        for target in node.targets:
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                self.item_stores.setdefault(target.slice.value, []).append(node)

    def _record(self, target: ast.expr, value: ast.expr | None, stmt: ast.stmt) -> None:
        """``target = value`` at ``stmt``; a value of None: rebound to something the reader
        does not follow (``a, b = f()``, ``step += 1``, a loop's variable)."""
        if isinstance(target, ast.Name):
            self.assignments.setdefault(target.id, []).append((value, stmt))
        elif isinstance(target, ast.Starred):
            self._record(target.value, None, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = (
                isinstance(value, (ast.Tuple, ast.List))
                and len(target.elts) == len(value.elts)
                and not any(isinstance(v, ast.Starred) for v in value.elts)
            )
            for index, element in enumerate(target.elts):
                self._record(element, value.elts[index] if pairs else None, stmt)  # type: ignore[union-attr]

    def _rebound(self, node: ast.stmt) -> None:
        """A statement that binds names to values no assignment spells: an augmented
        assignment, a ``for`` loop's variables, ``with ... as NAME``. Each is an
        assignment of something unknown, so an earlier value is not read past it."""
        if isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):
                # ``n += 1`` is ``n = n + 1``: the name read on the right is looked up as
                # any use is (the statement itself is in progress, so the one before it)
                read = ast.copy_location(ast.Name(node.target.id, ast.Load()), node.target)
                value = ast.copy_location(ast.BinOp(read, node.op, node.value), node)
                self.paths.parents[id(read)] = value
                self.paths.parents[id(value)] = node
                self._record(node.target, value, node)
            else:
                self._record(node.target, None, node)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._record(node.target, None, node)
        else:
            for item in node.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    self._record(item.optional_vars, None, node)

    def _entry_defaults(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Parameters of a command-line entry point are its flags; their defaults the job's."""
        for arg, default in parameter_defaults(function.args):
            annotation = arg.annotation
            if isinstance(annotation, ast.Call):  # fastcore Param("", choices=[...])
                for keyword in annotation.keywords:
                    if keyword.arg == "choices":
                        found = literal(keyword.value)
                        if isinstance(found, (list, tuple)):
                            self.choices.setdefault(arg.arg, tuple(found))
            value = literal(_typer_default(default))
            if value is not None and value is not Ellipsis:  # ``...``: a required option
                self.defaults.setdefault(arg.arg, (value, default.lineno))

    def _argument(self, call: ast.Call) -> None:
        names = [
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        if not names:
            return
        dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        action_node = next((k.value for k in call.keywords if k.arg == "action"), None)
        action = literal(action_node) if action_node is not None else None
        long_names = [n for n in names if n.startswith("--")] or names
        key = literal(dest) if dest is not None else long_names[0].lstrip("-").replace("-", "_")
        if not isinstance(key, str):
            return
        choices = next((k.value for k in call.keywords if k.arg == "choices"), None)
        if choices is not None and isinstance(literal(choices), (list, tuple)):
            self.choices.setdefault(key, tuple(literal(choices)))
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
        filename = literal(inner)
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


def _is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (dotted(target) or "").endswith("dataclass"):
            return True
    return any(
        (dotted(b) or "").endswith(("TrainingArguments", "SFTConfig", "Config")) for b in node.bases
    ) and any(isinstance(s, ast.AnnAssign) for s in node.body)


def _typer_default(default: ast.expr) -> ast.expr:
    """``typer.Option("gpt2", "--model")`` / ``typer.Argument(8)`` as a parameter's default:
    the option's own default (its first argument, or ``default=``); else the default as
    written."""
    if isinstance(default, ast.Call) and (dotted(default.func) or "").rsplit(".", 1)[-1] in (
        "Option",
        "Argument",
    ):
        given = next((k.value for k in default.keywords if k.arg == "default"), None)
        return given if given is not None else default.args[0] if default.args else default
    return default


#: statements that bind names without an assignment's ``=`` (:meth:`Values._rebound`)
_REBINDING = (ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)


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
