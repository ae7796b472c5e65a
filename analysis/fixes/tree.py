"""The lossless tree a fix is built on: LibCST, parsed lazily, cached by content hash.

Linting runs on ``ast`` and never pays for LibCST (it costs 5-15x ``ast.parse``, see
ARCHITECTURE.md). A fix is built only when one is asked for — ``--fix``, ``--diff``, a
JSON or SARIF report, an editor's quick fix — and then for that one file: the tree is
parsed once per content (:func:`source_tree`, an LRU keyed by a hash of the text), so
building the fixes of ten findings in one file parses it once.

A fixer finds its nodes by the finding's spans. LibCST positions use the same
convention as findings (1-based lines, 0-based code-point columns, a tab is one column),
so a span and a node's range compare directly.

A fixer never edits text. It records node replacements and statement insertions on a
:class:`Rewrite`; :meth:`Rewrite.edits` regenerates the top-level statements it touched,
and :mod:`.edits` turns the difference into minimal text edits. Regenerating from the
tree is what keeps comments, odd indentation, tabs and CRLF line endings intact, and what
re-indents a block that a fix wraps.

Every cost of one fix is in proportion to the code it touches, not to the file: a
report of a 4,000-line file with hundreds of findings builds hundreds of fixes, and
transforming and regenerating the whole module for each (what this did first) took
minutes. The module's text is the concatenation of its header, its top-level
statements' code and its footer, so a rewrite transforms only the top-level statements
holding the nodes it changes and diffs their regenerated code against their own text.
Lookups by span go through an index of the nodes by the line they start on.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import cached_property, lru_cache
from typing import TypeVar

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ..finding import Edit, Span
from .edits import Offsets, edits_between

N = TypeVar("N", bound=cst.CSTNode)
LOOPS = (cst.For, cst.While)


def span_of(code_range: CodeRange) -> Span:
    return Span(
        code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column
    )


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def parents_of(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    """Every node's parent: the map LibCST's ``ParentNodeProvider`` resolves, eight times
    faster. A node's children are the nodes in its dataclass fields (alone or in a
    sequence); the provider finds them with a visitor dispatching every node through its
    generic machinery, which was 40% of building the tree of a large file."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        names = _CHILD_FIELDS.get(type(node))
        if names is None:
            names = _CHILD_FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
        for name in names:
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                parents[value] = node
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, cst.CSTNode):
                        parents[item] = node
                        stack.append(item)
    return parents


