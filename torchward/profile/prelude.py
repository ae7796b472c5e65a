"""The statements a profile runs before it builds a script's model, and the construction.

Given the call that builds the model (:mod:`.construction`), :func:`prepare` writes the
static reader's values into it (``GPT(GPTConfig(n_layer=args.n_layer))`` becomes
``GPT(GPTConfig(n_layer=12))``) and chooses the statements the worker runs first: the
imports, ``def`` / ``class`` statements and constants the construction's names lead to,
transitively, and the assignments that define the rest (with the reader's values written
in too). Never the argument parsing (``args = parser.parse_args()``), data or file
loading, or anything else: a name only those define is returned as *missing*, for the
caller to refuse with. Source only: nothing here imports or runs the user's code.
"""

from __future__ import annotations

import ast
import builtins
import copy
import itertools
import re
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Prepared", "prepare"]


@dataclass(frozen=True)
class Prepared:
    """The construction as an expression, the statements to run before it (module order,
    source text), and the names it needs that nothing runnable defines."""

    expression: str
    prelude: tuple[str, ...]
    missing: frozenset[str]


def prepare(
    tree: ast.Module, path: str, source: str, call: ast.Call, drop_weights: bool = False
) -> Prepared:
    """``call`` of ``tree`` made ready to evaluate; ``drop_weights``: a library builder's
    ``pretrained`` / ``weights`` arguments become ``False`` / ``None`` (no download)."""
    from torchward.analysis.job.runconfig import Values

    values = Values(tree, path, [], source)
    prelude, defined = _definitions_prelude(tree)
    passed, site = _call_site_arguments(tree, call)
    substitute = _Substitute(values, defined, {**_parameter_defaults(tree, call), **passed})
    expression = substitute.visit(ast.Expression(substitute.copy_of(call)))
    if drop_weights:
        _without_weights(expression.body)
    ast.fix_missing_locations(expression)
    needed, missing = _needed(tree, call, expression, substitute, defined, site)
    roots = _loads(expression).union(*(_loads(s) for s, _ in needed))
    prelude = _required(prelude, roots)
    order = {id(s): i for i, s in enumerate(ast.walk(tree)) if isinstance(s, ast.stmt)}
    for statement, original in needed:
        order[id(statement)] = order[id(original)]
    statements = sorted([*prelude, *(s for s, _ in needed)], key=lambda s: order.get(id(s), 0))
    return Prepared(
        expression=ast.unparse(expression),
        prelude=tuple(ast.unparse(s) for s in statements),
        missing=frozenset(missing),
    )


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
    return set().union(*(_bound(t) for t in targets))


