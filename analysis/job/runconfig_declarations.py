"""What a script declares as its interface, indexed once for the value evaluator.

:class:`Values` walks the module once (the path conditions' node list) and records what a
launch can set or a value can be followed to: assignments in file order (tuple unpacking
included), literal module constants, ``argparse`` flags with their defaults and choices
(``store_true`` = ``False``; flags declared in a helper module the script imports, or by
``add_dict_to_argparser``), the parameters of a command-line entry point (``@call_parse``,
``fire.Fire(main)``), dataclass field defaults, ``NAME.update(...)`` calls, JSON / YAML
files loaded into a variable, and config files or configurators the script executes
(:mod:`.runconfig_includes`, which hands the statements they run to the engine). Values
themselves are the engine's (:class:`~.runconfig_values.LaunchValues`): a default written
as an expression (``default=BATCH_SIZE``) is asked of it when first read, since the
engine answers only once this index (and the files the script executes) is known.

Past 400 lines: :class:`Values` is one walk of the module that records every kind of
declaration above; issue 26's single interpreter is to replace this module, so it is not
split on its way out.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Hashable
from typing import Any

import attrs
from torchward.estimator import dependencies

from ..facts.binding import field_default, parameter_defaults
from ..facts.constants import UNDECIDED, as_constant
from ..facts.launch_arguments import ArgumentDefaults, Namespace
from ..syntax.names import dotted
from .launch_places import FUNCTIONS
from .runconfig_includes import exec_target, include
from .runconfig_paths import PathConditions
from .runconfig_values import LaunchValues, literal, python_value, written

__all__ = ["Values"]

_CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
_ARG_PARSERS = (
    "parse_args",
    "get_args",
    "parse_opt",
    "get_parser",
    "get_args_parser",
    "get_argument_parser",
    "create_argparser",
)


class Values(LaunchValues):
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
        source_text: str,
        argv: tuple[str, ...] = (),
    ) -> None:
        self.argv = argv  # the launch's arguments (a plain ``python SCRIPT``: none)
        self.cited: dict[str, str] = {}  # constant → the file:line of an executed config

        self.source_text = source_text
        self.choices: dict[str, tuple] = {}  # flag → its declared choices
        self.path = path
        self.notes = notes
        self.constants: dict[str, tuple[Any, int]] = {}
        # flag → (its default, or the expression the engine is asked for it; line), in
        # declaration order: the first declaration wins (:attr:`defaults`)
        self._declared: list[tuple[str, Any, int]] = []
        self._defaults: dict[str, tuple[Any, int]] | None = None
        # what each top-level ``exec(open(PATH).read())`` runs, for the engine
        self.included: dict[int, list[ast.stmt]] = {}
        # a function imported from the project -> what it returns on a plain launch: a flag
        # parser's flags, a defaults function's dict (:meth:`_helpers`)
        self.returns: dict[str, Hashable] = {}
        # a config dataclass imported from the project, by its name here (:meth:`_helpers`)
        self.imported_dataclasses: dict[str, ast.ClassDef] = {}
        # name -> (value, statement) of each assignment, in file order; a value of None:
        # rebound to something not followed (:meth:`_record`)
        self.assignments: dict[str, list[tuple[ast.expr | None, ast.stmt]]] = {}
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.dataclasses: dict[str, ast.ClassDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.tree = tree
        self.paths = PathConditions(tree, self)  # indexes parents only; asks back lazily
        fired = _fired(self.paths)
        node: ast.AST
        for node in self.paths.of_type(*_DECLARING):
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
            elif isinstance(node, _REBINDING):
                self._rebound(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
                if _is_entry_point(node, fired):
                    self._entry_defaults(node)
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
                        if default is not None:
                            self._declared.append((stmt.target.id, default, stmt.lineno))
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
        self._helpers(tree)

    def _helpers(self, tree: ast.Module) -> None:
        """Flags declared elsewhere: ``add_dict_to_argparser(parser, defaults)`` with a dict
        the script builds, and ``parse_args`` / ``get_args`` imported from a file of the same
        folder (its ``add_argument`` defaults, read as data)."""
        for call in self.paths.of_type(ast.Call):
            name = (dotted(call.func) or "").rsplit(".", 1)[-1]
            if "argparser" in name.lower() and len(call.args) >= 2:
                self._declared.append(("**", call.args[1], call.lineno))
        if self.path.startswith("<"):
            return
        from ..workspace import WORKSPACE, resolve_module  # the project's modules, by import

        called = self.paths.calls_by_name
        for node in tree.body:
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            wanted = [  # a config dataclass is a class: called by a capitalised name
                a
                for a in node.names
                if a.name == "*" or ((a.asname or a.name) in called and a.name[:1].isupper())
            ]
            parses = any(a.name in _ARG_PARSERS for a in node.names)
            functions = [  # ``defaults.update(model_defaults())``: maybe a dict of defaults
                a
                for a in node.names
                if (a.asname or a.name) in called
                and a.name[:1].islower()
                and a.name not in _ARG_PARSERS
            ]
            if not wanted and not parses and not functions:
                continue
            module_path = resolve_module(self.path, node.module, node.level)
            module = WORKSPACE.summary(module_path) if module_path is not None else None
            if module is None:
                continue
            self._dataclasses_of(module.tree, wanted)
            self._defaults_functions(module.tree, functions)
            if not parses:
                continue
            first = len(self._declared)
            for inner in ast.walk(module.tree):
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr == "add_argument"
                ):
                    self._argument(inner, elsewhere=True)
            flags = Namespace(
                tuple(
                    (key, as_constant(default.value) if isinstance(default, _Known) else UNDECIDED)
                    for key, default, _ in self._declared[first:]
                )
            )
            for alias in node.names:
                if alias.name in _ARG_PARSERS:  # what the engine's launch folds it to
                    returns_parser = _returns_parser(module.tree, alias.name)
                    self.returns[alias.asname or alias.name] = (
                        ArgumentDefaults(flags.values) if returns_parser else flags
                    )

    def _defaults_functions(self, module: ast.Module, imported: list[ast.alias]) -> None:
        """Functions of another project module that only return a dict of written values
        (``def model_defaults(): return dict(image_size=64, ...)``): what a call returns on
        any launch, for the engine to fold (``defaults.update(model_defaults())``). Only
        written values: that module's names are not this file's to fold."""
        if not imported:
            return
        top = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
        for alias in imported:
            function = top.get(alias.name)
            if function is None or function.args.args or function.args.vararg:
                continue
            returned = _returned_dict(function)
            if returned is not None:
                self.returns[alias.asname or alias.name] = returned

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
                self._declared.append((arg.arg, _Known(value), default.lineno))

    def _dataclasses_of(self, module: ast.Module, imported: list[ast.alias]) -> None:
        """The config dataclasses ``module`` defines that the script calls by a name it
        imports (``from model import GPTConfig``, or ``*`` for a public one)."""
        classes = {
            node.name: node
            for node in module.body
            if isinstance(node, ast.ClassDef) and _is_dataclass(node)
        }
        called = self.paths.calls_by_name
        for alias in imported:
            if alias.name == "*":
                for name, node in classes.items():
                    if name in called and not name.startswith("_"):
                        self.imported_dataclasses.setdefault(name, node)
            elif alias.name in classes:
                self.imported_dataclasses.setdefault(
                    alias.asname or alias.name, classes[alias.name]
                )

    def _argument(self, call: ast.Call, elsewhere: bool = False) -> None:
        """A flag ``add_argument`` declares; ``elsewhere``: in an imported module, whose
        expressions the engine (which reads this file) cannot fold — a default written
        there counts only when it is written as a value."""
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
        required = next((k.value for k in call.keywords if k.arg == "required"), None)
        if elsewhere and required is not None and literal(required) is True:
            return  # no value a plain launch runs with: left out, so undecided when read
        if default is None:
            if action in ("store_true", "store_false"):
                self._declared.append((key, _Known(action == "store_false"), call.lineno))
            elif action in (None, "store"):
                # argparse: None if not given
                self._declared.append((key, _Known(None), call.lineno))
            return
        if elsewhere:
            found = written(default)
            if found is not None:
                self._declared.append((key, _Known(found), call.lineno))
            return
        self._declared.append((key, default, call.lineno))

    @property
    def defaults(self) -> dict[str, tuple[Any, int]]:
        """Each flag's default (argparse, an entry point's parameters, dataclass fields,
        ``add_dict_to_argparser``) and its line: what is written as an expression is the
        engine's value of it on a plain launch (asked once, on first reading)."""
        if self._defaults is None:
            defaults: dict[str, tuple[Any, int]] = {}
            for key, default, line in self._declared:
                if isinstance(default, _Known):
                    defaults.setdefault(key, (default.value, line))
                    continue
                found = self.get(default)
                if found is None:
                    continue
                if key != "**":
                    defaults.setdefault(key, (found[0], line))
                elif isinstance(found[0], dict):  # ``add_dict_to_argparser(parser, d)``
                    for name, value in found[0].items():
                        if isinstance(name, str):
                            defaults.setdefault(name, (value, line))
            self._parsed(defaults)
            self._defaults = defaults
        return self._defaults

    def _parsed(self, defaults: dict[str, tuple[Any, int]]) -> None:
        """What ``parse_args()`` / ``parse_known_args()`` return on a plain launch, as the
        engine's launch folds the parser (:mod:`.launch_arguments`: ``set_defaults``
        before or after ``add_argument``, with ``**mapping``), over the flags' declared
        defaults: the reader and the engine read one argparse. A flag a ``set_defaults``
        nobody can read may have replaced is no default at all."""
        presets = self._preset_lines()
        for call in self.paths.of_type(ast.Call):
            func = call.func
            if not (
                isinstance(func, ast.Attribute)
                and func.attr in ("parse_args", "parse_known_args")
                and self.paths.state(call).runs
            ):
                continue
            fact = self.fact(call)
            if fact is None or not fact.condition.runs:
                continue
            parsed = fact.value
            if type(parsed) is tuple and parsed and isinstance(parsed[0], Namespace):
                parsed = parsed[0]  # ``args, unknown = parser.parse_known_args()``
            if not isinstance(parsed, Namespace):
                continue
            for name, value in parsed.values:
                if value is UNDECIDED:
                    if name in defaults and name in presets:
                        del defaults[name]
                    continue
                try:
                    read = python_value(value)
                except TypeError:
                    continue
                if name not in defaults or defaults[name][0] != read:
                    defaults[name] = (read, presets.get(name, call.lineno))

    def _preset_lines(self) -> dict[str, int]:
        """Each flag a ``set_defaults`` call names, and the line of the last such call (a
        ``**mapping``: every declared flag)."""
        found: dict[str, int] = {}
        for call in self.paths.calls_by_name.get("set_defaults", ()):
            if not self.paths.state(call).runs:
                continue
            for keyword in call.keywords:
                for name in [keyword.arg] if keyword.arg else [n for n, _, _ in self._declared]:
                    found[name] = max(found.get(name, 0), call.lineno)
        return found

    def load_constant(self, filename: str) -> Any:
        """A config file the script loads, as a launch constant (what the engine asks)."""
        loaded = self.read_file(filename)
        return as_constant(loaded[0]) if loaded is not None else UNDECIDED

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

    def generates(self) -> bool:
        """Whether a ``.generate(...)`` call runs on a plain launch."""
        return any(self.paths.state(c).runs for c in self.paths.calls_by_name.get("generate", ()))

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