class SourceTree:
    """One parsed file: its module, every node's span and parent, lookups by span."""

    def __init__(self, source: str) -> None:
        self.source = source
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        self.module = wrapper.module
        self.spans: dict[cst.CSTNode, Span] = {
            node: span_of(code_range)
            for node, code_range in wrapper.resolve(PositionProvider).items()
        }
        self.parents = parents_of(self.module)
        self._by_span: dict[Span, list[cst.CSTNode]] = defaultdict(list)
        for node, span in self.spans.items():
            self._by_span[span].append(node)

    def at(self, span: Span, kind: type[N] | tuple[type, ...]) -> N | None:
        """The node of ``kind`` whose range is exactly ``span`` (the outermost, if nested)."""
        found = [node for node in self._by_span.get(span, ()) if isinstance(node, kind)]
        found.sort(key=lambda node: len(list(self.ancestors(node))))
        return found[0] if found else None

    @cached_property
    def _starting_on(self) -> dict[int, list[cst.CSTNode]]:
        """The nodes by the line they start on, each line's in :attr:`spans` order."""
        lines: dict[int, list[cst.CSTNode]] = defaultdict(list)
        for node, span in self.spans.items():
            lines[span.line].append(node)
        return lines

    @cached_property
    def _order(self) -> dict[cst.CSTNode, int]:
        return {node: index for index, node in enumerate(self.spans)}

    def within(self, span: Span, kind: type[N]) -> Iterator[N]:
        """Every node of ``kind`` inside ``span``, in :attr:`spans` order."""
        found = [
            node
            for line in range(span.line, span.end_line + 1)
            for node in self._starting_on.get(line, ())
            if isinstance(node, kind) and span.contains(self.spans[node])
        ]
        found.sort(key=self._order.__getitem__)
        yield from found

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def enclosing(self, node: cst.CSTNode, kind: type[N] | tuple[type, ...]) -> N | None:
        return next((a for a in self.ancestors(node) if isinstance(a, kind)), None)

    def statement(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The whole statement (a line of simple statements, or a compound one) holding ``node``."""
        if isinstance(node, cst.BaseStatement):
            return node
        return self.enclosing(node, cst.BaseStatement)

    def starting_at(self, line: int, column: int, kind: type[N]) -> Iterator[N]:
        """The nodes of ``kind`` that start at ``line``, ``column``, in :attr:`spans` order."""
        for node in self._starting_on.get(line, ()):
            if isinstance(node, kind) and self.spans[node].column == column:
                yield node

    def innermost_statement_at(self, span: Span) -> cst.BaseStatement | None:
        """The smallest statement whose range contains ``span``.

        Statements that contain one span are nested, so the innermost starts last: the
        lines are searched upwards from the span's first line, and the search stops at
        the first line where a statement contains it."""
        for line in range(span.line, 0, -1):
            best = None
            for node in self._starting_on.get(line, ()):
                if isinstance(node, cst.BaseStatement) and self.spans[node].contains(span):
                    if best is None or self.spans[best].contains(self.spans[node]):
                        best = node
            if best is not None:
                return best
        return None

    def loops_around(self, span: Span) -> list[cst.For | cst.While]:
        """Loops whose body contains ``span``, innermost first (loops are statements: all
        that contain the span enclose its innermost statement)."""
        innermost = self.innermost_statement_at(span)
        if innermost is None:
            return []
        loops = [
            node
            for node in (innermost, *self.ancestors(innermost))
            if isinstance(node, LOOPS) and self.spans[node.body].contains(span)
        ]
        loops.sort(key=lambda node: len(list(self.ancestors(node))), reverse=True)
        return loops

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | cst.Module:
        return self.enclosing(node, cst.FunctionDef) or self.module

    def text(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def offsets(self) -> Offsets:
        return Offsets(self.source)

    @cached_property
    def top_level(self) -> dict[cst.CSTNode, tuple[int, int]] | None:
        """Each top-level statement's range of characters in :attr:`source` (its leading
        blank lines and comments included); None when the module's pieces do not add up
        to the source (a rewrite then regenerates the whole module)."""
        module = self.module
        offset = sum(len(module.code_for_node(line)) for line in module.header)
        ranges: dict[cst.CSTNode, tuple[int, int]] = {}
        for statement in module.body:
            end = offset + len(module.code_for_node(statement))
            ranges[statement] = (offset, end)
            offset = end
        footer = "".join(module.code_for_node(line) for line in module.footer)
        if self.source[offset:] != footer or not self.source.endswith(("\n", "\r")):
            return None  # also: no final newline (the module's code drops the last one)
        return ranges

    def top_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The top-level statement holding ``node`` (None for the module and its header)."""
        top_level = self.top_level or {}
        for candidate in (node, *self.ancestors(node)):
            if candidate in top_level:
                return candidate
        return None


@lru_cache(maxsize=16)
def _cached(digest: str, source: str) -> SourceTree:
    return SourceTree(source)


_latest: tuple[str, SourceTree] | None = None  # the text asked for last, and its tree


def source_tree(source: str) -> SourceTree:
    """The tree of ``source``, parsed once per content; raises ``libcst.ParserSyntaxError``.

    The fixes of one file's findings ask for the same text object once per finding:
    that object is recognised without hashing it again (hashing the whole text per
    finding made a report cost findings × file size)."""
    global _latest
    latest = _latest
    if latest is not None and latest[0] is source:
        return latest[1]
    digest = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    tree = _cached(digest, source)
    _latest = (source, tree)
    return tree


