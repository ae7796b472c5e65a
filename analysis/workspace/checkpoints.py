"""Which checkpoint files a project writes itself, and what they hold.

A ``torch.load`` of a file the same project writes with ``torch.save`` is a deliberate
load of the project's own output: the risk is the same as for any file only if someone
hands the program a file it did not write. TW023 reports it as a note, and offers
``weights_only=True`` only when every write it may read is proven to hold nothing but
tensors, containers of them and primitives (a ``state_dict()``, a dict literal of those,
an epoch counter); an argparse ``Namespace``, a whole model or a NumPy array would stop
loading.

A load reads a write when, read from the text alone:

- *the same path*: the same path expression in the same module (``torch.save(state,
  ckpt_path)`` … ``torch.load(ckpt_path)``), or the same literal file name anywhere in the
  project (``'best-model.pt'``, the ``.pth.tar`` tail of an f-string); a test's parameter
  is bound to what the module's pytest fixture of that name returns, as pytest binds it
  (a session fixture saving a seeded model to a temporary file the tests then load);
- *the same shape*: the keys the loaded value is read with (``ckpt['model']``,
  ``ckpt['epoch']``; at least two) are all keys of the dict the write saves.

Only the same path proves what the file holds; the same shape says only that the file is
in the project's format, which is enough for a note. The project is the folder tree at
the root the torch requirement was read from (:mod:`.torchversion`), or the analysed
file's folder; at most :data:`MAX_FILES` modules are read, through
:mod:`torchward.estimator.dependencies` (so an edited module invalidates cached results).

Past 400 lines on purpose: which write a read reads is one fact, and the binding
resolution it needs (:class:`_Module`: names, parameters followed to the module's own
calls) serves only it; it moves to a module of its own when a second user appears.
"""

from __future__ import annotations

import ast
import os

import attrs
from torchward.estimator import dependencies

from ..syntax.names import ImportTable, qualified_name
from ..syntax.parsing import parse_module

MAX_FILES = 2000  # modules read per project: the corpus's largest project has ~600
MAX_BYTES = 1_000_000  # a module larger than this is generated code, not a training script
_SKIPPED = {".git", ".venv", "venv", "env", "node_modules", "__pycache__", "site-packages", "build"}
_SAVE = "torch.save"
_LOAD = "torch.load"
# calls whose result is a Python number, string or bool
_PRIMITIVE_CALLS = {"len", "int", "float", "str", "bool", "round", "abs", "min", "max", "sum"}
_PRIMITIVE_METHODS = {"item", "tolist", "__len__"}
# torch functions that build a tensor (a tensor pickles as one under weights_only)
_TENSOR_FACTORIES = {
    "torch.tensor",
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.arange",
    "torch.randn",
    "torch.rand",
    "torch.stack",
    "torch.cat",
    "torch.get_rng_state",
    "torch.cuda.get_rng_state",
    "torch.cuda.get_rng_state_all",
}
_MAX_DEPTH = 6


@attrs.frozen
class Write:
    """A ``torch.save(obj, target)`` of the project."""

    path: str
    line: int
    target: str  # the path expression as written (``ast.unparse``)
    names: frozenset[str]  # literal file names in it (``'model.pt'``, an f-string's tail)
    keys: frozenset[str]  # top-level keys, when a dict literal is saved
    tensors_only: bool  # proven: tensors, containers of them and primitives only
    saved: str  # the saved expression as written
    # classes known to be pickled in it, which ``weights_only=True`` must allow-list
    # (``argparse.Namespace`` for ``args = parser.parse_args()``)
    classes: tuple[str, ...] = ()


@attrs.frozen
class Read:
    """A ``torch.load(target)`` and the keys its result is read with."""

    line: int
    target: str
    names: frozenset[str]
    keys: frozenset[str]


@attrs.frozen
class Provenance:
    """The project's writes a load may read; ``tensors_only``: one of them has the load's
    path, and every one holds only tensors, containers and primitives."""

    writes: tuple[Write, ...] = ()
    tensors_only: bool = False


