"""Where the value of a name a script reads comes from, for the reader's evaluator.

The assignment that reaches a use on a default launch: the nearest before it in its
function that runs (in file order; augmented assignments, loop variables and ``with``
targets rebind), then the enclosing functions' and the module's; none when the loop
around the use changes it, or another function rebinds it as a ``global``. A parameter is
followed to its call sites, then its default. A dict read through a name is changed by the
``.update(...)`` calls and ``NAME["key"] = ...`` stores between its assignment and the
use. :class:`NamesMixin` is mixed into :class:`~.runconfig_values.Evaluator`, whose
``_try`` / ``_value`` evaluate what it finds.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .runconfig_paths import PathConditions

__all__ = ["NamesMixin", "Unknown"]


class Unknown(Exception):
    """An expression the reader cannot follow."""


_Unknown = Unknown


def _all_args(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


class NamesMixin:
    """Name lookup for the evaluator (see the module docstring)."""

    # what the script declares, indexed by Values.__init__ (runconfig_declarations)
    if TYPE_CHECKING:
        paths: PathConditions
        constants: dict[str, tuple[Any, int]]
        assignments: dict[str, list[tuple[ast.expr | None, ast.stmt]]]
        updates: dict[str, list[ast.Call]]
        item_stores: dict[str, list[ast.Assign]]
        rebound_globally: dict[str, set[int]]

        def _try(self, node: ast.AST) -> tuple[Any, str] | None: ...

        def _value(self, node: ast.AST) -> Any: ...

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
