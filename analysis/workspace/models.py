"""Which model class of the project a script builds, through imports and indirection.

The estimator's script reader (:mod:`torchward.analysis.job.runconfig`) sizes a model the
script defines from its constructors (:mod:`torchward.analysis.job.modulecount`). The class
is often elsewhere, and often not named at the call:

- ``from models import Net`` / ``from .models import *`` / ``import models`` then
  ``models.Net(...)``: the class is in another module of the project
  (:func:`project_classes`, resolved like every import, :mod:`.resolve`);
- ``MODELS[args.arch](...)`` with ``MODELS = {"resnet": ResNet, ...}`` in the script or
  in an imported module, ``@register_model``-style decorator registries read through
  ``create_model(args.model)`` / ``build_model(name)``, and ``models.__dict__[args.arch]``
  over a project module: the key is the value the script's reader gives the expression
  (an argparse default, a constant), and the registry names the class
  (:func:`indirect_models`).

Everything is read from text through the workspace index (cached by content, reads
recorded for the CLI cache); no user code is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import attrs

from ..syntax.names import dotted
from .index import WORKSPACE
from .linking import ProjectSession, Resolver
from .summary import ModuleSummary

Evaluate = Callable[[ast.AST], Any]  # an expression's value as the script reader knows it


@attrs.frozen
class ProjectClass:
    """An ``nn.Module`` class of another module, and the name the script calls it by."""

    module: ModuleSummary
    name: str


def _resolver(tree: ast.Module, path: str) -> Resolver | None:
    if path.startswith("<"):
        return None
    return Resolver(ModuleSummary(path, "", "", tree), ProjectSession(WORKSPACE))


def project_classes(
    tree: ast.Module, path: str, wanted: set[str] | None = None
) -> dict[str, ProjectClass]:
    """Module classes of other project modules the script can call by a plain name
    (``from m import Net [as N]``, ``from m import *``), restricted to ``wanted``."""
    resolver = _resolver(tree, path)
    if resolver is None:
        return {}
    found: dict[str, ProjectClass] = {}
    for local in resolver.summary.bindings:
        if wanted is not None and local not in wanted:
            continue
        symbol = resolver.symbol(local)
        if symbol is not None and symbol.name in symbol.summary.module_classes:
            found[local] = ProjectClass(symbol.summary, symbol.name)
    for star in resolver.summary.star_imports:
        module = resolver.module(star.module, star.level)
        names = module.public_names if module is not None else None
        if module is None or names is None:
            continue
        for name in module.module_classes:
            if name in names and (wanted is None or name in wanted):
                found.setdefault(name, ProjectClass(module, name))
    return found


def project_function(
    tree: ast.Module, path: str, local: str
) -> tuple[ModuleSummary, ast.FunctionDef] | None:
    """The top-level function of another project module that ``local`` names in the
    module ``tree`` (``from labml_nn.utils import clone_module_list``), with its module."""
    resolver = _resolver(tree, path)
    symbol = resolver.symbol(local) if resolver is not None else None
    if symbol is None:
        return None
    function = next(
        (
            node
            for node in symbol.summary.tree.body
            if isinstance(node, ast.FunctionDef) and node.name == symbol.name
        ),
        None,
    )
    return (symbol.summary, function) if function is not None else None


def indirect_models(
    tree: ast.Module, path: str, calls: list[ast.Call], evaluate: Evaluate
) -> list[tuple[ast.Call, ProjectClass | str]]:
    """Calls among ``calls`` that build a model class chosen by a key: the class (another
    module's, or the name of one the script defines) for each one whose key is known."""
    resolver = _resolver(tree, path)
    if resolver is None:
        return []
    own = ModuleSummary(path, "", "", tree)
    found: list[tuple[ast.Call, ProjectClass | str]] = []
    for call in calls:
        chosen = _chosen(call, resolver, own, evaluate)
        if chosen is not None:
            found.append((call, chosen))
    return found


def _chosen(
    call: ast.Call, resolver: Resolver, own: ModuleSummary, evaluate: Evaluate
) -> ProjectClass | str | None:
    func = call.func
    if isinstance(func, ast.Subscript):  # REGISTRY[key](...) / module.__dict__[key](...)
        key = _key(func.slice, evaluate)
        if key is None:
            return None
        holder = func.value
        if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
            module = dotted(holder.value)
            symbol = resolver.symbol(f"{module}.{key}") if module else None
            if symbol is not None and symbol.name in symbol.summary.module_classes:
                return ProjectClass(symbol.summary, symbol.name)
            return None
        if isinstance(holder, ast.Name):
            return _registered(holder.id, key, resolver, own)
        return None
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute):
        # REGISTRY.get(key)(...)
        if func.func.attr == "get" and isinstance(func.func.value, ast.Name) and func.args:
            key = _key(func.args[0], evaluate)
            return _registered(func.func.value.id, key, resolver, own) if key else None
        return None
    written = dotted(func) or ""
    if "." in written:  # models.Net(...) / pkg.models.Net(...)
        symbol = resolver.symbol(written)
        if symbol is not None and symbol.name in symbol.summary.module_classes:
            return ProjectClass(symbol.summary, symbol.name)
    name = written.rsplit(".", 1)[-1].lower()
    if call.args and "model" in name and name.startswith(("create", "build", "get", "make")):
        key = _key(call.args[0], evaluate)  # create_model(args.model): a decorator registry
        return _decorated(key, resolver, own) if key else None
    return None


def _key(node: ast.AST, evaluate: Evaluate) -> str | None:
    value = evaluate(node)
    return value if isinstance(value, str) and value else None


def _registered(
    registry: str, key: str, resolver: Resolver, own: ModuleSummary
) -> ProjectClass | str | None:
    """``registry[key]`` where the script defines the registry or imports it."""
    entries = own.registries.get(registry)
    if entries is not None:
        name = entries.get(key)
        if name is None:
            return None
        symbol = resolver.symbol(name)  # a registry of imported classes
        if symbol is not None and symbol.name in symbol.summary.module_classes:
            return ProjectClass(symbol.summary, symbol.name)
        return name  # a class of the script itself
    binding = resolver.summary.bindings.get(registry)
    if binding is None or binding.attribute is None:
        return None
    module = resolver.module(binding.module, binding.level)
    if module is None:
        return None
    name = module.registries.get(binding.attribute, {}).get(key)
    if name is not None and name in module.module_classes:
        return ProjectClass(module, name)
    return None


def _decorated(key: str, resolver: Resolver, own: ModuleSummary) -> ProjectClass | str | None:
    """The class registered under ``key`` by a decorator, in the script or a module it imports."""
    name = own.registered(key)
    if name is not None:
        return name if name in own.module_classes else None
    session = resolver.session
    seen: set[str] = set()
    frontier = resolver.imported_modules()
    for _ in range(2):  # a package's __init__ importing the modules that register
        following: list[ModuleSummary] = []
        for module in frontier:
            if module.path in seen:
                continue
            seen.add(module.path)
            name = module.registered(key)
            if name is not None and name in module.module_classes:
                return ProjectClass(module, name)
            following += session.resolver_for(module).imported_modules()
        frontier = following
    return None
