"""Files a script runs into its own globals: ``exec(open("config/x.py").read())``.

nanoGPT-style scripts keep their job in module constants and let a *configurator*
override them: ``exec(open('configurator.py').read())`` runs a file that walks
``sys.argv`` — a bare argument names a config file that is executed in turn (it assigns
the globals it overrides), ``--key=value`` replaces one existing global with the literal
``value``. Other scripts execute a config file directly (``exec(open(cfg).read())`` with
``cfg = "config/train_gpt2.py"`` as a default).

The reader never executes anything. An executed file is parsed (through
:mod:`torchward.estimator.dependencies`, so a cached result is dropped when it changes)
and its top-level statements are taken as if written at the ``exec`` line: assignments
of values the reader can follow override the script's earlier constants (later script
assignments win again), an ``if`` whose test the defaults decide runs its taken branch,
and a nested ``exec`` is followed (three files deep). Each overridden constant cites the
config file's line.

A plain launch (``python train.py``) passes no arguments: a configurator then applies
nothing, and the script's own constants are the job — a note says so. Arguments given to
:func:`~torchward.analysis.job.runconfig.read_source` (``argv``; ``torchward estimate
train.py --script-args='config/train_x.py --batch_size=32'``) are applied the way nanoGPT's
configurator applies them: config files in order, then each ``--key=value`` over a global
the script defines (an unknown key is named in a note and ignored, as the configurator
would refuse to run).
"""

from __future__ import annotations

import ast
import operator
import os
from typing import TYPE_CHECKING, Any

from torchward.estimator import dependencies

from ..facts.constants import COMPARISONS
from ..syntax.names import dotted
from ..syntax.parsing import parse_module
from .runconfig_values import literal

if TYPE_CHECKING:
    from .runconfig import Values

__all__ = ["exec_target", "include"]

_MAX_DEPTH = 3
_MAX_SIZE = 300_000


def exec_target(statement: ast.stmt) -> ast.expr | None:
    """The path expression of ``exec(open(PATH).read())`` / ``exec(Path(PATH).read_text())``
    (with or without a globals argument), or ``None`` for any other statement."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    if not (isinstance(call.func, ast.Name) and call.func.id == "exec" and call.args):
        return None
    read = call.args[0]
    if not (
        isinstance(read, ast.Call)
        and isinstance(read.func, ast.Attribute)
        and read.func.attr in ("read", "read_text")
        and isinstance(read.func.value, ast.Call)
        and read.func.value.args
    ):
        return None
    opener = dotted(read.func.value.func) or ""
    if opener.rsplit(".", 1)[-1] not in ("open", "Path"):
        return None
    return read.func.value.args[0]


def include(values: Values, statement: ast.stmt, target: ast.expr, depth: int = 0) -> None:
    """Take the top-level statements of the file ``target`` names as if run at ``statement``."""
    found = _known(values, target)
    if found is None or not isinstance(found[0], str):
        values.notes.append(
            f"{values.path}:{statement.lineno}: `{ast.unparse(target)[:60]}` is executed "
            "here; which file it names is not known statically, so its overrides are not read"
        )
        return
    parsed = _parse(values, found[0])
    if parsed is None:
        values.notes.append(
            f"{values.path}:{statement.lineno}: executes {found[0]}, which could not be read"
        )
        return
    tree, shown, text = parsed
    _run(values, tree.body, statement, shown, depth)  # its own defaults first
    if "sys.argv" in text:
        _configurator(values, statement, shown, depth, _walks_arguments(tree))


def _parse(values: Values, filename: str) -> tuple[ast.Module, str, str] | None:
    """(tree, the name to cite, text) of ``filename``: beside the script, then relative to
    the working directory (where ``python train.py`` resolves ``open``)."""
    script_dir = os.path.dirname(os.path.abspath(values.path))
    for base in (script_dir, dependencies.getcwd()):
        full = os.path.normpath(os.path.join(base, os.path.expanduser(filename)))
        if not dependencies.is_file(full) or dependencies.file_size(full) > _MAX_SIZE:
            continue
        try:
            text = dependencies.read_text(full, encoding="utf-8-sig")
            return parse_module(text, full), filename, text
        except (OSError, SyntaxError, ValueError) as error:
            values.notes.append(f"{filename}: not read ({error})")
            return None
    return None


def _run(values: Values, body: list[ast.stmt], at: ast.stmt, shown: str, depth: int) -> None:
    """The statements of an executed file, in order, at the ``exec`` statement ``at``."""
    for statement in body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets: list[ast.expr] = (
                list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]
            )
            value = statement.value
            known = _known(values, value) if literal(value) is None else None
            if known is not None:  # ``config_file = sys.argv[1]``: as this launch passes it
                value = ast.copy_location(ast.Constant(known[0]), value)
            moved = ast.copy_location(ast.Assign(targets=targets, value=value), at)
            _assign(values, moved, at, cited=f"{shown}:{statement.lineno}")
        elif isinstance(statement, ast.If):
            decided = _known(values, statement.test)
            if decided is not None:
                _run(values, statement.body if decided[0] else statement.orelse, at, shown, depth)
        elif (target := exec_target(statement)) is not None and depth < _MAX_DEPTH:
            include(values, at, target, depth + 1)


def _walks_arguments(tree: ast.Module) -> bool:
    """nanoGPT's configurator: a top-level ``for arg in sys.argv[1:]:`` loop."""
    return any(isinstance(s, ast.For) and "sys.argv" in ast.unparse(s.iter) for s in tree.body)


