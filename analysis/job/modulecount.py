"""Static parameter counts of the ``nn.Module`` classes a script defines, for the estimator.

A class counts when it subclasses ``nn.Module`` (or a counted local class) and its
``__init__`` builds layers whose sizes can be followed: literals, module constants,
``__init__`` defaults and the arguments of the call that builds it, ``self.x = x`` and
local names, ``+ - * // / **`` of those. Understood layers: ``nn.Linear``,
``Conv1d/2d/3d`` (and transposed), ``Embedding``, ``LayerNorm``, ``RMSNorm``,
``BatchNorm*``, ``GroupNorm``, ``InstanceNorm*``, ``MultiheadAttention``, ``LSTM`` /
``GRU`` / ``RNN`` and their cells (``LSTMCell``...), ``nn.Parameter(torch.zeros(...))``, parameter-free layers
(activations, pooling, dropout...), ``Sequential`` / ``ModuleList`` / ``ModuleDict`` of
those, list comprehensions and ``append`` loops over ``range(N)``, lists grown with ``+=``
/ ``+`` (``layers += [nn.Linear(w, w), nn.ReLU()]`` then ``nn.Sequential(*layers)``),
modules chosen by a conditional expression, ``with`` / ``try`` bodies (a ``while`` or
``match`` that builds layers is unknown, never a silent zero), ``copy.deepcopy``, local
classes (also classes imported from other modules of the project, found through the
workspace index, :mod:`torchward.analysis.workspace`), helper functions with one
``return`` (the file's own and other project modules': ``clones(layer, N)``) and the
module's own methods (``self._make_blocks(...)``, ``self._build_head()``).

A module the script builds and hands to another's constructor (``Seq2Seq(encoder,
decoder)``) is counted where that constructor keeps it (:class:`Built`). Anything else (a
layer from another library, a size read from a config object, a module passed in that the
script did not build) is *unknown*: it adds nothing to the count and is listed, so the estimate
widens its interval instead of inventing parameters. Weight tying is not subtracted (an
over-count is the safe side of an OOM estimate).

Past 400 lines for now: the counter's expression evaluator, its layer table and the calls
it follows (helpers, the module's own methods) are one recursive walk over shared
environments, and ``ModuleCount`` / ``_bind`` are used by all three. The seams for the next
change: the size-expression evaluator (``expr``, ``value``, ``_range*``) apart from the
layer table, and the call following (``_helper``, ``_own_method``, ``_run_method``,
``_imported_function``) as a collaborator once ``ModuleCount`` and ``_bind`` live in a module of
their own.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..facts.binding import parameter_defaults
from ..facts.constants import COMPARISONS
from ..facts.owncode import walk_own_code
from ..syntax.names import ImportTable, qualified_name
from .modulelayers import Unknown as _Unknown
from .modulelayers import layer_params as _layer

__all__ = ["UNTRACED", "Built", "ModuleCount", "ModuleCounter", "module_constants"]

UNTRACED = object()
"""An argument whose value could not be followed: layers sized by it are unknown."""

_FREE = {  # torch.nn layers without parameters
    "ReLU",
    "ReLU6",
    "GELU",
    "SiLU",
    "Mish",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "ELU",
    "LeakyReLU",
    "Hardswish",
    "Hardsigmoid",
    "Softplus",
    "Identity",
    "Flatten",
    "Unflatten",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "Upsample",
    "PixelShuffle",
    "PixelUnshuffle",
    "ZeroPad2d",
    "ConstantPad2d",
    "ReflectionPad2d",
    "CrossEntropyLoss",
    "MSELoss",
    "L1Loss",
    "BCEWithLogitsLoss",
    "BCELoss",
    "NLLLoss",
    "Softmax2d",
    "GLU",
}
_BASES = (
    "torch.nn.Module",
    "torch.nn.modules.module.Module",
    "lightning.LightningModule",
    "pytorch_lightning.LightningModule",
    "lightning.pytorch.LightningModule",
)


@attrs.frozen
class ModuleCount:
    params: int
    unknown: tuple[str, ...] = ()  # constructors / values that could not be counted
    traced: bool = False  # some size came from a constant, default or argument


_ZERO = ModuleCount(0)


@attrs.frozen
class Built:
    """A module built outside and handed to a constructor (``Seq2Seq(encoder, decoder)``):
    its count, added where the constructor keeps it (``self.encoder = encoder``)."""

    count: ModuleCount


def _add(*counts: ModuleCount, times: int = 1) -> ModuleCount:
    return ModuleCount(
        sum(c.params for c in counts) * times,
        tuple(u for c in counts for u in c.unknown),
        any(c.traced for c in counts),
    )


class ModuleCounter:
    """Counts for the module classes of one file (and the siblings it imports from)."""

    def __init__(
        self,
        tree: ast.Module,
        path: str,
        constants: dict[str, Any],
        depth: int = 0,
        wanted: set[str] | None = None,
    ) -> None:
        self.imports = ImportTable(tree)
        self.tree = tree
        self.path = path
        self.constants = constants
        self.classes: dict[str, tuple[ast.ClassDef, ModuleCounter]] = {}
        # module-level functions: a helper that builds modules (``clones(layer, N)``)
        self.functions = {
            node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)
        }
        self._others: dict[str, ModuleCounter] = {}  # other modules' counters, by path
        # imported names of other project modules' functions (:meth:`_imported_function`)
        self._imported: dict[str, tuple[ModuleCounter, ast.FunctionDef] | None] = {}
        self._building: list[ast.ClassDef] = []  # the classes whose __init__ is being counted
        self._active: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = (node, self)
        if depth == 0:
            self._siblings(tree, wanted)
        self.modules = {n for n in self.classes if self.is_module(n)}

    # -- which classes -------------------------------------------------------------------
    def _siblings(self, tree: ast.Module, wanted: set[str] | None = None) -> None:
        """Module classes of other project modules the script calls by name (``from models
        import Net``, ``from .models import *``), found through the workspace index
        (:mod:`torchward.analysis.workspace`), only the names in ``wanted`` when given."""
        from ..workspace.models import project_classes

        for local, found in project_classes(tree, self.path, wanted).items():
            self.adopt(local, found.module.tree, found.module.path, found.name)

    def adopt(self, local: str, tree: ast.Module, path: str, name: str) -> None:
        """Count the class ``name`` of the module ``tree`` (at ``path``) as ``local`` here."""
        other = self._others.get(path)
        if other is None:
            other = self._others[path] = ModuleCounter(tree, path, module_constants(tree), depth=1)
        if name in other.classes:
            self.classes[local] = other.classes[name]
            self.imports.names.pop(local, None)
            self.modules = {n for n in self.classes if self.is_module(n)}

    def is_module(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name not in self.classes or name in seen:
            return False
        node, owner = self.classes[name]
        for base in node.bases:
            qualified = qualified_name(base, owner.imports) or ""
            if qualified in _BASES or qualified.endswith(".nn.Module"):
                return True
            if isinstance(base, ast.Name) and owner.is_module(base.id, seen | {name}):
                return True
        return False

    # -- counting ------------------------------------------------------------------------
    def count_class(
        self, name: str, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
    ) -> ModuleCount:
        """The parameters of ``name(*args, **kwargs)`` (values already evaluated)."""
        node, owner = self.classes[name]
        if name in self._active:
            return ModuleCount(0, (f"{name} (recursive)",))
        self._active.add(name)
        try:
            return owner._count_body(node, list(args), dict(kwargs or {}))
        finally:
            self._active.discard(name)

    def _count_body(
        self, node: ast.ClassDef, args: list[Any], kwargs: dict[str, Any]
    ) -> ModuleCount:
        init = next(
            (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None
        )
        parts: list[ModuleCount] = []
        for base in node.bases:  # a local base class builds its own layers in super().__init__()
            if isinstance(base, ast.Name) and base.id in self.modules:
                parts.append(self.count_class(base.id, args, kwargs))
        if init is None:
            return _add(*parts)
        env = dict(self.constants)
        env.update(_bind(init.args, args, kwargs, self))
        lists: dict[str, ModuleCount] = {}
        self._building.append(node)
        try:
            self._statements(init.body, env, lists, parts, times=1)
        finally:
            self._building.pop()
        return _add(*parts)

    def _own_method(self, call: ast.Call) -> ast.FunctionDef | None:
        """The method ``self.NAME(...)`` calls on the class being built (or on a base class
        of this file): ``self._make_blocks(width, depth)`` in ``__init__``."""
        func = call.func
        if not (
            self._building
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            return None
        pending, seen = [self._building[-1]], set()
        while pending:
            cls = pending.pop(0)
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == func.attr:
                    return stmt
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id not in seen:
                    seen.add(base.id)
                    found = self.classes.get(base.id)
                    if found is not None and found[1] is self:
                        pending.append(found[0])
        return None

    def _run_method(self, method: ast.FunctionDef, call: ast.Call, env, parts, times) -> None:
        """``self._build(...)`` as a statement: the method's body runs on the same
        ``self`` (what it assigns there is the module's; what it sets on ``self``, such as
        a running channel count, the rest of ``__init__`` reads)."""
        key = f"def {method.name}@{method.lineno}"
        if key in self._active:
            return
        try:
            args = [self.value(a, env) for a in call.args]
            kwargs = {k.arg: self.value(k.value, env) for k in call.keywords if k.arg}
        except _Unknown:
            parts.append(ModuleCount(0, (f"self.{method.name}(...) (arguments not traced)",)))
            return
        inner = {**self.constants, **_own_state(env)}
        inner.update(_bind(method.args, args, kwargs, self))
        self._active.add(key)
        try:
            self._statements(method.body, inner, {}, parts, times)
        finally:
            self._active.discard(key)
        env.update(_own_state(inner))

    def _statements(self, body, env, lists, parts, times) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    self._assign(target, stmt.value, env, lists, parts, times)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self._effect(stmt.value, env, lists, parts, times)
            elif isinstance(stmt, ast.For) and (bounds := _range(stmt.iter, env, self)) is not None:
                if isinstance(stmt.target, ast.Name) and len(range(*bounds)) <= 256:
                    for index in range(*bounds):  # unrolled: sizes may depend on the index
                        env[stmt.target.id] = index
                        self._statements(stmt.body, env, lists, parts, times)
                else:
                    self._statements(stmt.body, env, lists, parts, times * len(range(*bounds)))
            elif isinstance(stmt, ast.For) and (items := self._loop_items(stmt, env)) is not None:
                for item in items:  # ``for size in [256, 512]``: each pass with its item
                    _bind_loop_target(stmt.target, item, env)
                    self._statements(stmt.body, env, lists, parts, times)
            elif isinstance(stmt, ast.For):
                _forget_assigned(stmt, env)  # ``d_prev = size`` in the loop: no longer known
                parts.append(
                    ModuleCount(
                        0,
                        (
                            f"layers built in `for {ast.unparse(stmt.target)} in "
                            f"{ast.unparse(stmt.iter)[:30]}` (count not traced)",
                        ),
                    )
                )
            elif isinstance(stmt, ast.If):
                try:
                    test = self.value(stmt.test, env)
                except _Unknown:
                    parts.append(ModuleCount(0, ("a layer built under an untraceable `if`",)))
                    continue
                self._statements(stmt.body if test else stmt.orelse, env, lists, parts, times)
            elif isinstance(stmt, ast.AugAssign):
                self._augmented(stmt, env, lists, parts, times)
            elif isinstance(stmt, ast.With):
                self._statements(stmt.body, env, lists, parts, times)
            elif isinstance(stmt, ast.Try):  # the path that does not raise
                self._statements(stmt.body + stmt.orelse + stmt.finalbody, env, lists, parts, times)
            elif isinstance(stmt, (ast.While, ast.Match)) and any(
                isinstance(n, ast.Call) for n in ast.walk(stmt)
            ):
                # layers may be built there: an unknown, never a silent zero (a partial
                # count at high confidence is the one answer that must not happen)
                _forget_assigned(stmt, env)
                kind = type(stmt).__name__.lower()
                parts.append(ModuleCount(0, (f"layers built in a `{kind}` block (not followed)",)))

    def _loop_items(self, loop: ast.For, env: dict) -> tuple | None:
        """The items a ``for`` over a known list or tuple of values takes (at most 256),
        when each binds the loop's target and the body runs through (no ``break``,
        ``continue`` or ``return`` deciding which passes build layers); else None."""
        try:
            items = self.value(loop.iter, env)
        except _Unknown:
            return None
        if not isinstance(items, (tuple, list)) or len(items) > 256:
            return None
        if any(isinstance(n, (ast.Break, ast.Continue, ast.Return)) for n in ast.walk(loop)):
            return None
        if not all(_bind_loop_target(loop.target, item, {}) for item in items):
            return None
        return tuple(items)

    def _augmented(self, stmt: ast.AugAssign, env, lists, parts, times) -> None:
        """``layers += [nn.Linear(w, w), nn.ReLU()]`` (a list of modules grows), or ``c *= 2``
        (a size the next layers read)."""
        target = stmt.target
        key = (
            target.id
            if isinstance(target, ast.Name)
            else "self." + target.attr
            if isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            else None
        )
        if key is None:
            return
        if key in lists and isinstance(stmt.op, ast.Add):
            lists[key] = _add(lists[key], _add(self.expr(stmt.value, env, lists), times=times))
            return
        try:
            current = env.get(key, UNTRACED)
            if isinstance(current, tuple) and isinstance(stmt.op, ast.Add):
                added = self.value(stmt.value, env)  # dims += [128]: a list of sizes grows
                if not isinstance(added, tuple):
                    raise _Unknown
                value: Any = current + added
            else:
                value = self.value(ast.BinOp(ast.Name(key), stmt.op, stmt.value), env)
        except _Unknown:
            env.pop(key, None)  # no longer known: later layers sized by it are unknown
            count = self.expr(stmt.value, env, lists)
            if count.params or count.unknown:  # self.blocks += [Block()]: modules kept
                parts.append(_add(count, times=times))
            return
        env[key] = value

    def _assign(self, target, value, env, lists, parts, times) -> None:
        is_self = (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        )
        if isinstance(target, ast.Name) or is_self:
            key = target.id if isinstance(target, ast.Name) else "self." + target.attr
            if isinstance(value, ast.List) and not value.elts:
                lists[key] = _ZERO  # a list that layers are appended to (or sizes: see expr)
                env.pop(key, None)
                return
            try:
                found = self.value(value, env)
            except _Unknown:
                found = UNTRACED
            if found is not UNTRACED and not isinstance(found, Built):
                env[key] = found
                lists.pop(key, None)
                return
            count = self.expr(value, env, lists)
            if isinstance(target, ast.Name):
                lists[key] = count  # a local module or list: counted where self.x takes it
            elif count.params or count.unknown:
                parts.append(_add(count, times=times))
                lists["tied:" + key] = count
        elif _is_weight_tie(target, value) and times == 1:
            # self.transformer.wte.weight = self.lm_head.weight: one tensor, counted twice
            source = "tied:" + ast.unparse(value.value)  # type: ignore[attr-defined]
            if source in lists:
                parts.append(ModuleCount(-lists.pop(source).params))

    def _effect(self, call: ast.Call, env, lists, parts, times) -> None:
        func = call.func
        method = self._own_method(call)
        if method is not None:
            self._run_method(method, call, env, parts, times)
            return
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("append", "extend", "add_module", "register_module")
            and call.args
        ):
            item = self.expr(call.args[-1], env, lists)
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id in lists:
                lists[owner.id] = _add(lists[owner.id], _add(item, times=times))
            else:  # self.layers.append(...), self.add_module("x", ...)
                parts.append(_add(item, times=times))

    def expr(self, node: ast.AST, env: dict, lists: dict) -> ModuleCount:
        """Parameters held by the module (or list of modules) ``node`` builds."""
        if isinstance(node, ast.Name) and node.id in lists:
            return lists[node.id]
        if isinstance(node, ast.Name) and isinstance(env.get(node.id), Built):
            return env[node.id].count  # a module the caller built and passed in
        if isinstance(node, (ast.List, ast.Tuple)):
            return _add(*(self.expr(e, env, lists) for e in node.elts))
        if isinstance(node, ast.Starred):
            return self.expr(node.value, env, lists)
        if isinstance(node, ast.Dict):
            return _add(*(self.expr(v, env, lists) for v in node.values))
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            unrolled = self._unrolled(node, env, lists)
            if unrolled is not None:
                return unrolled
            n = _range_count(node.generators[0].iter, env, self)
            if n is not None:
                return _add(self.expr(node.elt, env, lists), times=n)
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mult)
            and isinstance(node.left, ast.List)
        ):
            return self.expr(node.left, env, lists)  # [Block()] * n is one module n times
        if isinstance(node, ast.IfExp):  # nn.Parameter(torch.zeros(n)) if bias else None
            try:
                test = self.value(node.test, env)
            except _Unknown:
                body, orelse = self.expr(node.body, env, lists), self.expr(node.orelse, env, lists)
                larger = body if body.params >= orelse.params else orelse
                return _add(
                    larger, ModuleCount(0, (f"{ast.unparse(node)[:40]} (untraceable test)",))
                )
            return self.expr(node.body if test else node.orelse, env, lists)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _add(self.expr(node.left, env, lists), self.expr(node.right, env, lists))
        if isinstance(node, ast.ListComp):
            return ModuleCount(0, (f"{ast.unparse(node)[:40]} (count not traced)",))
        if isinstance(node, ast.Call):
            return self.call(node, env, lists)
        return _ZERO  # self.config = config, self.scale = d ** -0.5: not a module (or not knowable)

    def _unrolled(self, node: ast.ListComp, env: dict, lists: dict) -> ModuleCount | None:
        """``[Block(i, o) for i, o in [(3, 64), (64, 128)]]``, ``[Up(c * 2**k) for k in
        range(4)]``: each element counted with its own loop values (sizes depend on them);
        None when the items cannot be followed (or there are more than 256)."""
        generator = node.generators[0]
        if generator.ifs:
            return None
        bounds = _range(generator.iter, env, self)
        items: Any
        if bounds is not None:
            items = range(*bounds)
        elif isinstance(generator.iter, (ast.List, ast.Tuple)):
            # each followed on its own: one unknown size spoils only its own element
            items = generator.iter.elts
        else:
            try:
                items = self.value(generator.iter, env)
            except _Unknown:
                return None
        if not isinstance(items, (tuple, list, range)) or len(items) > 256:
            return None
        counts = []
        for item in items:
            if isinstance(item, ast.AST):
                try:
                    item = self.value(item, env)
                except _Unknown:
                    label = ast.unparse(node.elt)[:40]
                    counts.append(ModuleCount(0, (f"{label} (sizes not traced)",)))
                    continue
            inner = dict(env)
            if not _bind_loop_target(generator.target, item, inner):
                return None
            counts.append(self.expr(node.elt, inner, lists))
        return _add(*counts) if counts else _ZERO

    def call(self, node: ast.Call, env: dict, lists: dict) -> ModuleCount:
        qualified = qualified_name(node.func, self.imports) or ""
        local = node.func.id if isinstance(node.func, ast.Name) else None
        label = ast.unparse(node.func)
        if local in self.modules:
            try:
                args = [self.value(a, env) for a in node.args]
                kwargs = {k.arg: self.value(k.value, env) for k in node.keywords if k.arg}
            except _Unknown:
                return ModuleCount(0, (f"{label}(...) (arguments not traced)",))
            inner = self.count_class(local, args, kwargs)
            return ModuleCount(inner.params, inner.unknown, True)
        if local == "dict" and not node.args:  # nn.ModuleDict(dict(wte=..., h=...))
            return _add(*(self.expr(k.value, env, lists) for k in node.keywords))
        if local in self.functions and local not in self.imports.names:
            return self._helper(self, self.functions[local], node, env)
        method = self._own_method(node)
        if method is not None:  # self._make_blocks(width, depth)
            return self._helper(self, method, node, env, on_self=True)
        if local is not None and local in self.imports.names and local not in self.classes:
            imported = self._imported_function(local)
            if imported is not None:  # a helper of another project module
                return self._helper(*imported, node, env)
        if qualified == "copy.deepcopy" and node.args:
            return self.expr(node.args[0], env, lists)  # a copy holds as many parameters
        tail = qualified.rsplit(".", 1)[-1]
        if not qualified.startswith("torch.nn.") and not (
            tail == "Parameter" and "torch" in qualified
        ):
            name = label.rsplit(".", 1)[-1]
            if (
                name[:1].isupper()
                or name in ("create_model", "from_pretrained")
                or ".models." in qualified
            ):
                return ModuleCount(0, (f"{label}(...)",))  # a class from elsewhere: unknown size
            return _ZERO  # math.sqrt(d), torch.arange(n): values, not modules
        if tail in _FREE:
            return _ZERO
        if tail in ("Sequential", "ModuleList", "ModuleDict", "ParameterList"):
            return _add(*(self.expr(a, env, lists) for a in node.args))
        try:
            return ModuleCount(_layer(tail, node, self, env), (), self._traced(node))
        except _Unknown:
            return ModuleCount(0, (f"{label}(...) (sizes not traced)",))

    def _imported_function(self, local: str) -> tuple[ModuleCounter, ast.FunctionDef] | None:
        """The function of another project module that ``local`` names here, with that
        module's counter (its imports and constants size what the function builds)."""
        if local not in self._imported:
            from ..workspace.models import project_function

            found = project_function(self.tree, self.path, local)
            if found is None:
                self._imported[local] = None
            else:
                summary, function = found
                other = self._others.get(summary.path)
                if other is None:
                    other = self._others[summary.path] = ModuleCounter(
                        summary.tree, summary.path, module_constants(summary.tree), depth=1
                    )
                self._imported[local] = (other, function)
        return self._imported[local]

    def _helper(
        self,
        owner: ModuleCounter,
        function: ast.FunctionDef,
        node: ast.Call,
        env: dict,
        on_self: bool = False,
    ) -> ModuleCount:
        """A module-level function (of ``owner``'s module: this file's, or another project
        module's) called while a module is built — or, ``on_self``, a method of the module
        being built: what its one ``return`` builds, with its arguments bound
        (``clones(layer, N)`` returning ``nn.ModuleList([copy.deepcopy(module) for _ in
        range(N)])``: N layers). A helper that builds nothing counts nothing; one the
        counter cannot follow is unknown, never zero (it may hold most of the model)."""
        label = f"{'self.' if on_self else ''}{function.name}(...)"
        returns = [
            n
            for n in walk_own_code(function.body)
            if isinstance(n, ast.Return) and n.value is not None
        ]
        key = f"def {function.name}@{function.lineno}"
        if len(returns) != 1 or function.body[-1] is not returns[0] or key in owner._active:
            return ModuleCount(0, (f"{label} (not followed)",))
        try:
            args = [self.value(a, env) for a in node.args]
            kwargs = {k.arg: self.value(k.value, env) for k in node.keywords if k.arg}
        except _Unknown:
            return ModuleCount(0, (f"{label} (arguments not traced)",))
        inner = {**owner.constants, **(_own_state(env) if on_self else {})}
        inner.update(_bind(function.args, args, kwargs, owner, method=on_self))
        lists: dict[str, ModuleCount] = {}
        owner._active.add(key)
        try:
            owner._statements(function.body[:-1], inner, lists, [], times=1)
            return owner.expr(returns[0].value, inner, lists)  # type: ignore[arg-type]
        finally:
            owner._active.discard(key)
            if on_self:
                env.update(_own_state(inner))  # ``self.inplanes = planes * 4`` in the method

    def _traced(self, node: ast.Call) -> bool:
        return any(
            not isinstance(n, ast.Constant)
            for a in [*node.args, *(k.value for k in node.keywords)]
            for n in ast.walk(a)
            if isinstance(n, (ast.Name, ast.Attribute))
        )

    def value(self, node: ast.AST, env: dict) -> Any:
        """A plain value (int, bool, tuple...) or :class:`_Unknown`."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if env.get(node.id, UNTRACED) is not UNTRACED:
                return env[node.id]
            raise _Unknown
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            if env.get("self." + node.attr, UNTRACED) is not UNTRACED:
                return env["self." + node.attr]
            raise _Unknown
        if isinstance(node, ast.Attribute):  # config.n_embd: a config object or dict
            base = self.value(node.value, env)
            if isinstance(base, dict) and node.attr in base:
                return base[node.attr]
            raise _Unknown
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            base = self.value(node.value, env)  # ``chs[1:]``, ``mults[::-1]``
            bounds = [
                None if part is None else self.value(part, env)
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            if (
                not isinstance(base, tuple)
                or not all(
                    b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds
                )
                or bounds[2] == 0
            ):
                raise _Unknown
            return base[slice(*bounds)]
        if isinstance(node, ast.Subscript):  # cfg["emb_dim"]
            base = self.value(node.value, env)
            key = self.value(node.slice, env)
            if isinstance(base, dict) and key in base:
                return base[key]
            if (
                isinstance(base, (tuple, list))
                and isinstance(key, int)
                and -len(base) <= key < len(base)
            ):
                return base[key]  # num_blocks[0]
            raise _Unknown
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.value(e, env) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            inner = self.value(node.operand, env)
            return -inner if isinstance(node.op, ast.USub) else not inner
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left, env), self.value(node.right, env)
            if not all(isinstance(v, (int, float)) for v in (left, right)):
                raise _Unknown
            ops = {
                ast.Add: lambda a, b: a + b,
                ast.Sub: lambda a, b: a - b,
                ast.Mult: lambda a, b: a * b,
                ast.FloorDiv: lambda a, b: a // b,
                ast.Pow: lambda a, b: a**b,
                ast.Div: lambda a, b: a // b if a % b == 0 else a / b,
            }
            if type(node.op) not in ops or (
                isinstance(node.op, (ast.FloorDiv, ast.Div)) and right == 0
            ):
                raise _Unknown
            return ops[type(node.op)](left, right)
        if isinstance(node, ast.IfExp):
            return self.value(node.body if self.value(node.test, env) else node.orelse, env)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left, env), self.value(node.comparators[0], env)
            compare = COMPARISONS.get(type(node.ops[0]))  # ``num_layers > 1``, ``i == 0``
            if compare is not None:
                try:
                    return compare(left, right)
                except TypeError:  # ``None < 1``: not a size
                    raise _Unknown from None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("int", "max", "min", "len")
            and node.func.id not in env
        ):
            values = [self.value(a, env) for a in node.args]
            if node.func.id == "len" and not (len(values) == 1 and isinstance(values[0], tuple)):
                raise _Unknown
            builtin: dict[str, Callable[..., Any]] = {
                "int": lambda *v: int(v[0]),
                "max": max,
                "min": min,
                "len": lambda *v: len(v[0]),  # of a known tuple (a list's value)
            }
            try:
                return builtin[node.func.id](*values)
            except (TypeError, ValueError, IndexError):  # int(None), max(()): not a size
                raise _Unknown from None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _SEQUENCES
            and node.func.id not in env
            and not node.keywords
            and node.args
        ):
            # ``enumerate(channel_mult)``, ``zip(a[:-1], a[1:])``, ``list(...)``: sequences
            # of known sizes, as tuples (what a ``for`` over them takes)
            values = [self.value(a, env) for a in node.args]
            if not all(isinstance(v, tuple) for v in values):
                raise _Unknown
            if node.func.id == "enumerate" and len(values) == 1:
                return tuple(enumerate(values[0]))
            if node.func.id == "zip":
                return tuple(zip(*values, strict=False))
            if node.func.id == "reversed" and len(values) == 1:
                return tuple(reversed(values[0]))
            if node.func.id in ("list", "tuple") and len(values) == 1:
                return values[0]
            raise _Unknown
        raise _Unknown


_SEQUENCES = ("enumerate", "zip", "reversed", "list", "tuple")


def _own_state(env: dict) -> dict:
    """The ``self.x`` values of an environment (what a method shares with ``__init__``)."""
    return {key: value for key, value in env.items() if key.startswith("self.")}


def _is_weight_tie(target: ast.AST, value: ast.AST) -> bool:
    """``a.weight = b.weight`` between two modules of ``self`` (weight tying)."""
    return (
        isinstance(target, ast.Attribute)
        and isinstance(value, ast.Attribute)
        and target.attr == value.attr == "weight"
        and ast.unparse(value.value).startswith("self.")
        and ast.unparse(target.value).startswith("self.")
    )


def _bind(
    args: ast.arguments,
    given: list[Any],
    kwargs: dict[str, Any],
    counter: ModuleCounter,
    method: bool = True,
) -> dict:
    """``__init__``'s parameters (``method``: after ``self``; else a plain function's)
    bound to the call's values, else their literal defaults."""
    names = [a.arg for a in args.posonlyargs + args.args][1 if method else 0 :]
    defaults = {a.arg: d for a, d in parameter_defaults(args)}
    env: dict[str, Any] = dict(zip(names, given))
    for name in names + [a.arg for a in args.kwonlyargs]:
        if name in kwargs:
            env[name] = kwargs[name]
        elif name not in env and name in defaults:
            try:
                env[name] = counter.value(defaults[name], counter.constants)
            except _Unknown:
                pass
    return env