def provenance(
    tree: ast.Module, imports: ImportTable, path: str, line: int, root: str | None
) -> Provenance:
    """What the project writes that the ``torch.load`` on ``line`` of ``tree`` may read;
    ``root`` None: only the module itself is looked at (a text with no file)."""
    own, every_read = _scan(tree, imports, path)
    reads = [r for r in every_read if r.line == line]
    if len(reads) != 1:
        return Provenance()  # two loads on one line: which is which is not known
    read = reads[0]
    writes = list(own)
    for write in project_writes(root) if root is not None else ():
        if os.path.abspath(write.path) != os.path.abspath(path):
            writes.append(write)
    by_path = [w for w in writes if _same_path(read, w, path)]
    by_shape = [w for w in writes if len(read.keys) >= 2 and read.keys <= w.keys]
    matched = tuple(dict.fromkeys([*by_path, *by_shape]))
    proven = bool(by_path) and all(w.tensors_only for w in matched)
    return Provenance(matched, proven)


def _same_path(read: Read, write: Write, path: str) -> bool:
    for loaded in read.names:
        for written in write.names:
            if _same_name(loaded, written):
                return True
    return os.path.abspath(write.path) == os.path.abspath(path) and read.target == write.target


def _same_name(a: str, b: str) -> bool:
    """Two literal file names, either an f-string's tail (``*_best.pt``), name one file."""
    if a.startswith("*") and b.startswith("*"):
        return a == b
    if a.startswith("*"):
        return b.endswith(a[1:])
    if b.startswith("*"):
        return a.endswith(b[1:])
    return a == b


@dependencies.remembered
def project_writes(root: str) -> tuple[Write, ...]:
    """Every ``torch.save`` in the project's Python modules under ``root``."""
    found: list[Write] = []
    for path in _modules(root):
        try:
            data = dependencies.read_bytes(path)
        except OSError:
            continue
        if b"save" not in data or len(data) > MAX_BYTES:
            continue
        try:
            tree = parse_module(data.decode("utf-8-sig"), path)
        except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
            continue
        found.extend(_scan(tree, ImportTable(tree), path)[0])
    return tuple(found)


def _modules(root: str) -> list[str]:
    """The Python modules under ``root``. The ``*.py`` names of each folder are recorded
    (a new module invalidates a cached result) and so is each sub-folder visited; a
    new sub-folder is seen at the next analysis that reads anything else that changed."""
    modules: list[str] = []
    stack = [root]
    while stack and len(modules) < MAX_FILES:
        folder = stack.pop()
        try:
            names = sorted(os.listdir(folder))
            python = set(dependencies.list_dir(folder, ("*.py",)))
        except OSError:
            continue
        for name in names:
            full = os.path.join(folder, name)
            if name in python:
                modules.append(full)
            elif name not in _SKIPPED and not name.startswith(".") and "." not in name:
                if dependencies.is_dir(full):
                    stack.append(full)
    return modules[:MAX_FILES]


def _scan(tree: ast.Module, imports: ImportTable, path: str) -> tuple[list[Write], list[Read]]:
    calls = list(_calls(tree))
    named = [(scope, call, qualified_name(call.func, imports)) for scope, call in calls]
    if not any(name in (_SAVE, _LOAD) for _, _, name in named):
        return [], []  # no save and no load: the module's bindings are not followed
    module = _Module(tree, calls)
    writes: list[Write] = []
    reads: list[Read] = []
    for scope, call, name in named:
        if name == _SAVE:
            saved = call.args[0] if call.args else _keyword(call, "obj")
            target = call.args[1] if len(call.args) >= 2 else _keyword(call, "f")
            if saved is None or target is None:
                continue
            writes.append(
                Write(
                    path,
                    call.lineno,
                    ast.unparse(target),
                    module.file_names(target, scope, 0),
                    module.keys(saved, scope, 0),
                    module.holds_tensors_only(saved, scope, 0),
                    ast.unparse(saved),
                    module.classes(saved, scope),
                )
            )
        elif name == _LOAD:
            target = call.args[0] if call.args else _keyword(call, "f")
            if target is None:
                continue
            reads.append(
                Read(
                    call.lineno,
                    ast.unparse(target),
                    module.file_names(target, scope, 0),
                    _read_keys(call, scope),
                )
            )
    return writes, reads


