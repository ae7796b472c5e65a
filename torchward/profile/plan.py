"""What to profile, decided from source only: the model recipe and the job (no torch here).

This is the static half of ``torchward profile``, shared by the CLI, ``torchward
estimate`` (to find a cached measurement of the same model and job) and the language
server (to build the request it sends to a subprocess). It reads; it never imports or
runs the user's code.

- :func:`script_recipe`: the call that builds the model the static reader named
  (:mod:`.construction`: a class or function of the project, torchvision, timm,
  transformers — the model ``torchward estimate`` sizes) becomes an expression in which
  every value the reader resolved (literals, module constants, ``argparse`` defaults,
  JSON config keys) is written in as a literal, plus only the statements it needs,
  transitively: the imports, ``def`` / ``class`` statements and constants its names
  lead to, and the assignments that define the rest — never the argument parsing, the
  data loading or the training loop (a value only those decide is a refusal naming it).
  A catalog or Hugging Face model becomes a ``config`` recipe built with transformers
  from its config fields.
- :func:`factory_recipe`: ``module:function`` with ``k=v`` arguments.
- :func:`job_of`: the job from the layered run configuration (script, settings, flags),
  each assumed field named.

Past 400 lines for now: the recipe (what to build) and the job (what to run) are both
read from one parsed script. The seam for the next change: :class:`PlannedJob` /
:func:`job_of` into ``profile/job.py`` apart from the recipe extraction.
"""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import itertools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .request import MEASURED_OPTIMIZERS, ModelRecipe, ProfileJob

__all__ = [
    "PlanError",
    "factory_recipe",
    "job_of",
    "model_source_digest",
    "parse_arguments",
    "recipe_for_config",
    "script_recipe",
]


class PlanError(ValueError):
    """The model or the job cannot be told from the source: the message says what to pass."""


# -- factories -------------------------------------------------------------------------------
def parse_arguments(pairs: Iterable[str]) -> dict[str, Any]:
    """``["n_layer=12", "name=tiny", "dropout=0.1"]`` → values (Python literals, else text)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise PlanError(f"{pair!r}: factory arguments are NAME=VALUE")
        try:
            out[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[key] = text
    return out


def factory_recipe(target: str, arguments: dict[str, Any], inputs: str = "") -> ModelRecipe:
    module, sep, function = target.rpartition(":")
    if not sep or not module or not function:
        raise PlanError(f"{target!r}: a factory is module:function (or path/to/file.py:function)")
    return ModelRecipe(
        kind="factory", target=target, label=function, arguments=arguments, inputs=inputs
    )


def factory_file(target: str, cwd: str = ".") -> Path | None:
    """The source file of a factory's module, found without importing anything."""
    module = target.rpartition(":")[0]
    if module.endswith(".py") or "/" in module:
        path = Path(cwd, module)
        return path if path.is_file() else None
    base = Path(cwd, *module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# -- scripts ---------------------------------------------------------------------------------
_PURE = (
    ast.Constant,
    ast.Name,
    ast.Attribute,
    ast.BinOp,
    ast.UnaryOp,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.Subscript,
    ast.Compare,
    ast.BoolOp,
    ast.IfExp,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.Load,
    ast.Slice,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.expr_context,
)
_LITERALS = (int, float, str, bool, type(None), tuple, list, dict)


def _is_pure(node: ast.AST) -> bool:
    return all(isinstance(n, _PURE) for n in ast.walk(node))


def _is_import_block(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, ast.Try):
        return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in node.body)
    return False


def _definitions(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Try):
        return set().union(*(_definitions(s) for s in node.body))
    return _assigned(node)


def _assigned(node: ast.stmt) -> set[str]:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        targets = [node.target]
    return {
        n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
    }  # tuple unpacking too


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


_Node = TypeVar("_Node", bound=ast.AST)


