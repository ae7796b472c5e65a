"""Evaluating a script's expressions to the Python values they hold on a default launch.

The reader's constant evaluator: literals, names followed to the last assignment on the
default path (:mod:`.runconfig_paths`), parameters followed to their call sites,
subscripts of dicts and loaded config files, arithmetic, comparisons, ``sys.argv`` as a
plain launch sees it, environment variables a plain launch leaves unset, config
dataclasses. :class:`Evaluator` is mixed into :class:`~.runconfig_declarations.Values`,
which indexes what the script declares (assignments, flags, classes) for it to follow.

A question evaluates at most :data:`_STEPS` expressions; a value that met no cycle guard
is memoised wherever asked (parameters followed through same-named methods' call sites are
otherwise exponential in large model files).

At 403 lines, past the 400 we aim for, and left so on purpose: this module is the part of
the reader that the fold into the engine (``docs/design/analysis.md``, "The run
configuration and the engine", step 2) replaces with a query over the dataflow's values,
so splitting it now would only move code that is meant to go. The seam, should it grow
first: the ``sys.argv`` / environment handling into a module of its own.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from .binding import field_default
from .constants import BINARY_OPERATORS, COMPARISONS, STRING_METHODS, TORCH_DTYPES, string_method
from .constants import UNDECIDED as NOT_FOLDED
from .names import dotted
from .runconfig_paths import UNDECIDED

if TYPE_CHECKING:
    from .runconfig_paths import PathConditions

__all__ = ["ConfigObject", "Evaluator", "literal"]


class ConfigObject(dict):
    """An instance of a config dataclass the script defines (``GPTConfig(n_layer=12)``):
    its field defaults updated with the call's keywords; attributes read as keys."""


_ENV_GETTERS = ("os.environ.get", "os.getenv", "environ.get", "getenv")


_NUMERIC: dict[str, Any] = {
    "int": int,
    "float": float,
    "round": round,
    "max": max,
    "min": min,
    "abs": abs,
    "bool": bool,
    "str": str,
    "len": len,
}


_HARDWARE = {
    "torch.cuda.is_available": True,
    "cuda.is_available": True,
    "torch.cuda.is_bf16_supported": True,
    "torch.backends.mps.is_available": False,
}


_LITERAL_NODES = (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp)


# Expressions one top-level question may evaluate (the dev set's scripts need at most 72):
# parameters followed to the call sites of same-named methods in a large model file grow
# exponentially (a BERT modelling file: a minute), and past this the answer is "unknown".
_STEPS = 2000


class _Unknown(Exception):
    """An expression the reader cannot follow."""