def _returns_parser(module: ast.Module, name: str) -> bool:
    """Whether the function ``name`` of ``module`` returns the parser itself (``return
    parser``: the caller parses it, or hands it to ``parents=[...]``) rather than what it
    parses (``return parser.parse_args()``)."""
    function = next(
        (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name), None
    )
    if function is None:
        return False
    returned = [n.value for n in ast.walk(function) if isinstance(n, ast.Return) and n.value]
    return bool(returned) and all(isinstance(value, ast.Name) for value in returned)


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
# the nodes that declare something (the walk in :class:`Values` reads only these)
_DECLARING = (ast.Assign, ast.AnnAssign, ast.Expr, ast.Call, ast.ClassDef, *FUNCTIONS, *_REBINDING)


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


@attrs.frozen
class _Known:
    """A flag's default known while indexing (a literal, ``store_true``'s ``False``)."""

    value: Any


def _returned_dict(function: ast.FunctionDef) -> Hashable | None:
    """The dict ``function`` returns when its body (past a docstring) is one ``return`` of
    a dict display or ``dict(key=value, ...)`` whose values are all written literals."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    value = body[0].value
    pairs: list[tuple[ast.expr | None, ast.expr]]
    if isinstance(value, ast.Dict):
        pairs = list(zip(value.keys, value.values))
    elif (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and not value.args
    ):
        pairs = [(ast.Constant(k.arg) if k.arg else None, k.value) for k in value.keywords]
    else:
        return None
    found: dict = {}
    for key, item in pairs:
        if key is None:  # ``**other``: keys not known
            return None
        try:
            found[ast.literal_eval(key)] = ast.literal_eval(item)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return as_constant(found)