class _Substitute(ast.NodeTransformer):
    """Write in the literal the static reader resolves for a value the prelude cannot
    compute: one that reads a name the prelude's definitions do not define
    (``args.layers`` — an argparse default, also of an ``args`` parsed at the top level —,
    a function's local, a JSON config key). Values of names the definitions define are
    left for the prelude to compute (callees stay)."""

    def __init__(
        self, values: Any, module_names: set[str], defaults: dict[str, ast.expr] | None = None
    ) -> None:
        self.values = values
        self.module_names = module_names
        self.defaults = defaults or {}  # the enclosing function's parameters → their defaults
        # a copy's node id → the script's node it copies: the reader's values are the
        # engine's facts of the script's own nodes (:meth:`copy_of`)
        self._originals: dict[int, ast.AST] = {}

    def copy_of(self, node: _Node) -> _Node:
        """A copy of ``node`` to rewrite, each of its nodes remembering its original."""
        memo: dict[int, Any] = {}
        copied = copy.deepcopy(node, memo)
        originals = {id(n): n for n in ast.walk(node)}
        for key, value in memo.items():
            if isinstance(value, ast.AST) and key in originals:
                self._originals[id(value)] = originals[key]
        return copied

    def _literal(self, node: ast.expr) -> ast.expr | None:
        if isinstance(node, ast.Constant):
            return None
        if _loads(node) <= self.module_names:
            return None
        found = self.values.get(self._originals.get(id(node), node))
        if found is None or not isinstance(found[0], _LITERALS):
            return None
        if isinstance(node, ast.Name) and isinstance(found[0], dict):
            # a variable the reader sees as a dict may hold a config object
            # (``config = GPTConfig(...)``): its own assignment is run instead
            return None
        try:
            return ast.parse(repr(found[0]), mode="eval").body
        except SyntaxError:
            return None

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Subscript):  # models.__dict__[args.arch]()
            node.func.slice = self.visit(node.func.slice)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Name) and node.id in self.defaults:
            return ast.copy_location(copy.deepcopy(self.defaults[node.id]), node)
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.BinOp)):
            literal = self._literal(node)
            if literal is not None:
                return ast.copy_location(literal, node)
        return super().generic_visit(node)


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {
        id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
    }


def _enclosing_statements(tree: ast.Module, call: ast.Call) -> list[ast.stmt]:
    """The statements of every block around ``call`` (innermost last), before it."""
    parents = _parents(tree)
    chain: list[ast.AST] = []
    node: ast.AST | None = call
    while node is not None:
        chain.append(node)
        node = parents.get(id(node))
    blocks: list[ast.stmt] = []
    for inner, outer in itertools.pairwise(chain):
        if isinstance(outer, ast.Module):
            continue
        for field in ("body", "orelse", "finalbody"):
            body = getattr(outer, field, None)
            if isinstance(body, list) and inner in body:
                blocks += [s for s in body[: body.index(inner)] if isinstance(s, ast.stmt)]
    return blocks


def _parameter_defaults(tree: ast.Module, call: ast.Call) -> dict[str, ast.expr]:
    """Defaults of the parameters of the functions around ``call`` (``def make(d=64)``)."""
    parents = _parents(tree)
    found: dict[str, ast.expr] = {}
    node = parents.get(id(call))
    while node is not None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            for arg, default in zip(
                positional[len(positional) - len(args.defaults) :], args.defaults
            ):
                found.setdefault(arg.arg, default)
            for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
                if kw_default is not None:
                    found.setdefault(arg.arg, kw_default)
        node = parents.get(id(node))
    return found


# keyword arguments that load trained weights: a profile builds the same architecture
# without them (no download, no checkpoint read; a step's memory is the same)
_NO_WEIGHTS: dict[str, Any] = {"pretrained": False, "weights": None, "checkpoint_path": ""}


def _without_weights(call: ast.expr) -> None:
    if isinstance(call, ast.Call):
        for keyword in call.keywords:
            if keyword.arg in _NO_WEIGHTS:
                keyword.value = ast.Constant(_NO_WEIGHTS[keyword.arg])


