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

Where a name's value comes from — which assignment reaches a use, parameters, dicts
changed in place — is :mod:`.runconfig_names`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from .binding import field_default
from .constants import BINARY_OPERATORS, COMPARISONS, STRING_METHODS, TORCH_DTYPES, string_method
from .constants import UNDECIDED as NOT_FOLDED
from .names import dotted
from .runconfig_names import NamesMixin
from .runconfig_names import Unknown as _Unknown
from .runconfig_paths import UNDECIDED

if TYPE_CHECKING:
    pass

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


class Evaluator(NamesMixin):
    """(value, confidence) of expressions: ``high`` for a literal at the use site,
    ``medium`` for anything followed (a launch can override it)."""

    undecided = UNDECIDED  # what :meth:`decide` answers for a test the defaults leave open

    # what the script declares, indexed by Values.__init__ (runconfig_declarations), besides
    # what NamesMixin follows names through
    path: str
    argv: tuple[str, ...]
    defaults: dict[str, tuple[Any, int]]
    files: dict[str, tuple[dict, str]]
    dataclasses: dict[str, ast.ClassDef]
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