def _calls(tree: ast.Module):
    """(enclosing function or module, call) for every call of a name or attribute."""
    stack: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
    while stack:
        scope, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
            if isinstance(child, ast.Call) and isinstance(child.func, (ast.Attribute, ast.Name)):
                yield scope, child  # an alias (``from torch import load as tload``) too
            stack.append((inner, child))


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


# a binding: the expression a name is bound to and the scope it is evaluated in; None
# for a binding whose value is not known (a parameter nobody in the module passes, a loop
# over anything but ``range``, an unpacking)
_Binding = tuple[ast.expr, ast.AST] | None


class _Module:
    """One module's calls, and what its names are bound to, followed through the
    parameters of its own functions to the arguments its own calls pass
    (``save_checkpoint({'epoch': ..., 'state_dict': ...}, filename)``)."""

    def __init__(self, tree: ast.Module, calls: list[tuple[ast.AST, ast.Call]]) -> None:
        self.tree = tree
        self.calls = calls  # _calls(tree)
        self.callers: dict[str, list[tuple[ast.Call, ast.AST]]] = {}
        for scope, call in self.calls:
            func = call.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            self.callers.setdefault(callee, []).append((call, scope))
        # the module's pytest fixtures, by the name a test's parameter asks for them with
        self.fixtures: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fixture = _fixture_name(node)
                if fixture is not None:
                    self.fixtures[fixture] = node

    def bindings(self, name: str, scope: ast.AST, *, callers: bool = True) -> list[_Binding]:
        """What ``name`` is bound to in ``scope``. A parameter is bound to what the
        module's own calls pass (``callers``), else unknown: other modules may call the
        function with anything, so a proof of content never goes through a parameter."""
        values: list[_Binding] = []
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            passed = self._passed(name, scope)
            if passed == [None]:  # nobody in the module calls it: pytest may
                passed = self._fixture_values(name, scope) or passed
            values.extend(passed if callers else [None] * bool(passed))
        for node in _own_nodes(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        values.append((node.value, scope))
                    elif _binds(target, name):
                        values.append(None)  # unpacked: its value is not followed
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(
                node.target, ast.Name
            ):
                if node.target.id == name and node.value is not None:
                    values.append((node.value, scope))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                if _binds(node.target, name):
                    counts = (
                        isinstance(node.iter, ast.Call)
                        and isinstance(node.iter.func, ast.Name)
                        and node.iter.func.id == "range"
                        and isinstance(node.target, ast.Name)
                    )
                    values.append((ast.Constant(0), scope) if counts else None)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                if any(
                    i.optional_vars is not None and _binds(i.optional_vars, name)
                    for i in node.items
                ):
                    values.append(None)
            elif isinstance(node, ast.NamedExpr) and node.target.id == name:
                values.append((node.value, scope))
        return values

    def _fixture_values(
        self, name: str, function: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> list[_Binding]:
        """What pytest passes for the parameter ``name`` of a test (``test*``) or a fixture:
        the values the module's fixture of that name returns or yields (``[]`` when the
        function is neither, or the module defines no such fixture)."""
        if not (function.name.startswith("test") or _fixture_name(function) is not None):
            return []
        fixture = self.fixtures.get(name)
        if fixture is None or fixture is function:
            return []
        values: list[_Binding] = []
        for node in _own_nodes(fixture):
            if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
                values.append((node.value, fixture))
        return values

    def _passed(
        self, name: str, function: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> list[_Binding]:
        """What the module's own calls pass for the parameter ``name`` of ``function``
        (its default where a call leaves it out); [None] when nobody in the module calls it."""
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        names = [a.arg for a in positional]
        if name not in names and name not in [a.arg for a in arguments.kwonlyargs]:
            return []
        index = names.index(name) if name in names else None
        defaults = dict(zip(names[len(names) - len(arguments.defaults) :], arguments.defaults))
        for kwonly, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
            if default is not None:
                defaults[kwonly.arg] = default
        sites = self.callers.get(function.name, [])
        accepted = {*names, *(a.arg for a in arguments.kwonlyargs)}
        values: list[_Binding] = []
        for call, caller in sites:
            shift = (
                1
                if isinstance(call.func, ast.Attribute) and names[:1] in (["self"], ["cls"])
                else 0
            )
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                values.append(None)  # ``*args`` / ``**kwargs``: anything may be passed
                continue
            fits = (arguments.vararg is not None or len(call.args) <= len(names) - shift) and (
                arguments.kwarg is not None or all(k.arg in accepted for k in call.keywords)
            )
            if not fits:
                continue  # another function of the same name: its arguments do not fit
            passed = _keyword(call, name)
            if passed is None and index is not None and 0 <= index - shift < len(call.args):
                passed = call.args[index - shift]
            if passed is not None:
                values.append((passed, caller))
            elif name in defaults:
                values.append((defaults[name], function))
            else:
                values.append(None)
        return values or [None]

    def file_names(self, target: ast.expr, scope: ast.AST, depth: int) -> frozenset[str]:
        """File names in a path expression: the last component of string constants with an
        extension (``'ckpt/model.pt'`` -> ``model.pt``), an f-string's constant tail
        (``*_best.pt``), a constant's name (``$WEIGHTS_NAME``), and those of the values
        the names in it are bound to."""
        names: set[str] = set()
        for node in ast.walk(target):
            if isinstance(node, ast.JoinedStr):
                tail = node.values[-1] if node.values else None
                if isinstance(tail, ast.Constant) and isinstance(tail.value, str):
                    text = tail.value.rsplit("/", 1)[-1]
                    stem = text.rsplit(".", 1)[0].strip("_-.")
                    if "." in text and len(stem) >= 2:  # ``f"{run}_best.pt"``; not a bare ``.pt``
                        names.add("*" + text)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value.rsplit("/", 1)[-1]
                if "." in text.strip(".") and " " not in text:
                    names.add(text)
            elif isinstance(node, ast.Name) and depth < _MAX_DEPTH:
                if node.id.isupper() and len(node.id) > 3:
                    names.add("$" + node.id)  # ``WEIGHTS_NAME``: one constant, one file name
                    continue
                for binding in self.bindings(node.id, scope):
                    if binding is not None:
                        names |= self.file_names(binding[0], binding[1], depth + 1)
        return frozenset(names)

    def holds_tensors_only(self, node: ast.expr, scope: ast.AST, depth: int) -> bool:
        """Proven: ``node`` evaluates to tensors, containers of them and primitives only."""
        if depth > _MAX_DEPTH:
            return False

        def again(child: ast.expr) -> bool:
            return self.holds_tensors_only(child, scope, depth + 1)

        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Dict):
            return all(isinstance(k, ast.Constant) for k in node.keys) and all(
                again(v) for v in node.values
            )
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return all(again(e) for e in node.elts)
        if isinstance(node, ast.BinOp):
            return again(node.left) and again(node.right)
        if isinstance(node, ast.UnaryOp):
            return again(node.operand)
        if isinstance(node, ast.Name):
            values = self.bindings(node.id, scope, callers=False)
            if not values or None in values:
                return False
            stored = [(v, scope) for v in _subscript_stores(node.id, scope)]
            return all(
                self.holds_tensors_only(v, where, depth + 1)
                for v, where in [b for b in values if b is not None] + stored
            )
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr == "state_dict" and not node.args and not node.keywords:
                    return True  # a module's or optimizer's state: tensors and numbers
                if func.attr in _PRIMITIVE_METHODS and not node.args:
                    return True
            if isinstance(func, ast.Name) and func.id in _PRIMITIVE_CALLS:
                return func.id in ("len", "str") or all(again(a) for a in node.args)
            dotted = ast.unparse(func)
            if dotted in _TENSOR_FACTORIES:
                return True
            if dotted in ("copy.deepcopy", "deepcopy", "dict") and node.args:
                return again(node.args[0]) and all(again(k.value) for k in node.keywords)
        return False

    def classes(self, saved: ast.expr, scope: ast.AST) -> tuple[str, ...]:
        """Classes known to be pickled in the saved object: an argparse ``Namespace``
        saved whole (a name bound to ``parser.parse_args()``, as a value of the saved
        dict, list or tuple, or the saved object itself). ``args.arch`` saves a field,
        and a call's arguments are not what it returns: neither is followed."""
        found: set[str] = set()
        stack: list[tuple[ast.expr, ast.AST, int]] = [(saved, scope, 0)]
        while stack:
            node, where, depth = stack.pop()
            if depth > _MAX_DEPTH:
                continue
            if isinstance(node, ast.Dict):
                stack.extend((v, where, depth + 1) for v in node.values)
            elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                stack.extend((e, where, depth + 1) for e in node.elts)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("parse_args", "parse_known_args")
            ):
                found.add("argparse.Namespace")
            elif isinstance(node, ast.Name):
                # advice, not a proof: parameters are followed to the module's calls,
                # and a name the function does not bind to the module's globals
                bound = self.bindings(node.id, where) or self.bindings(node.id, self.tree)
                for binding in bound:
                    if binding is not None:
                        stack.append((binding[0], binding[1], depth + 1))
        return tuple(sorted(found))

    def keys(self, saved: ast.expr, scope: ast.AST, depth: int) -> frozenset[str]:
        """The top-level keys of the saved dict: a literal, or a name bound to one (plus
        the keys it is later given by ``name['key'] = ...``), through parameters too."""
        if isinstance(saved, ast.Dict):
            return frozenset(
                k.value
                for k in saved.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            )
        if not isinstance(saved, ast.Name) or depth >= _MAX_DEPTH:
            return frozenset()
        keys: set[str] = set()
        for node in _own_nodes(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == saved.id
                        and isinstance(target.slice, ast.Constant)
                        and isinstance(target.slice.value, str)
                    ):
                        keys.add(target.slice.value)
        for binding in self.bindings(saved.id, scope):
            if binding is not None:
                keys |= self.keys(binding[0], binding[1], depth + 1)
        return frozenset(keys)


def _fixture_name(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name pytest knows a fixture by (``@pytest.fixture``, ``@fixture(name=...)``);
    None for a function that is no fixture."""
    for decorator in function.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        text = ast.unparse(target)
        if text != "fixture" and not text.endswith(".fixture"):
            continue
        named = _keyword(call, "name") if call is not None else None
        if isinstance(named, ast.Constant) and isinstance(named.value, str):
            return named.value
        return function.name
    return None


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _own_nodes(scope: ast.AST):
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _subscript_stores(name: str, scope: ast.AST) -> list[ast.expr]:
    """Values stored as ``name[key] = value`` in ``scope``."""
    stored = []
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == name
                ):
                    stored.append(node.value)
    return stored


def _read_keys(load: ast.Call, scope: ast.AST) -> frozenset[str]:
    """The string keys the loaded value is read with in the load's function: through the
    name it is assigned to (``ckpt['model']``, ``ckpt.get('epoch')``, ``'step' in ckpt``)."""
    bound = None
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign) and node.value is load and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                bound = target.id
    if bound is None:
        return frozenset()
    keys = set()
    for node in _own_nodes(scope):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == bound
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.add(node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == bound
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            keys.add(node.args[0].value)
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
            and any(isinstance(c, ast.Name) and c.id == bound for c in node.comparators)
        ):
            keys.add(node.left.value)
    return frozenset(keys)