def _not_built(path: str, call: ast.Call | None, why: str) -> PlanError:
    """A refusal that names the construct and what the user can do about it."""
    where = f"{path}:{call.lineno}: " if call is not None else f"{path}: "
    construct = f" `{ast.unparse(call)}`" if call is not None else ""
    return PlanError(
        f"{where}cannot build the model{construct}: {why}. Set the value in the script, or "
        "profile a function that returns the model: torchward profile FILE.py:FUNCTION "
        "[NAME=VALUE ...]"
    )


def _named_elsewhere(path: str, source: str, model: Any, error: PlanError) -> PlanError:
    """The reader named a model the script does not build with a call torchward builds
    (``MoCo(partial(models.__dict__[args.arch]))``, ``Model(args.cfg)`` of a YAML file),
    and no config of that name is known: say where it is built and what to do."""
    from .construction import line_of

    line = line_of(str(model.source))
    lines = source.splitlines()
    where = f"{path}: "
    construct = ""
    if line is not None and 0 < line <= len(lines) and str(model.source).startswith(path):
        where = f"{path}:{line}: "
        construct = f" (`{lines[line - 1].strip()[:120]}`)"
    reason = str(error).split(";")[0]
    return PlanError(
        f"{where}cannot build the model {model.value!r}{construct}: it is not a call of a "
        "class or function of the project, of torchvision, timm or transformers, and "
        f"{reason}. Profile a function that returns the model: torchward profile "
        "FILE.py:FUNCTION [NAME=VALUE ...]"
    )


def script_recipe(path: str, source: str, config: Any, inputs: str = "") -> ModelRecipe:
    """The recipe for the model ``config`` (read from ``source``) names, or :class:`PlanError`.

    The construction is the call the static reader found (:mod:`.construction`), so the
    profile builds the model ``torchward estimate`` sized; a model named by a hub id or
    a checkpoint (``from_pretrained``) is built from its config."""
    from torchward.analysis.runconfig import Values

    from .construction import find_construction

    tree = ast.parse(source, filename=path)
    found = find_construction(tree, path, config)
    if found is None:
        if config.model is not None:
            try:
                return recipe_for_config(config, inputs=inputs)
            except PlanError as error:
                raise _named_elsewhere(path, source, config.model, error) from None
        raise _not_built(
            path,
            None,
            "no construction of it was found (a call of a class or function of the project, "
            "of torchvision, timm or transformers, assigned to a name like `model` or `net`)",
        )
    call = found.call
    values = Values(tree, path, [], source)
    prelude, defined = _definitions_prelude(tree)
    substitute = _Substitute(values, defined, _parameter_defaults(tree, call))
    expression = substitute.visit(ast.Expression(substitute.copy_of(call)))
    if found.library in ("torchvision", "timm"):
        _without_weights(expression.body)
    ast.fix_missing_locations(expression)
    needed, missing = _needed(tree, call, expression, substitute, defined)
    if missing:
        shown = ", ".join(f"`{name}`" for name in sorted(missing))
        raise _not_built(
            path,
            call,
            f"the value of {shown} is not known from the source (it is set only when the "
            "script runs: a command-line argument without a default, data or a file it "
            "loads)",
        )
    roots = _loads(expression).union(*(_loads(s) for s, _ in needed))
    prelude = _required(prelude, roots)
    order = {id(s): i for i, s in enumerate(ast.walk(tree)) if isinstance(s, ast.stmt)}
    for statement, original in needed:
        order[id(statement)] = order[id(original)]
    statements = sorted([*prelude, *(s for s, _ in needed)], key=lambda s: order.get(id(s), 0))
    return ModelRecipe(
        kind="script",
        target=str(Path(path).resolve()),
        label=found.label,
        prelude=tuple(ast.unparse(s) for s in statements),
        expression=ast.unparse(expression),
        inputs=inputs,
    )