def _bound(target: ast.expr) -> set[str]:
    """The names an assignment target binds: ``a``, ``a, (b, *c)``; not the ``config`` of
    ``config["dim"] = 64`` or ``config.dim = 64``, which changes a value in place."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_bound(e) for e in target.elts))
    return set()


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
        self._expanding: set[str] = set()  # parameters being written in (``def f(n=n)``)

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
        from torchward.analysis.syntax.parsing import parse_expression  # the parse lock

        try:
            return parse_expression(repr(found[0]))
        except SyntaxError:
            return None

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Subscript):  # models.__dict__[args.arch]()
            node.func.slice = self.visit(node.func.slice)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if (
            isinstance(node, ast.Name)
            and node.id in self.defaults
            and node.id not in self._expanding
        ):
            # the parameter's default or the argument the script passes for it, with the
            # reader's values written in there too (``build(args.depth)``: ``20``)
            self._expanding.add(node.id)
            try:
                value = self.visit(self.copy_of(self.defaults[node.id]))
            finally:
                self._expanding.discard(node.id)
            return ast.copy_location(value, node)
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


def _call_site_arguments(
    tree: ast.Module, call: ast.Call
) -> tuple[dict[str, ast.expr], list[ast.stmt]]:
    """What the script passes to the module-level function that builds the model, when it
    calls that function exactly once (``main(GPT_CONFIG_124M, OTHER_SETTINGS)`` under
    ``if __name__ == "__main__":``): each parameter → the argument's expression, and the
    statements before that call, which may assign those arguments
    (``GPT_CONFIG_124M = {...}``). Only plain expressions are passed on (names, literals,
    dicts): an argument that calls something (``main(parser.parse_args())``) stays unknown,
    and so does a parameter the function assigns again before the construction."""
    parents = _parents(tree)
    function = parents.get(id(call))
    while function is not None and not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        function = parents.get(id(function))
    if function is None or not isinstance(parents.get(id(function)), ast.Module):
        return {}, []
    name = function.name
    sites = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]
    if len(sites) != 1:
        return {}, []
    site = sites[0]
    inside = parents.get(id(site))
    while inside is not None and inside is not function:
        inside = parents.get(id(inside))
    if inside is function or any(isinstance(a, ast.Starred) for a in site.args):
        return {}, []
    positional = [*function.args.posonlyargs, *function.args.args]
    passed = {param.arg: arg for param, arg in zip(positional, site.args)}
    parameters = {param.arg for param in (*positional, *function.args.kwonlyargs)}
    passed.update({k.arg: k.value for k in site.keywords if k.arg in parameters})
    reassigned = set().union(*(_assigned(s) for s in _enclosing_statements(tree, call)))
    chosen = {
        param: arg for param, arg in passed.items() if param not in reassigned and _is_pure(arg)
    }
    return chosen, _enclosing_statements(tree, site) if chosen else []


# keyword arguments that load trained weights: a profile builds the same architecture
# without them (no download, no checkpoint read; a step's memory is the same)
_NO_WEIGHTS: dict[str, Any] = {"pretrained": False, "weights": None, "checkpoint_path": ""}


def _without_weights(call: ast.expr) -> None:
    if isinstance(call, ast.Call):
        for keyword in call.keywords:
            if keyword.arg in _NO_WEIGHTS:
                keyword.value = ast.Constant(_NO_WEIGHTS[keyword.arg])


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
    site: list[ast.stmt],
) -> tuple[list[tuple[ast.stmt, ast.stmt]], set[str]]:
    """The assignments the construction needs beyond the definitions (each rewritten with
    the reader's values, with its original), and the names nothing runnable defines.
    ``site``: the statements before the call of the construction's function, where the
    arguments written in for its parameters are assigned."""
    # what runs before the construction, in order (the module's own statements are
    # definitions and constants, :func:`_definitions_prelude`)
    before = _taken(site + _enclosing_statements(tree, call), substitute.values)
    candidates = [s for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))] + before
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
        after = before[before.index(defining[-1]) + 1 :] if defining[-1] in before else []
        mutations = [m for m in after if _mutates(m, name)]
        if any(_parses_arguments(m) or _loads_data(m) for m in mutations):
            missing.add(name)
            continue
        for original in (defining[-1], *mutations):
            statement = substitute.visit(substitute.copy_of(original))
            ast.fix_missing_locations(statement)
            extra.append((statement, original))
            defined |= _assigned(statement)
            needed |= _loads(statement) - defined - missing
    return extra, missing


def _taken(statements: list[ast.stmt], values: Any) -> list[ast.stmt]:
    """``statements`` with each ``if`` the reader decides (``if args.debug:`` under its
    default, ``False``) replaced by the branch that runs, recursively: ``CFG = {...}`` in
    the ``else`` of a debug flag is the configuration the script builds. An ``if`` the
    reader cannot decide is left out, so what only it assigns stays unknown."""
    out: list[ast.stmt] = []
    for statement in statements:
        if not isinstance(statement, ast.If):
            out.append(statement)
            continue
        found = values.get(statement.test)
        if found is not None and isinstance(found[0], _LITERALS):
            out += _taken(statement.body if found[0] else statement.orelse, values)
    return out


_MUTATING = {"update", "setdefault", "append", "extend", "insert", "pop"}


def _mutates(statement: ast.stmt, name: str) -> bool:
    """``CONFIG.update(sizes[choice])`` or ``CONFIG["emb_dim"] = 768``: a statement that
    changes the value ``name`` holds in place, so the construction sees it changed."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _MUTATING
            and isinstance(func.value, ast.Name)
            and func.value.id == name
        )
    if isinstance(statement, ast.Assign):
        return any(
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
            for t in statement.targets
        )
    return False


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
