"""What a fixer is, and how fixers are found.

A fixer is one small class in one module of this package, named after the rule it
fixes (``retained_graph.py`` fixes TW001): its ``code`` and a :meth:`Fixer.build` that
returns the fixes of one finding. It is discovered by walking the package, like rules,
so a later rule becomes fixable by adding a module here — nothing else changes.

Fixes are built on demand, long after the analysis that produced the finding (in another
process, from the cache, in the language server from a diagnostic's ``data``), so a fixer
never asks the analysis. Two kinds:

- a :class:`PayloadFixer` reads the typed facts its rule attached to the finding (a
  :class:`~torchward.analysis.finding.Payload`: ranges, names, proven facts) and writes
  its edits straight onto the text's lines: no LibCST parse, no lookup by name, a cost
  in proportion to the edit. The rule decided the fix's shape; no payload, no fix.
- a tree :class:`Fixer` finds its nodes by the finding's spans in the file's
  :class:`~.tree.SourceTree` (one LibCST parse per file content, shared by every finding
  of the file). When the code at the span is not the shape the fixer knows, it returns
  no fix rather than a guess.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache
from typing import ClassVar

from ..finding import Applicability, Finding, Fix
from .edits import SourceLines
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


class PayloadFixer(Fixer):
    """A fixer that writes its edits from the finding's payload onto the text's lines."""

    def build(self, tree: SourceTree, finding: Finding) -> Iterable[Fix]:
        return self.build_from_payload(SourceLines.of(tree.source), finding)

    def build_from_payload(self, lines: SourceLines, finding: Finding) -> Iterable[Fix]:
        raise NotImplementedError  # every concrete payload fixer overrides this


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
