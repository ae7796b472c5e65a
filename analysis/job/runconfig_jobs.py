"""One job: what another training job of the same script reads does not leak into it.

A script may run two jobs one after the other (a small classifier trained in ``train()``,
then a language model fine-tuned in ``finetune_llm()``, both called from the entry). The
estimate is of one of them — the model the reader names — and its fields are those of the
training path that reaches that model. A top-level function that builds a model of its
own and hands it to an optimizer or a trainer (a module class of the script, a pretrained
model loaded), and neither calls the estimated model's function nor is called by it —
directly, or by being handed on (``mp.spawn(worker)``) — is another job: its loaders'
batches, its DDP wrapper and its optimizer are not this job's (``examples/bad_train.py``:
the classifier's evaluation batch of 256 was read as the language model's). Functions
only that other job calls are its too. A training step that builds a loss module but
trains the model it is handed stays the job's.
"""

from __future__ import annotations

import ast
import bisect
import re

from ..syntax.names import ImportTable, qualified_name
from .runconfig_fields import HF_TRAINERS, OPTIMIZERS
from .runconfig_paths import PathConditions

__all__ = ["other_jobs"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def other_jobs(
    tree: ast.Module, path: str, model_source: str | None, paths: PathConditions
) -> frozenset[int]:
    """The ids of every node inside the functions of other jobs than the one whose model
    was read at ``model_source`` (``path:line``); empty when that model is not built in a
    top-level function, or no other job exists. ``paths``: the read's index of the tree's
    nodes by type (one walk per read, not one per question)."""
    line = _line(model_source, path)
    if line is None:
        return frozenset()
    functions = sorted((n for n in tree.body if isinstance(n, _FUNCTIONS)), key=lambda n: n.lineno)
    starts = [f.lineno for f in functions]

    def owner(node: ast.AST) -> str | None:
        at = bisect.bisect_right(starts, getattr(node, "lineno", 0)) - 1
        if at < 0 or node.lineno > (functions[at].end_lineno or 0):  # type: ignore[attr-defined]
            return None
        return functions[at].name

    home = owner(ast.Pass(lineno=line))
    if home is None:
        return frozenset()
    names = {f.name for f in functions}
    calls: dict[str, set[str]] = {name: set() for name in names}
    for named in paths.of_type(ast.Name):  # a function named is one reached: called, or
        if named.id in names and isinstance(named.ctx, ast.Load):  # handed on (``mp.spawn``)
            caller = owner(named)
            if caller is not None:
                calls[caller].add(named.id)
    related = _reached(home, calls) | {name for name in names if home in _reached(name, calls)}
    if related == names:
        return frozenset()  # the common case: every function is the job's
    imports = ImportTable(tree)
    modules = _module_classes(tree, imports)
    built: set[tuple[str, str]] = set()  # (function, name) bound to a model it builds
    for assign in paths.of_type(ast.Assign):
        where = owner(assign)
        if where is None or where in related or not _builds_a_model(assign.value, imports, modules):
            continue
        built |= {(where, t.id) for t in assign.targets if isinstance(t, ast.Name)}
    trained: set[tuple[str, str]] = set()  # (function, name) an optimizer or trainer takes
    for node in paths.of_type(ast.Call):
        where = owner(node)
        if where is None or where in related:
            continue
        name = qualified_name(node.func, imports) or ""
        tail = name.rsplit(".", 1)[-1]
        handed: list[ast.expr] = []
        if name.startswith("torch.optim.") and tail in OPTIMIZERS and node.args:
            handed = [node.args[0]]
        elif tail in HF_TRAINERS:
            handed = [k.value for k in node.keywords if k.arg == "model"] + node.args[:1]
        trained |= {
            (where, n.id) for arg in handed for n in ast.walk(arg) if isinstance(n, ast.Name)
        }
    foreign: set[str] = set()
    for name in {where for where, _ in built & trained}:  # builds a model and trains it
        foreign |= _reached(name, calls) - related
    by_name = {f.name: f for f in functions}
    return frozenset(id(node) for name in foreign for node in ast.walk(by_name[name]))


def _builds_a_model(value: ast.expr, imports: ImportTable, modules: set[str]) -> bool:
    """Whether ``value`` builds a model: a module class of the script (``DDP(Net().cuda())``
    included) or a pretrained model loaded (``AutoModelForCausalLM.from_pretrained``)."""
    for node in ast.walk(value):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in modules:
            return True
        name = qualified_name(node.func, imports) or ""
        if name.endswith(".from_pretrained") and "Model" in name:
            return True
    return False


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