def _forget_assigned(block: ast.stmt, env: dict) -> None:
    """Drop what a block the counter does not follow may rebind (``d_prev = size`` in a
    loop it cannot unroll): a later layer sized by it is then unknown, never sized by the
    value from before the block (a stale size is a wrong count that looks read)."""
    for node in ast.walk(block):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    env.pop(name.id, None)
                elif (
                    isinstance(name, ast.Attribute)
                    and isinstance(name.value, ast.Name)
                    and name.value.id == "self"
                ):
                    env.pop("self." + name.attr, None)


def _bind_loop_target(target: ast.AST, item: Any, env: dict) -> bool:
    """Bind a loop target (a name, or a tuple of names) to ``item``; False when the shapes
    differ."""
    if isinstance(target, ast.Name):
        env[target.id] = item
        return True
    if (
        isinstance(target, ast.Tuple)
        and isinstance(item, (tuple, list))
        and len(item) == len(target.elts)
    ):
        return all(_bind_loop_target(t, value, env) for t, value in zip(target.elts, item))
    return False


def _range(node: ast.AST, env: dict, counter: ModuleCounter) -> tuple[int, ...] | None:
    """The arguments of ``range(...)`` when they can be followed."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and 1 <= len(node.args) <= 3
    ):
        try:
            bounds = tuple(counter.value(a, env) for a in node.args)
        except _Unknown:
            return None
        if all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) and (
            len(bounds) < 3 or bounds[2] != 0
        ):
            return bounds
    return None


def _range_count(node: ast.AST, env: dict, counter: ModuleCounter) -> int | None:
    bounds = _range(node, env, counter)
    return None if bounds is None else len(range(*bounds))


def module_constants(tree: ast.Module) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    return found
