"""One job: what another training job of the same script reads does not leak into it.

A script may run two jobs one after the other (a small classifier trained in ``train()``,
then a language model fine-tuned in ``finetune_llm()``, both called from the entry). The
estimate is of one of them — the model the reader names — and its fields are those of the
training path that reaches that model. A top-level function that builds and trains a
model of its own, and neither calls the estimated model's function nor is called by it,
is another job: its loaders' batches, its DDP wrapper and its optimizer are not this
job's (``examples/bad_train.py``: the classifier's evaluation batch of 256 was read as the
language model's). Functions only that other job calls are its too.
"""

from __future__ import annotations

import ast
import re

from .names import ImportTable, qualified_name
from .runconfig_fields import HF_TRAINERS, OPTIMIZERS

__all__ = ["other_jobs"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def other_jobs(tree: ast.Module, path: str, model_source: str | None) -> frozenset[int]:
    """The ids of every node inside the functions of other jobs than the one whose model
    was read at ``model_source`` (``path:line``); empty when that model is not built in a
    top-level function, or no other job exists."""
    line = _line(model_source, path)
    if line is None:
        return frozenset()
    functions = {n.name: n for n in tree.body if isinstance(n, _FUNCTIONS)}
    home = next(
        (f for f in functions.values() if f.lineno <= line <= (f.end_lineno or f.lineno)),
        None,
    )
    if home is None:
        return frozenset()
    calls = {  # a function named is one reached: called, or handed on (``mp.spawn(worker)``)
        name: {
            n.id
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in functions
        }
        for name, function in functions.items()
    }
    related = _reached(home.name, calls) | {
        name for name in functions if home.name in _reached(name, calls)
    }
    imports = ImportTable(tree)
    modules = _module_classes(tree, imports)
    foreign: set[str] = set()
    for name, function in functions.items():
        if name not in related and _trains_its_own(function, imports, modules):
            foreign |= _reached(name, calls) - related
    return frozenset(id(node) for name in foreign for node in ast.walk(functions[name]))


def _line(source: str | None, path: str) -> int | None:
    match = re.match(re.escape(path) + r":(\d+)", source or "")
    return int(match.group(1)) if match else None


def _reached(start: str, calls: dict[str, set[str]]) -> set[str]:
    """``start`` and every function of the file it calls or hands on, transitively."""
    seen, todo = {start}, [start]
    while todo:
        for callee in calls.get(todo.pop(), ()):
            if callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return seen


def _module_classes(tree: ast.Module, imports: ImportTable) -> set[str]:
    """The script's ``nn.Module`` classes (directly, or through another of them)."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, cls in classes.items():
            if name in found:
                continue
            for base in cls.bases:
                qualified = qualified_name(base, imports) or ""
                if qualified.endswith(("nn.Module", "LightningModule")) or (
                    isinstance(base, ast.Name) and base.id in found
                ):
                    found.add(name)
                    changed = True
                    break
    return found


def _trains_its_own(function: ast.AST, imports: ImportTable, modules: set[str]) -> bool:
    """Whether ``function`` builds a model and trains it (an optimizer built, a backward,
    a trainer): a job of its own, not a step of another's."""
    builds = trains = False
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        name = qualified_name(node.func, imports) or ""
        tail = name.rsplit(".", 1)[-1] or (
            node.func.attr if isinstance(node.func, ast.Attribute) else ""
        )
        if (isinstance(node.func, ast.Name) and node.func.id in modules) or (
            tail == "from_pretrained" and "Model" in name
        ):
            builds = True
        if (
            tail == "backward"
            or tail in HF_TRAINERS
            or (name.startswith("torch.optim.") and tail in OPTIMIZERS)
        ):
            trains = True
    return builds and trains
