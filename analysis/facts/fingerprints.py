"""Cache keys of function analyses: everything one analysis reads, as hashable parts.

A :class:`~torchward.analysis.facts.summaries.SummaryCache` entry is reused only when the key
of the new call equals the key it was stored under, so the key must name everything the
analysis reads: the function's text and place, its arguments (the memo key), the shape
of the module (imports, local functions and classes), the module globals and the scope
a nested function closes over.

The scopes are what made keys expensive: a top-level ``def`` closes over the module's
environment, which holds a value for every top-level function, so hashing it for each of
a file's functions is quadratic in the file (at 20,000 lines, a third of a keystroke's
time). :class:`Fingerprints` hashes each module-level environment once while it cannot
change:

- only the module body's own statements change a module-level environment (a function
  runs in an environment of its own; what a call does to the caller's variables is
  applied by the caller after the call returns), so while a function is being analysed —
  the analyzer's call stack is not empty — the module's environments are frozen, and a
  fingerprint taken then stays right until the stack is empty again;
- after the module body ran, they never change again.

A fingerprint taken at the top level while the module body still runs is not kept: the
next top-level statement may change the environment. An environment a function's own
run closes over (a nested ``def``) may change at any time and is hashed every time (it
is the size of one function, not of the file).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .analyzer import FileAnalyzer
    from .semantic import FunctionInfo
    from .values import Value

Env = dict[str, "Value"]


class Fingerprints:
    """The cache-key parts of one :class:`~torchward.analysis.facts.analyzer.FileAnalyzer`."""

    def __init__(self, analyzer: FileAnalyzer) -> None:
        self._analyzer = analyzer
        self._texts: dict[str, str] = {}
        # environments only the module body changes, by id (the dict is kept: ids of
        # live objects are unique)
        self._module_level: dict[int, Env] = {}
        # id -> (environment, fingerprint) for the module-level environments hashed
        # while they could not change
        self._frozen: dict[int, tuple[Env, int]] = {}

    def note_scope(self, env: Env) -> None:
        """A ``def`` ran, closing over ``env``; the module body's own defs close over a
        module-level environment."""
        if self._at_module_level() and not self._analyzer.module_done:
            self._module_level[id(env)] = env

    def key(self, info: FunctionInfo, memo_key: tuple) -> tuple:
        """Everything a function analysis reads: its text and place, its arguments, the
        module globals and its enclosing scope (calls are checked on replay)."""
        analyzer = self._analyzer
        text = self._texts.get(info.qualname)
        if text is None:
            text = self._texts[info.qualname] = analyzer.index.text_of(info.node)
        if self._at_module_level() and not analyzer.module_done:
            self._frozen.clear()  # the module body may have changed its environments
        closure = analyzer.closures.get(info.qualname)
        return (
            analyzer.path,
            info.node.lineno,
            info.node.col_offset,
            text,
            memo_key,
            self.shape,
            self.env(analyzer.globals(), module_level=True),
            self.env(closure) if closure is not None else 0,
        )

    def env(self, env: Env, module_level: bool = False) -> int:
        """The fingerprint of one environment: from the memo while it is frozen."""
        module_level = module_level or id(env) in self._module_level
        if not module_level:
            return hash(frozenset(env.items()))
        if not env:
            return 0
        known = self._frozen.get(id(env))
        if known is not None and known[0] is env:
            return known[1]
        fingerprint = hash(frozenset(env.items()))
        if self._analyzer.module_done or not self._at_module_level():
            self._frozen[id(env)] = (env, fingerprint)
        return fingerprint

    @functools.cached_property
    def shape(self) -> int:
        """What every function reads besides its own text: imports, which names are
        local functions and classes (with their bases and methods), and the text of every
        project module the file imports (their functions are analysed at its calls)."""
        analyzer = self._analyzer
        index = analyzer.index
        classes = tuple(
            sorted(
                (name, c.base_names, c.local_bases, tuple(c.methods))
                for name, c in index.classes.items()
            )
        )
        project = getattr(analyzer, "project", None)  # the modules it imports (workspace linking)
        project_text = project.fingerprint() if project is not None else ""
        return hash(
            (
                frozenset(index.imports.names.items()),
                tuple(sorted(index.functions)),
                classes,
                project_text,
            )
        )

    def _at_module_level(self) -> bool:
        """No function analysis is in progress: the module body (or nothing) runs."""
        return not self._analyzer.call_depth
