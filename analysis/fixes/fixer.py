"""What a fixer is, and how fixers are found.

A fixer is one small class in one module of this package, named after the rule it
fixes (``retained_graph.py`` fixes TW001): its ``code`` and a :meth:`Fixer.build` that
returns the fixes of one finding. It is discovered by walking the package, like rules,
so a later rule becomes fixable by adding a module here — nothing else changes.

A fixer reads the finding (its span, its evidence spans) and the file's
:class:`~.tree.SourceTree`, never the analysis facts: fixes are built on demand, long
after the analysis that produced the finding (in another process, from the cache, in
the language server from a diagnostic's ``data``). When the code at the span is not the
shape the fixer knows, it returns no fix rather than a guess.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache
from typing import ClassVar

from ..finding import Applicability, Finding, Fix
from .tree import Rewrite, SourceTree


class Fixer:
    code: ClassVar[str]

    def build(self, tree: SourceTree, finding: Finding) -> Iterable[Fix]:
        raise NotImplementedError  # every concrete fixer overrides this

    @staticmethod
    def fix(title: str, applicability: Applicability, rewrite: Rewrite) -> Fix | None:
        """The fix that turns the tree's text into ``rewrite``'s, as minimal edits."""
        if rewrite.is_empty:
            return None
        edits = rewrite.edits()
        return Fix(title, applicability, edits) if edits else None


@cache
def all_fixers() -> dict[str, Fixer]:
    """One fixer per rule code, found by walking this package."""
    from . import __name__ as package_name
    from . import __path__ as package_path

    found: dict[str, Fixer] = {}
    for info in pkgutil.iter_modules(package_path):
        module = importlib.import_module(f"{package_name}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Fixer)
                and value is not Fixer
                and value.__module__ == module.__name__
                and hasattr(value, "code")
            ):
                if value.code in found:
                    raise RuntimeError(f"two fixers for {value.code}")
                found[value.code] = value()
    return found
