"""A configuration object the script builds from a class of defaults, and the step it inherits.

Some experiment frameworks keep a job's settings as the class-level fields of a plain
class, often spread over base classes in other modules of the project, and configure an
instance with a dict of overrides keyed by field name::

    class Configs(CIFAR10Configs):      # train_batch_size: int = 64 in a base class
        d_model: int = 256

    conf = Configs()
    experiment.configs(conf, {"train_batch_size": 32, "optimizer.optimizer": "Adam"})
    conf.run()                          # the training step is a method of a base class

What a plain launch runs with is then the fields' defaults (in Python's method
resolution order: a subclass's value wins) with the overrides written in the script over
them. Those are the script's declared settings, read like argparse defaults (medium at
best): :func:`config_object_settings` gives them to
:class:`~.runconfig_declarations.Values`, and the conventional names
(``train_batch_size``, ``seq_len``) then read them as any other declared default.

An override dict counts only when every key names a field the class hierarchy declares
(``"optimizer.optimizer"``: the ``optimizer`` field of a nested config object, read under
its last name when no top-level field of that name has a value), so a dict that merely
sits next to the instance in a call is not taken for one. A value that is not written as
a literal makes its field unknown: never the stale default.

The training step: when a class of the hierarchy defined outside the script calls
``backward()``, a call of a method on the instance (``conf.run()``) is the job's training
loop — unless that code also touches precision, distribution or accumulation, which the
reader does not follow there: then nothing is claimed (quiet beats a confident fp32).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .runconfig_values import literal

if TYPE_CHECKING:
    from .runconfig_paths import PathConditions

__all__ = ["ConfigObject", "config_objects", "setting_read"]

_MAX_DEPTH = 8  # base classes followed; a deeper hierarchy is not a config class we read
#: names in an inherited training step that decide what the reader cannot see from there
_UNREAD = frozenset(
    {
        "autocast",
        "GradScaler",
        "half",
        "bfloat16",
        "float16",
        "DistributedDataParallel",
        "FullyShardedDataParallel",
        "init_process_group",
    }
)


@dataclass
class ConfigObject:
    """One instance of a configuration class: its settings and where they were read."""

    name: str  # the variable the script binds the instance to
    class_name: str  # the class the script builds it from, by the name it calls
    line: int  # where it is built
    settings: dict[str, tuple[Any, int]] = field(default_factory=dict)  # field -> (value, line)
    unknown: set[str] = field(default_factory=set)  # overridden with what is not a literal
    driven: int | None = None  # the line of the first method called on it (``conf.run()``)
    trains: bool = False  # an inherited method calls backward(), and nothing unread beside


@dataclass(frozen=True)
class _Class:
    node: ast.ClassDef
    path: str  # the file that defines it
    own: bool  # defined in the script itself


def config_objects(
    tree: ast.Module, path: str, paths: PathConditions, classes: dict[str, ast.ClassDef]
) -> list[ConfigObject]:
    """The configuration objects ``tree`` builds on a plain launch (``conf = Configs()``)."""
    found: list[ConfigObject] = []
    imported = _imported_classes(tree)
    for stmt in paths.of_type(ast.Assign):
        if not (
            len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name)
            and not stmt.value.args
            and not stmt.value.keywords
        ):
            continue
        class_name = stmt.value.func.id
        if class_name not in classes and class_name not in imported:
            continue
        if not paths.state(stmt).runs:
            continue
        if class_name in classes:
            start = _Class(classes[class_name], path, True)
        else:
            resolved = _resolve_class(path, imported[class_name])
            if resolved is None:
                continue
            start = resolved
        order = _linearise(start, tree)
        if order is None:
            continue
        built = _read_object(stmt, order, tree, paths)
        if built is not None:
            found.append(built)
    # the object the script drives comes first: its settings win over those of objects
    # built in helper functions (a nested optimizer config), which only add what it lacks
    found.sort(key=lambda built: built.driven is None)
    return found


def _read_object(
    stmt: ast.Assign, order: list[_Class], script: ast.Module, paths: PathConditions
) -> ConfigObject | None:
    """The settings of the instance ``stmt`` builds, or None when its class is no
    configuration class (a module, a dataclass, a class with no field defaults)."""
    bound = stmt.targets[0]
    assert isinstance(bound, ast.Name)  # config_objects chose only such statements
    name = bound.id
    declared: set[str] = set()
    defaults: dict[str, Any] = {}
    own_lines: dict[str, int] = {}
    functions: set[str] = set()  # what a string may name: a function that builds a field
    for cls in order:
        module = script if cls.own else _module_tree(cls.path)
        if module is not None:
            functions |= {n.name for n in module.body if isinstance(n, ast.FunctionDef)}
    for cls in order:
        if any(_is_decorated_dataclass(d) for d in cls.node.decorator_list):
            return None  # the engine reads dataclasses itself
        for item in cls.node.body:
            target, value = _field(item)
            if target is None or target in declared:
                continue
            declared.add(target)
            known = literal(value) if value is not None else None
            if _names_a_builder(known, functions):
                known = None  # ``model: nn.Module = "build_net"``: which builder, not a value
            if known is not None:
                defaults[target] = known
                if cls.own:
                    own_lines[target] = item.lineno
    if not defaults or _is_module(order):
        return None
    found = ConfigObject(name, order[0].node.name, stmt.lineno)
    for key, value in defaults.items():
        found.settings[key] = (value, own_lines.get(key, stmt.lineno))
    scope = paths.enclosing_function(stmt)  # the instance's name means it in this function
    for key, value, line in _overrides(name, scope, declared, set(defaults), paths):
        if value is None or _names_a_builder(value, functions):
            found.unknown.add(key)
            found.settings.pop(key, None)
        else:
            found.unknown.discard(key)
            found.settings[key] = (value, line)
    found.driven = _driven(name, scope, paths)
    found.trains = found.driven is not None and _inherits_training(order)
    return found


def _driven(name: str, scope: ast.AST | None, paths: PathConditions) -> int | None:
    """The line of the first call of a method on the instance ``name`` that a plain
    launch runs (``conf.run()``), if any."""
    lines = [
        call.lineno
        for call in paths.of_type(ast.Call)
        if isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
        and paths.enclosing_function(call) is scope
        and paths.state(call).runs
    ]
    return min(lines, default=None)


def _overrides(
    name: str,
    scope: ast.AST | None,
    declared: set[str],
    valued: set[str],
    paths: PathConditions,
) -> list[tuple[str, Any, int]]:
    """``(field, value or None, line)`` for each override of the instance ``name`` on a
    plain launch: a dict of field names passed beside it, or ``name.field = value``."""
    found: list[tuple[str, Any, int]] = []
    nested: list[tuple[str, Any, int]] = []
    for call in paths.of_type(ast.Call):
        if not any(isinstance(a, ast.Name) and a.id == name for a in call.args):
            continue
        if paths.enclosing_function(call) is not scope or not paths.state(call).runs:
            continue
        for arg in call.args:
            if not isinstance(arg, ast.Dict) or not arg.keys:
                continue
            keys = [literal(k) if k is not None else None for k in arg.keys]
            if not all(isinstance(k, str) and k.split(".", 1)[0] in declared for k in keys):
                continue
            for key, value in zip(keys, arg.values, strict=True):
                assert isinstance(key, str)
                entry = (key.rsplit(".", 1)[-1], literal(value), value.lineno)
                (nested if "." in key else found).append(entry)
    for stmt in paths.of_type(ast.Assign):
        for target in stmt.targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == name
                and target.attr in declared
                and paths.enclosing_function(stmt) is scope
                and paths.state(stmt).runs
            ):
                found.append((target.attr, literal(stmt.value), stmt.lineno))
    direct = {entry[0] for entry in found}
    # a nested config's field under its own name, unless a top-level field decides it
    found[:0] = [entry for entry in nested if entry[0] not in direct | valued]
    return sorted(found, key=lambda entry: entry[2])


def _names_a_builder(value: Any, functions: set[str]) -> bool:
    """A string naming a function of the modules that define the class: it picks the
    function that builds the field (``model: nn.Module = "capsule_model"``,
    ``"train_dataset": "cifar10_train_augmented"``), so it is not the field's value. (A
    name picking among a framework's builders — ``"Adam"`` — reads like an argparse
    ``--optimizer adam``, by the conventions.)"""
    return isinstance(value, str) and value in functions


def _field(item: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """The class-level field a statement of a class body declares, and its value."""
    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
        return item.target.id, item.value
    if (
        isinstance(item, ast.Assign)
        and len(item.targets) == 1
        and isinstance(item.targets[0], ast.Name)
    ):
        return item.targets[0].id, item.value
    return None, None


def _is_decorated_dataclass(decorator: ast.expr) -> bool:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")) == (
        "dataclass"
    )


def _is_module(order: list[_Class]) -> bool:
    """A network, a dataset or another library object (``nn.Module``, ``LightningModule``,
    ``Dataset``, an enum... among the bases), not settings: what its class attributes hold
    is for the object's own use."""
    for cls in order:
        for base in cls.node.bases:
            text = ast.unparse(base.value if isinstance(base, ast.Subscript) else base)
            if text.rsplit(".", 1)[-1].endswith(_OBJECT_BASES):
                return True
    return False