class Rewrite(cst.CSTTransformer):
    """Replacements and insertions on one tree, applied in a single pass.

    A replacement is a function of the node *as rebuilt* (its children already
    rewritten), so a fix that wraps a statement and another that edits inside it compose.
    """

    def __init__(self, tree: SourceTree) -> None:
        super().__init__()
        self.tree = tree
        self._replace: dict[cst.CSTNode, list[Callable[[cst.CSTNode], cst.CSTNode]]] = defaultdict(
            list
        )
        self._before: dict[cst.CSTNode, list[cst.BaseStatement]] = defaultdict(list)
        self._after: dict[cst.CSTNode, list[cst.BaseStatement]] = defaultdict(list)

    def replace(
        self, node: cst.CSTNode, change: Callable[[cst.CSTNode], cst.CSTNode] | cst.CSTNode
    ) -> None:
        self._replace[node].append(change if callable(change) else (lambda _old, new=change: new))

    def insert_before(self, statement: cst.BaseStatement, new: cst.BaseStatement) -> None:
        self._before[statement].append(new)

    def insert_after(self, statement: cst.BaseStatement, new: cst.BaseStatement) -> None:
        self._after[statement].append(new)

    @property
    def is_empty(self) -> bool:
        return not (self._replace or self._before or self._after)

    def on_leave(self, original, updated):
        for change in self._replace.get(original, ()):
            updated = change(updated)
        before, after = self._before.get(original), self._after.get(original)
        if before or after:  # a comment above a statement stays with it, below the insertion
            return cst.FlattenSentinel([*(before or ()), updated, *(after or ())])
        return updated

    def code(self) -> str:
        """The whole module's code after the rewrite."""
        return self.tree.module.visit(self).code

    def edits(self) -> tuple[Edit, ...]:
        """The minimal text edits of the rewrite, regenerating only the top-level
        statements it touches (the whole module when one of its nodes is not in one)."""
        tree = self.tree
        touched = [*self._replace, *self._before, *self._after]
        tops = [tree.top_statement(node) for node in touched]
        if not touched or tree.top_level is None or None in tops:
            return edits_between(tree.source, self.code())
        ranges = tree.top_level
        edits: list[Edit] = []
        for top in sorted(set(tops), key=lambda node: ranges[node]):  # type: ignore[index]
            start, end = ranges[top]  # type: ignore[index]
            rewritten = top.visit(self)  # type: ignore[union-attr]
            nodes = (
                rewritten.nodes
                if isinstance(rewritten, cst.FlattenSentinel)
                else ()
                if isinstance(rewritten, cst.RemovalSentinel)
                else (rewritten,)
            )
            code = "".join(tree.module.code_for_node(node) for node in nodes)
            first_line = tree.offsets.position(start)[0]  # a statement starts a line
            edits.extend(
                _moved_down(edit, first_line - 1)
                for edit in edits_between(tree.source[start:end], code)
            )
        return tuple(edits)


def _moved_down(edit: Edit, lines: int) -> Edit:
    span = edit.span
    return Edit(
        Span(span.line + lines, span.column, span.end_line + lines, span.end_column), edit.text
    )


def statement_line(code: str) -> cst.SimpleStatementLine:
    """One simple statement parsed from ``code`` (no newline), ready to insert."""
    return cst.parse_statement(code)  # type: ignore[return-value]


def expression(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def is_atomic(node: cst.BaseExpression) -> bool:
    """Whether ``node.attr`` can be written without parentheses."""
    return isinstance(
        node,
        (
            cst.Name,
            cst.Attribute,
            cst.Call,
            cst.Subscript,
            cst.SimpleString,
            cst.ConcatenatedString,
            cst.List,
            cst.Tuple,
            cst.Dict,
        ),
    ) or bool(node.lpar)


def parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    return (
        node
        if is_atomic(node)
        else node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    )
