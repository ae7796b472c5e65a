"""The job's optimizer where the script does not construct one itself (issue 26).

A training script may leave its optimizer to a trainer class of its project
(``TrainLoop(model=model, ...)``, improved-diffusion), to a factory function
(``smart_optimizer(model, opt.optimizer, ...)``, yolov5) or to an optimizer class of its
own (``moco.optimizer.LARS(model.parameters(), ...)``). Read when the script constructs
no ``torch.optim`` optimizer, at ``medium`` at best (the file's line is cited):

- a project function or class ``__init__`` the training path calls, from the single
  ``torch.optim`` class it constructs on the path its call takes — outside any branch,
  or in the branch a test of a parameter against a literal picks (``if name == "SGD":``
  with ``name`` bound by the call's folded argument); its arguments as written there or
  bound by the call (``momentum=`` handed in but not folded: the state it keeps is not
  known, :func:`~.runconfig_fields.optimizer_of` lowers the confidence);
- a ``torch.optim.Optimizer`` subclass of the script or its project built over a model's
  parameters, by the state it keeps: the tensors its methods create per parameter
  (``state["mu"] = torch.zeros_like(p)``) — none is SGD's memory, one is SGD with
  momentum's, two are Adam's; more is not guessed.
"""

from __future__ import annotations

import ast

from ..facts.conditions import PathCondition
from ..facts.launch_paths import evaluates
from ..syntax.names import ImportTable, dotted, qualified_name
from .runconfig_callees import project_function
from .runconfig_declarations import Values
from .runconfig_fields import OPTIMIZERS, ReaderState, optimizer_of
from .runconfig_values import written

__all__ = ["optimizer_in_callees"]


def optimizer_in_callees(tree: ast.Module, path: str, values: Values, reader: ReaderState) -> None:
    """Set the job's optimizer from the one a project class or function on the training
    path builds, when the script itself constructs none."""
    if "optimizer" in reader.fields or path.startswith("<"):
        return
    modules: dict = {}
    if _own_optimizer_class(tree, path, values, reader, modules):
        return
    seen: set[int] = set()
    resolved: dict[str, tuple[str, ast.FunctionDef, ast.Module, str] | None] = {}
    from_imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    for call in values.paths.of_type(ast.Call):
        func = call.func
        if isinstance(func, ast.Name) and func.id in from_imported:
            name = func.id
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in reader.imports.names
        ):
            name = func.attr
        else:
            continue
        if evaluates(name):
            continue
        if values.paths.state(call) not in (PathCondition.DEFAULT, PathCondition.UNSURE):
            continue
        key = dotted(func) or ""
        if key not in resolved:
            resolved[key] = project_function(
                call, tree, path, reader.imports, modules, classes=True
            )
        found = resolved[key]
        if found is None or id(found[1]) in seen:
            continue
        seen.add(id(found[1]))
        module_path, function, module, text = found
        lines = text.split("\n")[function.lineno - 1 : function.end_lineno]
        if not any("optim" in line or "Adam" in line or "SGD" in line for line in lines):
            continue
        built = _built_optimizer(function, ImportTable(module), _bound(function, call, values))
        if built is None:
            continue
        optimizer, confidence, line = built
        reader.set(
            "optimizer",
            optimizer,
            call.lineno,
            "low" if confidence == "low" else "medium",
            f"{module_path}:{line} (in `{key}`, called at {path}:{call.lineno})",
        )
        return


def _bound(function: ast.FunctionDef, call: ast.Call, values: Values) -> dict[str, object]:
    """The parameters of ``function`` a plain launch's ``call`` decides: the arguments the
    launch folds, else the defaults written as values (``name="Adam"``)."""
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if params and params[0] == "self":
        params = params[1:]
    defaults = function.args.defaults
    bound: dict[str, object] = {}
    for param, default in zip(params[len(params) - len(defaults) :], defaults):
        value = written(default)
        if value is not None:
            bound[param] = value
    given = dict(zip(params, call.args))
    given.update({k.arg: k.value for k in call.keywords if k.arg})
    for param, argument in given.items():
        if isinstance(argument, ast.Starred):
            continue
        found = values.get(argument)
        if found is None:
            bound.pop(param, None)  # passed, but not known: not the default either
        else:
            bound[param] = found[0]
    return bound


_STATE_MEMORY = {0: "sgd", 1: "sgd-momentum", 2: "adam"}  # tensors per parameter
_NEW_TENSORS = ("zeros_like", "empty_like", "ones_like", "full_like", "clone", "new_zeros")