def literal(node: ast.AST) -> Any:
    """The value of a literal expression (``12``, ``(224, 224)``, ``{"a": 1}``), else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if not isinstance(node, _LITERAL_NODES):
        return None  # a name, call, attribute...: never a literal (and raising costs)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _all_args(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


class Evaluator:
    """(value, confidence) of expressions: ``high`` for a literal at the use site,
    ``medium`` for anything followed (a launch can override it)."""

    undecided = UNDECIDED  # what :meth:`decide` answers for a test the defaults leave open

    # what the script declares, indexed by Values.__init__ (runconfig_declarations)
    path: str
    argv: tuple[str, ...]
    paths: PathConditions
    constants: dict[str, tuple[Any, int]]
    defaults: dict[str, tuple[Any, int]]
    files: dict[str, tuple[dict, str]]
    assignments: dict[str, list[tuple[ast.expr | None, ast.stmt]]]
    dataclasses: dict[str, ast.ClassDef]
    updates: dict[str, list[ast.Call]]
    item_stores: dict[str, list[ast.Assign]]
    rebound_globally: dict[str, set[int]]
    cycles: int
    _steps: int
    _active: set[int]
    _memo: dict[int, tuple[Any, str] | None]

    # -- evaluation ----------------------------------------------------------------------
    def get(self, node: ast.AST | None) -> tuple[Any, str] | None:
        """(value, confidence) of an expression, or ``None`` when it cannot be followed."""
        if node is None:
            return None
        return self._try(node)

    def decide(self, test: ast.expr) -> Any:
        """The value of a branch condition on a default launch, or ``UNDECIDED``."""
        found = self._try(test)
        return UNDECIDED if found is None else found[0]

    def _try(self, node: ast.AST) -> tuple[Any, str] | None:
        written = literal(node)
        if written is not None:
            return written, "high"
        if isinstance(node, ast.Attribute):
            text = dotted(node) or ""
            if text.startswith("torch.") and text.rsplit(".", 1)[-1] in TORCH_DTYPES:
                return "torch." + text.rsplit(".", 1)[-1], "high"  # written in place
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if not self._active:
            self._steps = 0
        self._steps += 1
        if key in self._active or len(self._active) > 40 or self._steps > _STEPS:
            self.cycles += 1  # what is being evaluated now depends on this guess
            return None
        self._active.add(key)
        cycles = self.cycles
        try:
            result: tuple[Any, str] | None = (self._eval(node), "medium")
        except (_Unknown, TypeError, ValueError, ArithmeticError, IndexError, KeyError):
            result = None
        except RecursionError:
            result = None
        finally:
            self._active.discard(key)
        if not self._active or cycles == self.cycles:
            # a value found inside a cycle's guard is final only for the cycle's head; one
            # that met no guard is final anywhere (kept: without it, a parameter followed to
            # the call sites of every same-named method is re-evaluated exponentially often)
            self._memo[key] = result
        return result

    def _value(self, node: ast.AST) -> Any:
        found = self._try(node)
        if found is None:
            raise _Unknown
        return found[0]

    def _eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            base = self._try(node.value)
            key = self._try(node.slice)
            if (
                base is not None
                and key is not None
                and isinstance(base[0], (dict, str, list, tuple))
            ):
                return base[0][key[0]]
            if key is not None and isinstance(key[0], str):
                if (
                    base is None
                    and isinstance(node.value, ast.Name)
                    and node.value.id in self.files
                ):
                    return self.files[node.value.id][0][key[0]]
                if key[0] in self.defaults and base is None:
                    # args["batch_size"]: a dict of the flags, unless the script sets the key
                    return self._stored(key[0], self.defaults[key[0]][0], node)
            raise _Unknown
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self._value(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            result = {}
            for key_node, value_node in zip(node.keys, node.values):
                if key_node is None:
                    inner = self._value(value_node)
                    if not isinstance(inner, dict):
                        raise _Unknown
                    result.update(inner)
                else:
                    result[self._value(key_node)] = self._value(value_node)
            return result
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPERATORS:
            return BINARY_OPERATORS[type(node.op)](self._value(node.left), self._value(node.right))
        if isinstance(node, ast.UnaryOp):
            inner = self._value(node.operand)
            if isinstance(node.op, ast.Not):
                return not inner
            if isinstance(node.op, ast.USub):
                return -inner
            raise _Unknown
        if isinstance(node, ast.BoolOp):
            operands = [self._try(v) for v in node.values]
            deciding = (lambda v: not v) if isinstance(node.op, ast.And) else bool
            for operand in operands:
                if operand is not None and deciding(operand[0]):
                    return operand[0]  # short-circuits whatever the others hold
            known = [o for o in operands if o is not None]
            if len(known) < len(operands):
                raise _Unknown
            return known[-1][0]
        if isinstance(node, ast.Compare):
            left = self._value(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self._value(right_node)
                if type(op) not in COMPARISONS or not COMPARISONS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self._value(node.body if self._value(node.test) else node.orelse)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _Unknown

    def _name(self, node: ast.Name) -> Any:
        """The last assignment before ``node`` in its function that runs by default, then
        in the enclosing functions (closures) and the module; a parameter is followed to
        its call sites. ``NAME.update(other)`` calls in between are applied to a dict."""
        if node.id == "__name__":
            return "__main__"  # the script is what runs
        for scope, reaching in self._scopes(node):
            if self._changes_per_iteration(node, scope):
                raise _Unknown  # a value that changes from one iteration to the next
            if scope is None and self._rebound_by_another_function(node):
                raise _Unknown
            for value, stmt in reaching:
                state = self.paths.state(stmt)
                if not state.runs:
                    continue
                if state == "unsure" or value is None:
                    raise _Unknown  # assigned under a condition nobody can decide, or rebound
                found = self._try(value)
                if found is not None:
                    return self._updated(node.id, found[0], stmt, node, scope)
            if scope is not None and any(a.arg == node.id for a in _all_args(scope.args)):  # type: ignore[attr-defined]
                return self._parameter(scope, node.id)  # type: ignore[arg-type]
        if node.id in self.constants:
            return self.constants[node.id][0]
        raise _Unknown

    def assigned(self, node: ast.Name) -> ast.expr | None:
        """The expression the nearest assignment that runs by default binds to ``node``'s
        name, looked up as :meth:`_name` looks (``config = GPT2Config(...)`` for
        ``Model(config)``); None when there is none, or it runs under a condition nobody can
        decide."""
        for _scope, reaching in self._scopes(node):
            for value, stmt in reaching:
                state = self.paths.state(stmt)
                if state.runs:
                    return None if state == "unsure" else value
        return None

    def _changes_per_iteration(self, node: ast.Name, scope: ast.AST | None) -> bool:
        """Whether the value ``node`` reads changes from one iteration of a loop around it
        to the next: its name is bound again after ``node`` inside the loop (``if step %
        100 == 0: ...`` then ``step = step + 1``), or augmented anywhere in it
        (``step += 1``). No single value is then the job's."""
        loops = self.paths.loops_around(node)
        if not loops:
            return False
        for _value, stmt in self.assignments.get(node.id, ()):
            if self.paths.enclosing_function(stmt) is not scope:
                continue
            if stmt.lineno <= node.lineno and not isinstance(stmt, ast.AugAssign):
                continue
            if any(loop.lineno <= stmt.lineno <= (loop.end_lineno or 0) for loop in loops):
                return True
        return False

    def _rebound_by_another_function(self, node: ast.Name) -> bool:
        """Whether a function other than the one reading ``node`` declares its name
        ``global`` (llm.c's ``FLASH = 0`` at the top, ``global FLASH; FLASH = args.flash``
        in ``main``): which value a function reads depends on when it runs, so the module's
        own is not the job's. A read at module level keeps the module's value."""
        rebinding = self.rebound_globally.get(node.id)
        if not rebinding:
            return False
        reader = self.paths.enclosing_function(node)
        return reader is not None and bool(rebinding - {id(reader)})

    def _scopes(self, node: ast.Name):
        """Each scope a name read at ``node`` is looked up in — its function, the enclosing
        ones, the module — with the assignments there that may reach ``node``, nearest
        first: only those before it, except the module's seen from a function (which runs
        after the module's top level has, as far as a script goes) or from a file the
        script executes (its lines are its own; what it assigns sits at the ``exec``)."""
        candidates = self.assignments.get(node.id, [])
        own = scope = self.paths.enclosing_function(node)
        elsewhere = own is not None or self.paths.parent(node) is None
        while True:
            local = [
                (v, s)
                for v, s in candidates
                if self.paths.enclosing_function(s) is scope
                and ((scope is None and elsewhere) or s.lineno <= node.lineno)
            ]
            yield scope, local[::-1]
            if scope is None:
                return
            scope = self.paths.enclosing_function(scope)

    def _stored(self, key: str, default: Any, use: ast.AST) -> Any:
        """A flag's default read through a dict of the flags nobody could follow, unless the
        script sets that key itself (``args["lora_target_modules"] = [...]`` for the
        default ``"all"``): the store a plain launch runs, if one does and it is the only
        one; unknown when stores disagree or run under a condition nobody decides. A store
        later in the reading function has not happened yet (``if args[k] == "all":
        args[k] = [...]`` reads the default); one in another function is set-up that ran
        before (the worker the flags are handed to)."""
        reader = self.paths.enclosing_function(use)
        line = getattr(use, "lineno", 0)
        stores = [
            s
            for s in self.item_stores.get(key, ())
            if (self.paths.enclosing_function(s) is not reader or s.lineno < line)
            and self.paths.state(s).runs
        ]
        if not stores:
            return default
        if len(stores) > 1 or self.paths.state(stores[0]) != "default":
            raise _Unknown
        found = self._try(stores[0].value)
        if found is None:
            raise _Unknown
        return found[0]

    def _updated(self, name: str, value: Any, stmt: ast.stmt, use: ast.AST, scope) -> Any:
        if not isinstance(value, dict):
            return value
        value = self._stores_applied(name, value, stmt, use, scope)
        if name not in self.updates:
            return value
        value = dict(value)
        for call in self.updates[name]:
            if (
                stmt.lineno < call.lineno <= getattr(use, "lineno", 0)
                and self.paths.enclosing_function(call) is scope
                and self.paths.state(call).runs
            ):
                extra = self._try(call.args[0])
                if extra is None or not isinstance(extra[0], dict):
                    raise _Unknown  # updated with something unknown: the keys are not knowable
                value.update(extra[0])
        return value

    def _stores_applied(self, name: str, value: dict, stmt: ast.stmt, use: ast.AST, scope) -> dict:
        """``value`` (``name``'s dict as ``stmt`` built it) with the ``name["key"] = ...``
        stores between ``stmt`` and ``use`` in the same function applied: a store under a
        condition nobody decides, or of a value not followed, makes its key unknown."""
        changed: dict | None = None
        for key in value:
            for store in self.item_stores.get(key, ()) if isinstance(key, str) else ():
                target = store.targets[0]
                if not (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == name
                    and stmt.lineno < store.lineno <= getattr(use, "lineno", 0)
                    and self.paths.enclosing_function(store) is scope
                ):
                    continue
                state = self.paths.state(store)
                if not state.runs:
                    continue
                changed = dict(value) if changed is None else changed
                found = self._try(store.value) if state == "default" else None
                if found is None:
                    changed.pop(key, None)  # set to something unknown: the key is unknown
                else:
                    changed[key] = found[0]
        return value if changed is None else changed

    def _parameter(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> Any:
        """A parameter: the argument of the first call site that runs, else its default."""
        args = function.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        for call in self.paths.calls_by_name.get(function.name, ()):
            if not (
                (isinstance(call.func, ast.Name) and call.func.id == function.name)
                or (isinstance(call.func, ast.Attribute) and call.func.attr == function.name)
            ):
                continue  # passed as a callback: its arguments are not visible here
            if not self.paths.state(call).runs:
                continue
            names = positional
            if names and names[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
                names = names[1:]
            keyword = next((k.value for k in call.keywords if k.arg == name), None)
            argument = keyword
            if argument is None and name in names:
                index = names.index(name)
                if index < len(call.args) and not any(
                    isinstance(a, ast.Starred) for a in call.args[: index + 1]
                ):
                    argument = call.args[index]
            if argument is not None:
                found = self._try(argument)
                if found is not None:
                    return found[0]
        all_positional = args.posonlyargs + args.args
        defaults = dict(
            zip(
                [a.arg for a in all_positional[len(all_positional) - len(args.defaults) :]],
                args.defaults,
            )
        )
        defaults.update(
            {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        )
        if name in defaults:
            return self._value(defaults[name])
        raise _Unknown

    def _attribute(self, node: ast.Attribute) -> Any:
        text = dotted(node) or ""
        if text == "sys.argv":
            return (self.path, *self.argv)  # what the launch passes (plain: nothing)
        if text.startswith("torch.") and text.rsplit(".", 1)[-1] in TORCH_DTYPES:
            return "torch." + text.rsplit(".", 1)[-1]
        base = self._try(node.value)
        if base is not None and isinstance(base[0], dict):
            return base[0][node.attr]
        if node.attr in self.defaults:
            return self.defaults[node.attr][0]
        raise _Unknown

    def _call(self, node: ast.Call) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in STRING_METHODS and not node.keywords:
            found = string_method(
                self._value(func.value), func.attr, [self._value(a) for a in node.args]
            )
            if found is NOT_FOLDED:
                raise _Unknown
            return found
        name = dotted(node.func) or ""
        if name in _NUMERIC and not node.keywords:
            return _NUMERIC[name](*(self._value(a) for a in node.args))
        if name in _HARDWARE:  # the job runs on a CUDA GPU (sm80+): what the estimate is for
            return _HARDWARE[name]
        if name.endswith(_ENV_GETTERS):
            # a plain ``python SCRIPT`` launch sets no distributed variables: the default
            if len(node.args) >= 2:
                return self._value(node.args[1])
            if len(node.args) == 1:
                return None
            raise _Unknown
        if name == "dict" and not node.args:
            return {k.arg: self._value(k.value) for k in node.keywords if k.arg}
        if name in self.dataclasses:
            result = ConfigObject()
            for stmt in self.dataclasses[name].body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    default = field_default(stmt.value) if stmt.value is not None else None
                    found = self._try(default) if default is not None else None
                    if found is not None:
                        result[stmt.target.id] = found[0]
            for keyword in node.keywords:
                if keyword.arg is None:
                    extra = self._value(keyword.value)
                    if not isinstance(extra, dict):
                        raise _Unknown
                    result.update(extra)
                else:
                    result[keyword.arg] = self._value(keyword.value)
            return result
        raise _Unknown