def _configurator(values: Values, at: ast.stmt, shown: str, depth: int, loop: bool) -> None:
    """A file that reads ``sys.argv``: what the launch's arguments override. Its top-level
    statements already ran with them (``sys.argv[1]`` as a config file's name); ``loop``:
    it walks them as nanoGPT's configurator does, which is applied here."""
    if values.argv and not loop:
        return
    if not values.argv:
        values.notes.append(
            f"{values.path}:{at.lineno}: {shown} applies command-line overrides "
            "(`python SCRIPT config/x.py --key=value`); a plain launch gives none, so the "
            "script's own values are the job (`torchward estimate SCRIPT "
            "--script-args='config/x.py --key=value'` reads a launch with arguments)"
        )
        return
    for argument in values.argv:
        if "=" not in argument:
            parsed = _parse(values, argument) if depth < _MAX_DEPTH else None
            if parsed is None:
                values.notes.append(f"{argument}: config file not found; not applied")
                continue
            tree, name, _ = parsed
            _run(values, tree.body, at, name, depth + 1)
            continue
        key, _, text = argument.partition("=")
        key = key.removeprefix("--")
        if key not in values.constants:
            values.notes.append(
                f"{argument}: `{key}` is not a global of the script; the configurator "
                "refuses unknown keys, so it is not applied"
            )
            continue
        try:
            value: Any = ast.literal_eval(text)
        except (SyntaxError, ValueError):
            value = text  # the configurator keeps it as a string
        if type(value) is not type(values.constants[key][0]):
            values.notes.append(
                f"{argument}: `{key}` is a {type(values.constants[key][0]).__name__} in the "
                "script; the configurator refuses another type, so it is not applied"
            )
            continue
        moved = ast.copy_location(
            ast.Assign(targets=[ast.Name(key, ast.Store())], value=ast.Constant(value)), at
        )
        _assign(values, moved, at, cited=f"command line `{argument}`")


def _assign(values: Values, moved: ast.Assign, at: ast.stmt, cited: str) -> None:
    """An assignment the executed file (or the command line) makes at ``at``: indexed as
    the script's own, and run there by the engine's launch."""
    values.assignment(moved, cited=cited)
    values.included.setdefault(id(at), []).append(moved)


def _known(values: Values, node: ast.expr) -> tuple[Any] | None:
    """What an executed file's name, or a test at its top level, holds while the script is
    indexed — the engine's launch runs after, with the included statements, and it knows
    no launch arguments, which a configurator reads: a literal, a literal global set
    before, ``sys.argv`` as this launch passes it, and ``len`` / an index / one comparison
    of those (``config_file = sys.argv[1] if len(sys.argv) > 1``); None otherwise."""
    found = literal(node)
    if found is not None:
        return (found,)
    if isinstance(node, ast.Name) and node.id in values.constants:
        return (values.constants[node.id][0],)
    if dotted(node) == "sys.argv":
        return ((values.path, *values.argv),)
    parts: list[tuple[Any] | None]
    if isinstance(node, ast.Call) and dotted(node.func) == "len" and len(node.args) == 1:
        parts = [_known(values, node.args[0])]
        operation: Any = len
    elif isinstance(node, ast.Subscript):
        parts = [_known(values, node.value), _known(values, node.slice)]
        operation = operator.getitem
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        parts = [_known(values, node.left), _known(values, node.comparators[0])]
        operation = COMPARISONS.get(type(node.ops[0]))
    else:
        return None
    if operation is None or any(part is None for part in parts):
        return None
    try:
        return (operation(*(part[0] for part in parts if part is not None)),)
    except (IndexError, KeyError, TypeError):
        return None
