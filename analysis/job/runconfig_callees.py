"""What the job does inside the project functions it calls: mixed precision.

Many training scripts keep the step in another module of their project: ``main()`` calls
``train_one_epoch(...)`` from ``engine.py`` (DeiT, MAE, DINO and their many descendants),
and the ``with torch.cuda.amp.autocast():`` around the forward pass is there. Read from
the script alone the job looked fp32 (issue 26, item 3). The job is the training path the
entry reaches, across files: a call on the script's training path (it runs on a plain
launch, it is not an evaluation) to a function of a project module is followed one level,
and an autocast that function enters is the job's precision.

Only what that function writes as values counts — ``autocast()``, ``autocast("cuda",
dtype=torch.bfloat16)`` — since its parameters' values come from the caller: an autocast
``enabled=`` or ``dtype=`` a parameter decides says nothing (no guess), and is read at
``medium`` at best (the call may be skipped at launch).
"""

from __future__ import annotations

import ast

from ..facts.conditions import PathCondition
from ..facts.launch_paths import evaluates
from ..syntax.names import ImportTable, dotted, qualified_name
from .runconfig_declarations import Values
from .runconfig_fields import ReaderState
from .runconfig_values import written

__all__ = ["precision_in_callees", "project_function"]

_AUTOCASTS = ("torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast")


def precision_in_callees(tree: ast.Module, path: str, values: Values, reader: ReaderState) -> None:
    """Set the job's precision from an autocast inside a project function the training
    path calls, when the script itself set none."""
    if "dtype" in reader.fields or path.startswith("<"):
        return
    imports = reader.imports
    seen: set[int] = set()
    resolved: dict[str, tuple[str, ast.FunctionDef, ast.Module, str] | None] = {}
    modules: dict = {}  # (module, level) -> its summary, or None outside the project
    # what a call may name a project function by: a name imported ``from`` a module, or a
    # module imported whole (cheap set tests before any condition or file is looked at)
    from_imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    for call in values.paths.of_type(ast.Call):
        func = call.func
        if isinstance(func, ast.Name):
            name = func.id
            if name not in from_imported:
                continue
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            name = func.attr
            if func.value.id not in imports.names:
                continue
        else:
            continue
        if name[:1].isupper() or evaluates(name):
            continue  # a class built, not a step run; an evaluation
        if values.paths.state(call) not in (PathCondition.DEFAULT, PathCondition.UNSURE):
            continue
        key = dotted(func) or ""
        if key not in resolved:  # a name is resolved once, however often it is called
            resolved[key] = project_function(call, tree, path, imports, modules)
        found = resolved[key]
        if found is None or id(found[1]) in seen:
            continue
        module_path, function, module, text = found
        seen.add(id(function))
        lines = text.split("\n")[function.lineno - 1 : function.end_lineno]
        if not any("autocast" in line for line in lines):
            continue  # the common case: nothing to walk
        precision = _entered_autocast(function, ImportTable(module))
        if precision is not None:
            dtype, line = precision
            reader.set(
                "dtype",
                dtype,
                call.lineno,
                "medium",
                f"{module_path}:{line} (in `{function.name}`, called at {path}:{call.lineno})",
            )
            return


def project_function(
    call: ast.Call,
    tree: ast.Module,
    path: str,
    imports: ImportTable,
    modules: dict,
    classes: bool = False,
) -> tuple[str, ast.FunctionDef, ast.Module, str] | None:
    """The function of another module of the project ``call`` runs: ``train_one_epoch(...)``
    imported by name (``from engine import train_one_epoch``), or
    ``engine.train_one_epoch(...)`` on an imported module (``import engine``). ``modules``:
    each module resolved once per read (by its name and level)."""
    func = call.func
    if isinstance(func, ast.Name):
        found = _imported_from(tree, func.id)
        if found is None:
            return None
        (module_name, level), name = found
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module_name = imports.names.get(func.value.id, "")
        if not module_name or module_name != qualified_name(func.value, imports):
            return None
        level, name = 0, func.attr
    else:
        return None
    key = (module_name, level)
    if key not in modules:
        from ..workspace import WORKSPACE, resolve_module

        module_path = resolve_module(path, module_name, level)
        modules[key] = WORKSPACE.summary(module_path) if module_path is not None else None
    module = modules[key]
    if module is None:
        return None
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return module.path, node, module.tree, module.source
        if classes and isinstance(node, ast.ClassDef) and node.name == name:
            init = next(  # a class built: its constructor runs
                (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"),
                None,
            )
            return (module.path, init, module.tree, module.source) if init else None
    return None


def _imported_from(tree: ast.Module, local: str) -> tuple[tuple[str, int], str] | None:
    """((module, level), name) of the ``from module import name [as local]`` binding
    ``local`` at the top of ``tree``."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == local:
                    return (node.module, node.level), alias.name
    return None


def _entered_autocast(function: ast.FunctionDef, imports: ImportTable) -> tuple[str, int] | None:
    """(precision, line) of the first autocast ``function`` enters with values it writes
    itself; None when there is none or its arguments come from elsewhere."""
    for node in ast.walk(function):
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        for item in node.items:
            call = item.context_expr
            if not isinstance(call, ast.Call):
                continue
            name = qualified_name(call.func, imports) or dotted(call.func) or ""
            if not name.endswith(_AUTOCASTS):
                continue
            return _autocast_precision(call, name)
    return None


def _autocast_precision(call: ast.Call, name: str) -> tuple[str, int] | None:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if "enabled" in keywords and written(keywords["enabled"]) is not True:
        return None  # off, or decided by the caller's values
    positional = call.args[1:] if name.endswith(("torch.autocast", "amp.autocast")) else []
    if name.endswith("cuda.amp.autocast"):
        if call.args and written(call.args[0]) is not True:
            return None  # ``autocast(enabled)``
        positional = call.args[1:]
    dtype_node = keywords.get("dtype", positional[0] if positional else None)
    if dtype_node is None:
        return "amp-fp16", call.lineno  # CUDA autocast's default
    text = str(written(dtype_node))
    if "bfloat16" in text:
        return "amp-bf16", call.lineno
    if text.endswith(("float16", "half")):
        return "amp-fp16", call.lineno
    return None