def _definitions_prelude(tree: ast.Module) -> tuple[list[ast.stmt], set[str]]:
    """The module's imports, definitions and constant assignments, in order, and the names
    they define. A constant assignment is a pure expression of names already defined:
    ``output = f"out/{args.model}"`` needs the parsed arguments and never runs (the
    ``args`` a script parses at its top level is not there)."""
    chosen: list[ast.stmt] = []
    defined: set[str] = set(dir(builtins))
    for node in tree.body:
        if _is_import_block(node) or isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            chosen.append(node)
            defined |= _definitions(node)
        elif (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and node.value is not None
            and _is_pure(node.value)
            and _loads(node.value) <= defined
        ):
            chosen.append(node)
            defined |= _assigned(node)
    return chosen, defined


def _required(statements: list[ast.stmt], roots: set[str]) -> list[ast.stmt]:
    """The definitions the names in ``roots`` need, transitively (a class needs its
    bases, the imports and constants its body reads): an import the model does not need
    (``from hellaswag import ...``, ``import wandb``) is never run, so a package missing
    here that only the data or the logging uses does not stop the profile. A star import
    may define anything: it is kept."""
    defines = [_definitions(s) for s in statements]
    keep: set[int] = set()
    wanted = set(roots)
    changed = True
    while changed:
        changed = False
        for index, statement in enumerate(statements):
            if index in keep:
                continue
            star = isinstance(statement, ast.ImportFrom) and any(
                a.name == "*" for a in statement.names
            )
            if star or defines[index] & wanted:
                keep.add(index)
                wanted |= _loads(statement)
                changed = True
    return [s for index, s in enumerate(statements) if index in keep]


def _needed(
    tree: ast.Module,
    call: ast.Call,
    expression: ast.AST,
    substitute: _Substitute,
    defined: set[str],
) -> tuple[list[tuple[ast.stmt, ast.stmt]], set[str]]:
    """The assignments the construction needs beyond the definitions (each rewritten with
    the reader's values, with its original), and the names nothing runnable defines."""
    candidates = [
        s for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))
    ] + _enclosing_statements(tree, call)
    defined = set(defined)
    needed = _loads(expression) - defined
    missing: set[str] = set()
    extra: list[tuple[ast.stmt, ast.stmt]] = []
    while needed:
        name = needed.pop()
        defining = [
            s
            for s in candidates
            if isinstance(s, (ast.Assign, ast.AnnAssign)) and name in _assigned(s)
        ]
        if not defining or _parses_arguments(defining[-1]) or _loads_data(defining[-1]):
            missing.add(name)
            continue
        statement = substitute.visit(substitute.copy_of(defining[-1]))
        ast.fix_missing_locations(statement)
        extra.append((statement, defining[-1]))
        defined |= _assigned(statement)
        needed |= _loads(statement) - defined - missing
    return extra, missing


_DATA = re.compile(r"(?i)(dataset|dataloader|loader|download|open|read|load)")


def _loads_data(statement: ast.stmt) -> bool:
    """``train_set = datasets.CIFAR10(root, download=True)``, ``cfg = yaml.load(...)``:
    reading data or files is the script's run, never the profile's."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            path = ast.unparse(func)  # torchvision.datasets.CIFAR10, datasets.ImageFolder
            if _DATA.search(name) or "datasets." in path or "data." in path:
                return True
            if any(k.arg in ("download", "root", "data_dir", "data_path") for k in node.keywords):
                return True
    return False


def _parses_arguments(statement: ast.stmt) -> bool:
    """``args = parser.parse_args()`` and the like: a profile never runs them."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.startswith("parse_") or name in ("get_args", "get_args_parser"):
                return True
    return False


