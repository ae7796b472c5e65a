"""Names a fix needs: reuse the file's own imports, add a missing one once, merged.

A fix that writes ``torch.no_grad()`` must write it the way the file spells torch
(``import torch as th`` → ``th.no_grad()``), and a fix that needs ``DistributedSampler``
must not add a second ``from torch.utils.data import ...`` line next to the one already
there: it adds the name to that line. Only module-level imports count; a new import goes
after the last of them (after the docstring and ``__future__`` imports when there are
none), so it lands where a person would put it.
"""

from __future__ import annotations

import libcst as cst

from .tree import Rewrite, SourceTree, statement_line


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _top_imports(
    tree: SourceTree,
) -> list[tuple[cst.SimpleStatementLine, cst.Import | cst.ImportFrom]]:
    found = []
    for statement in tree.module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    found.append((statement, small))
    return found


def module_alias(tree: SourceTree, module: str) -> str | None:
    """The local name bound to ``module`` by a top-level ``import module [as x]``."""
    for _, node in _top_imports(tree):
        if isinstance(node, cst.Import):
            for alias in node.names:
                if _dotted(alias.name) == module:
                    if alias.asname is not None:
                        return _dotted(alias.asname.name)
                    if "." not in module:
                        return module
    return None


def imported_name(tree: SourceTree, modules: tuple[str, ...], name: str) -> str | None:
    """The local name of ``name`` imported ``from`` one of ``modules``, if any."""
    for _, node in _top_imports(tree):
        if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
            if _dotted(node.module) in modules and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    if _dotted(alias.name) == name:
                        return _dotted(alias.asname.name) if alias.asname else name
    return None


class Imports:
    """The imports one fix adds; at most one statement per module, merged when possible."""

    def __init__(self, tree: SourceTree, rewrite: Rewrite) -> None:
        self.tree = tree
        self.rewrite = rewrite

    def module(self, module: str) -> str:
        """The name to use for ``module`` (``torch``), adding ``import module`` if needed."""
        alias = module_alias(self.tree, module)
        if alias is not None:
            return alias
        self._add(statement_line(f"import {module}"))
        return module

    def name(self, module: str, name: str, *, also_from: tuple[str, ...] = ()) -> str:
        """The name to use for ``module.name``, adding it to an existing ``from module import``
        line, or adding that line, when the file does not import it yet."""
        local = imported_name(self.tree, (module, *also_from), name)
        if local is not None:
            return local
        for _statement, node in _top_imports(self.tree):
            if (
                isinstance(node, cst.ImportFrom)
                and node.module is not None
                and not node.relative
                and _dotted(node.module) == module
                and not isinstance(node.names, cst.ImportStar)
            ):
                self.rewrite.replace(node, lambda updated: _with_alias(updated, name))
                return name
        self._add(statement_line(f"from {module} import {name}"))
        return name

    def _add(self, new: cst.SimpleStatementLine) -> None:
        imports = _top_imports(self.tree)
        if imports:
            self.rewrite.insert_after(imports[-1][0], new)
            return
        body = self.tree.module.body
        index = 0
        while index < len(body) and _is_docstring_or_future(body[index]):
            index += 1
        if index < len(body):
            if index == 0:
                self.rewrite.insert_before(body[0], new)
            else:
                self.rewrite.insert_after(body[index - 1], new)
        elif body:
            self.rewrite.insert_after(body[-1], new)
        else:
            self.rewrite.replace(self.tree.module, lambda module: module.with_changes(body=[new]))


def _with_alias(node: cst.ImportFrom, name: str) -> cst.ImportFrom:
    names = list(node.names)
    last = names[-1]
    if last.comma is cst.MaybeSentinel.DEFAULT or last.comma is None:
        names[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        names.append(cst.ImportAlias(name=cst.Name(name)))
    else:  # a trailing comma (often a parenthesised multi-line import): keep the layout
        if len(names) > 1:
            names[-1] = last.with_changes(comma=names[-2].comma)
        names.append(cst.ImportAlias(name=cst.Name(name), comma=last.comma))
    return node.with_changes(names=names)


def _is_docstring_or_future(statement: cst.BaseStatement) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Expr) and isinstance(
        small.value, (cst.SimpleString, cst.ConcatenatedString)
    ):
        return True
    return (
        isinstance(small, cst.ImportFrom)
        and small.module is not None
        and _dotted(small.module) == "__future__"
    )