_OBJECT_BASES = ("Module", "Dataset", "Enum", "NamedTuple", "TypedDict", "Exception", "Error")


def _inherits_training(order: list[_Class]) -> bool:
    """Whether a class defined outside the script steps the model (``backward()``) and
    nothing in the modules defining those classes touches what the reader does not follow
    there (precision, distribution, accumulation: a helper beside the class may be the
    one that enters an autocast)."""
    backward = False
    modules: dict[str, ast.AST] = {}
    for cls in order:
        if not cls.own:  # the script's own classes: read with the script
            modules.setdefault(cls.path, _module_tree(cls.path) or cls.node)
    for cls in order:
        if cls.own:
            continue
        backward = backward or any(
            isinstance(node, ast.Attribute) and node.attr == "backward"
            for node in ast.walk(cls.node)
        )
    for module in modules.values():
        for node in ast.walk(module):
            word = (
                node.attr
                if isinstance(node, ast.Attribute)
                else node.id
                if isinstance(node, ast.Name)
                else None
            )
            if word is None:
                continue
            if word in _UNREAD or "accum" in word.lower():
                return False
    return backward


def _imported_classes(tree: ast.Module) -> dict[str, tuple[str, str, int]]:
    """Capitalised names the script imports from a module: name -> (module, name, level)."""
    found: dict[str, tuple[str, str, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name[:1].isupper():
                    found[alias.asname or alias.name] = (node.module or "", alias.name, node.level)
    return found


def _resolve_class(importer: str, imported: tuple[str, str, int]) -> _Class | None:
    """The project class an import names (followed through one re-export), or None."""
    from ..workspace import WORKSPACE, resolve_module  # the project's modules, by import

    module, name, level = imported
    for _ in range(3):
        if importer.startswith("<"):
            return None
        found = resolve_module(importer, module, level)
        summary = WORKSPACE.summary(found) if found is not None else None
        if summary is None or found is None:
            return None
        for node in summary.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return _Class(node, found, False)
        again = _imported_classes(summary.tree).get(name)
        if again is None:
            return None
        importer, (module, name, level) = found, again
    return None


def _bases(cls: _Class, script: ast.Module) -> list[_Class] | None:
    """The classes ``cls`` derives from, in order; ``object`` and library bases (a
    framework's base config) are left out; None when a base is not a plain name."""
    found: list[_Class] = []
    tree = script if cls.own else _module_tree(cls.path)
    if tree is None:
        return None
    local = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    imported = _imported_classes(tree)
    for base in cls.node.bases:
        if not isinstance(base, ast.Name):
            if isinstance(base, ast.Attribute):
                continue  # ``nn.Module``, ``configs.BaseConfigs``: a library's class
            return None
        if base.id in local and local[base.id] is not cls.node:
            found.append(_Class(local[base.id], cls.path, cls.own))
        elif base.id in imported:
            resolved = _resolve_class(cls.path, imported[base.id])
            if resolved is not None:
                found.append(resolved)
    return found


def _module_tree(path: str) -> ast.Module | None:
    from ..workspace import WORKSPACE

    if path.startswith("<"):
        return None
    summary = WORKSPACE.summary(path)
    return summary.tree if summary is not None else None


def _linearise(start: _Class, script: ast.Module) -> list[_Class] | None:
    """Python's method resolution order (C3) over the classes the project defines; None
    when it has none (an inconsistent or too deep hierarchy)."""

    def key(cls: _Class) -> tuple[str, int]:
        return cls.path, cls.node.lineno

    def mro(cls: _Class, depth: int) -> list[_Class] | None:
        if depth > _MAX_DEPTH:
            return None
        bases = _bases(cls, script)
        if bases is None:
            return None
        sequences = []
        for base in bases:
            found = mro(base, depth + 1)
            if found is None:
                return None
            sequences.append(found)
        sequences.append(list(bases))
        result = [cls]
        while any(sequences):
            for sequence in sequences:
                if not sequence:
                    continue
                head = sequence[0]
                if not any(key(head) in {key(c) for c in s[1:]} for s in sequences):
                    break
            else:
                return None  # no consistent order
            result.append(head)
            sequences = [s[1:] if s and key(s[0]) == key(head) else s for s in sequences]
        return result

    return mro(start, 0)


def setting_read(expr: ast.expr, objects: list[ConfigObject], paths: PathConditions) -> Any:
    """The setting ``c.d_model`` reads in a function whose parameter ``c`` is annotated
    with the class of the settings object the script builds (``def _model(c: Configs)``,
    which the framework calls with that object), or None. One object of that class only:
    two could be either."""
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
        return None
    function = paths.enclosing_function(expr)
    if function is None:
        return None
    parameter = next(
        (
            a
            for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
            if a.arg == expr.value.id
        ),
        None,
    )
    if parameter is None or not isinstance(parameter.annotation, ast.Name):
        return None
    for node in ast.walk(function):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For))
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == parameter.arg for t in targets):
            return None  # the parameter is rebound: not the object any more
    matching = [o for o in objects if o.class_name == parameter.annotation.id]
    if len(matching) != 1 or expr.attr in matching[0].unknown:
        return None
    found = matching[0].settings.get(expr.attr)
    return found[0] if found is not None else None