def _own_optimizer_class(
    tree: ast.Module, path: str, values: Values, reader: ReaderState, modules: dict
) -> bool:
    """Set the optimizer from a project ``torch.optim.Optimizer`` subclass the training
    path builds over a model's parameters; whether one was found."""
    for call in values.paths.of_type(ast.Call):
        first = call.args[0] if call.args else None
        if not (  # built over a model's parameters: ``LARS(model.parameters(), ...)``
            isinstance(first, ast.Call)
            and isinstance(first.func, ast.Attribute)
            and first.func.attr == "parameters"
        ):
            continue
        name = qualified_name(call.func, reader.imports) or dotted(call.func) or ""
        if not name or name.startswith(("torch.", "bitsandbytes.", "transformers.")):
            continue
        if not values.paths.state(call).runs:
            continue
        found = _optimizer_class(name, tree, path, modules)
        if found is None:
            continue
        cls, where = found
        class_name = cls.name
        kept = _state_tensors(cls)
        optimizer = _STATE_MEMORY.get(len(kept))
        if optimizer is None:
            return False  # more state than the vocabulary's optimizers keep: not guessed
        shown = ", ".join(sorted(kept)) or "none"
        reader.set(
            "optimizer",
            optimizer,
            call.lineno,
            "medium",
            f"{path}:{call.lineno} ({class_name} of {where}: per-parameter state "
            f"{shown}, the memory of {optimizer})",
        )
        return True
    return False


def _optimizer_class(
    name: str, tree: ast.Module, path: str, modules: dict
) -> tuple[ast.ClassDef, str] | None:
    """The ``torch.optim.Optimizer`` subclass ``name`` calls, defined in the script or in
    a module of its project (``moco.optimizer.LARS``), and the file it is in."""
    if "." in name:
        module_name, class_name = name.rsplit(".", 1)
        key = (module_name, 0)
        if key not in modules:
            from ..workspace import WORKSPACE, resolve_module

            found = resolve_module(path, module_name, 0)
            modules[key] = WORKSPACE.summary(found) if found is not None else None
        module = modules[key]
        if module is None:
            return None
        where, body = module.path, module.tree
    else:
        class_name, where, body = name, path, tree
    cls = next((n for n in body.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    imports = ImportTable(body)
    if cls is None or not any(
        (qualified_name(b, imports) or "").endswith("optim.Optimizer") for b in cls.bases
    ):
        return None
    return cls, where


def _state_tensors(cls: ast.ClassDef) -> set[str]:
    """The keys under which the class's methods store a new tensor per parameter
    (``param_state["mu"] = torch.zeros_like(p)``)."""
    kept: set[str] = set()
    for node in ast.walk(cls):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        func = node.value.func
        made = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if made not in _NEW_TENSORS:
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                kept.add(target.slice.value)
    return kept


def _built_optimizer(
    function: ast.FunctionDef, imports: ImportTable, bound: dict[str, object]
) -> tuple[str, str, int] | None:
    """(optimizer, confidence, line) of the one ``torch.optim`` class ``function``
    constructs on the path its call takes: outside any branch, or in the branch a test of a
    parameter against a literal picks (``if name == "SGD":`` with ``name`` bound by the
    call); a second one, or one under a branch not decided: not this job's for sure."""
    found: list[ast.Call] = []
    stack: list[ast.AST] = list(function.body)
    branched = False
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and (taken := _decided(node.test, bound)) is not None:
            stack.extend(node.body if taken else node.orelse)
            continue
        if isinstance(node, (ast.If, ast.IfExp, ast.Match)):
            branched = branched or any(_optimizer_call(n, imports) for n in ast.walk(node))
            continue
        if _optimizer_call(node, imports):
            found.append(node)  # type: ignore[arg-type]
        stack.extend(ast.iter_child_nodes(node))
    if branched or len(found) != 1:
        return None
    call = found[0]
    tail = (qualified_name(call.func, imports) or "").rsplit(".", 1)[-1]

    def value_of(node: ast.AST) -> tuple[object, str] | None:
        if isinstance(node, ast.Name) and node.id in bound:
            return bound[node.id], "medium"
        return _written(node)

    name, confidence = optimizer_of(call, tail, value_of)
    return name, confidence, call.lineno


def _decided(test: ast.expr, bound: dict[str, object]) -> bool | None:
    """``name == "SGD"`` / ``name != "SGD"`` with ``name`` a bound parameter: whether it
    holds; None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(right, ast.Name) and isinstance(left, ast.Constant):
        left, right = right, left
    if not (isinstance(left, ast.Name) and left.id in bound and isinstance(right, ast.Constant)):
        return None
    if isinstance(test.ops[0], ast.Eq):
        return bound[left.id] == right.value
    if isinstance(test.ops[0], ast.NotEq):
        return bound[left.id] != right.value
    return None


def _written(node: ast.AST) -> tuple[object, str] | None:
    value = written(node)
    return None if value is None else (value, "high")


def _optimizer_call(node: ast.AST, imports: ImportTable) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = qualified_name(node.func, imports) or ""
    return name.startswith("torch.optim.") and name.rsplit(".", 1)[-1] in OPTIMIZERS