# -- catalog / Hugging Face architectures ----------------------------------------------------
def recipe_for_config(config: Any, models: tuple = (), inputs: str = "") -> ModelRecipe:
    """A transformers architecture the estimator knows (catalog, settings, offline cache)."""
    from torchward.estimator.resolve import resolve

    try:
        resolved = resolve(config, models)
    except LookupError as error:
        raise PlanError(
            f"{error}; profile the script that builds the model (torchward profile train.py) "
            "or a function that returns it (torchward profile FILE.py:FUNCTION)"
        ) from None
    arch = resolved.arch
    if (
        resolved.proxy
        or arch.model_type in ("custom", "unknown")
        or arch.model_type.startswith("torchvision")
    ):
        raise PlanError(
            f"{resolved.model_label}: only a transformers architecture is built from a name "
            "alone; profile the script that builds this model (torchward profile train.py) "
            "or a function that returns it (torchward profile FILE.py:FUNCTION)"
        )
    return ModelRecipe(
        kind="config",
        target=arch.hf_id or arch.name,
        label=arch.name,
        model_type=arch.model_type,
        config=dict(arch.config),
        inputs=inputs,
    )


# -- the job ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedJob:
    job: ProfileJob
    assumed: tuple[str, ...]  # fields nobody gave: the defaults are named in the output
    sources: dict[str, str]  # field → where it came from


def job_of(config: Any, gpu: Any = None, models: tuple = ()) -> PlannedJob:
    """The job of the layered run configuration; values the estimator would assume too."""
    filled = config
    try:
        from torchward.estimator.resolve import resolve

        filled = resolve(config, models).config
    except (LookupError, ValueError):
        pass
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    assumed: list[str] = []
    for name in ("mode", "batch_size", "seq_len", "image_size", "dtype", "optimizer"):
        field = getattr(filled, name, None)
        if field is None:
            assumed.append(name)
            continue
        values[name] = field.value
        sources[name] = field.source
        if field.source == "assumed":
            assumed.append(name)
    if "batch_size" not in values:  # the estimator's assumption for a model it cannot resolve
        values["batch_size"] = 8 if values.get("mode", "train") == "train" else 1
    new_tokens = filled.max_new_tokens
    if new_tokens is not None:
        values["max_new_tokens"] = new_tokens.value
        sources["max_new_tokens"] = new_tokens.source
    if values.get("optimizer") not in (None, *MEASURED_OPTIMIZERS):
        raise PlanError(
            f"optimizer {values['optimizer']!r} ({sources['optimizer']}) cannot be profiled: "
            f"torch.optim has {', '.join(MEASURED_OPTIMIZERS)} (--optimizer overrides)"
        )
    if gpu is not None:
        try:
            values["sm"] = int(round(float(gpu.compute_capability) * 10))
        except (TypeError, ValueError):
            pass
    try:
        job = ProfileJob(**values)
    except (TypeError, ValueError) as error:
        raise PlanError(str(error)) from None
    return PlannedJob(job, tuple(dict.fromkeys(assumed)), sources)


# -- identity --------------------------------------------------------------------------------
def _local_imports(path: Path, source: str) -> list[Path]:
    """Sibling modules a script imports (``from model import GPT``): part of its model."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    found = []
    for name in sorted(names):
        for candidate in (path.parent / f"{name}.py", path.parent / name / "__init__.py"):
            if candidate.is_file():
                found.append(candidate)
    return found


def model_source_digest(recipe: ModelRecipe, cwd: str = ".") -> str:
    """A digest of everything that decides the model: its source files and the recipe."""
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps(recipe.to_dict(), sort_keys=True, default=str).encode())
    files: list[Path] = []
    if recipe.kind == "script":
        files.append(Path(recipe.target))
    elif recipe.kind == "factory":
        found = factory_file(recipe.target, cwd)
        if found is not None:
            files.append(found)
    for path in list(files):
        try:
            text = path.read_text("utf-8-sig")
        except OSError:
            continue
        files += _local_imports(path, text)
    for path in dict.fromkeys(files):
        try:
            h.update(str(path.resolve()).encode() + b"\0" + path.read_bytes())
        except OSError:
            h.update(b"missing:" + str(path).encode())
    return h.hexdigest()
