"""Where a file's statements stand, for the launch on demand (:mod:`.launch_demand`).

Each statement's block, its place in it and the block's owner; an expression's statement,
found by its position (a walk of every expression cost more than the questions it served);
a name's calls, found in the text (``name(``) and then in the statements on those lines;
what each statement binds or changes in place; a function's parameters, read once; which
functions declare a name ``global``; where a block may raise or return. Indexed once per
file, statements only.

Past 400 lines (474) and left whole: the index and the syntax helpers below it (which
statements a statement holds, what it binds) are one concept — a split would put the
helpers in a module with nothing else to use them.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..facts.binding import Parameters
from ..facts.launch_bindings import _MUTATING
from ..syntax.names import dotted

if TYPE_CHECKING:
    from ..facts.analyzer import FileAnalyzer
    from ..facts.semantic import FunctionInfo

__all__ = [
    "FUNCTIONS",
    "LOOPS",
    "WITHS",
    "Places",
    "header_names",
    "own_statements",
]

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
WITHS = (ast.With, ast.AsyncWith)
_GLOBAL = re.compile(r"\bglobal\s")
#: a source this long has its calls indexed in one pass (below it a ``str.find`` per name
#: asked is cheaper: a development script asks some 60 names of a 60 KB text)
_INDEXED_SOURCE = 200_000
_CALLED = re.compile(r"(?<!\w)([^\W\d]\w*)[ \t]*\(")  # what :func:`_called_at` finds, all at once
_NONE: list[int] = []  # no statement of a block binds the name (shared: never changed)


class Places:
    """The statement index of one file (see the module docstring)."""

    def __init__(self, analyzer: FileAnalyzer) -> None:
        self.analyzer = analyzer
        self.tree = analyzer.tree
        # statement id -> (its block, its place in it, the block's owner)
        self.places: dict[int, tuple[list[ast.stmt], int, ast.AST | None]] = {}
        self._foreign: dict[int, ast.stmt] = {}  # expressions of an executed file's lines
        self._calls: dict[str, list[tuple[ast.Call, ast.stmt]]] = {}
        self._call_index: dict[str, list[int]] | None = None  # a large source's ``name(``
        self._line_starts: list[int] = []
        self._bound: dict[int, frozenset[str]] = {}
        self._stopping: dict[int, list[int]] = {}  # block id -> where a raise or return may be
        self._globals: dict[str, set[int]] | None = None  # name -> functions declaring it
        self._may_stop: dict[int, bool] = {}
        self._parameters: dict[int, Parameters] = {}
        # block id -> name -> where in the block a statement binds or changes it
        self._binding_indices: dict[int, dict[str, list[int]]] = {}
        self._index()

    def binding_indices(self, name: str, block: list[ast.stmt]) -> list[int]:
        """The places in ``block`` of the statements that bind or change ``name``: every
        name's places indexed in one pass over the block, when it is first asked about."""
        by_name = self._binding_indices.get(id(block))
        if by_name is None:
            by_name = self._binding_indices[id(block)] = {}
            for index, statement in enumerate(block):
                for bound in self.bound_names(statement):
                    by_name.setdefault(bound, []).append(index)
        return by_name.get(name, _NONE)

    def parameters(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> Parameters:
        """``function``'s parameters, read once (a worker's entry point may have a hundred,
        and every read of one asked for them all)."""
        known = self._parameters.get(id(function))
        if known is None:
            known = self._parameters[id(function)] = Parameters.of(function.args)
        return known

    def may_stop(self, statement: ast.stmt) -> bool:
        """Whether a ``raise`` or ``return`` stands in ``statement``'s blocks
        (:func:`_may_stop`)."""
        known = self._may_stop.get(id(statement))
        if known is None:
            known = self._may_stop[id(statement)] = _may_stop(statement)
        return known

    def _index(self) -> None:
        """Where each statement stands: its block, its place there and the block's owner
        (the module's statements: none). Statements only — a walk of every expression
        cost more than answering the questions; an expression's statement is found by
        its position (:meth:`_statement_of`)."""
        places = self.places
        pending: list[tuple[list[ast.stmt], ast.AST | None]] = [(self.tree.body, None)]
        while pending:
            block, owner = pending.pop()
            for index, statement in enumerate(block):
                places[id(statement)] = (block, index, owner)
                for inner in _blocks(statement, self.included(statement)):
                    pending.append((inner, statement))
        driver = self.analyzer.launch_driver
        for included in driver.inputs.included.values() if driver is not None else ():
            for statement in included:  # lines of another file: found by identity
                for held in own_statements([statement]):
                    for node in _own_expressions(held):
                        self._foreign[id(node)] = held

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        """The innermost statement holding ``node``: descended to by position."""
        if id(node) in self.places:
            return node  # type: ignore[return-value]
        if id(node) in self._foreign:
            return self._foreign[id(node)]
        position = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        found: ast.stmt | None = None
        block: list[ast.stmt] | None = self.tree.body
        while block:
            holder = _holding(block, position)
            if holder is None:
                break
            found, block = holder, None
            for inner in _blocks(holder, None):
                if inner and _start(inner[0]) <= position <= _end(inner[-1]):
                    block = inner
                    break
        return found

    def calls_named(self, name: str) -> list[tuple[ast.Call, ast.stmt]]:
        """The calls ``name(...)`` / ``x.name(...)`` in the file, with their statements:
        found in the source's text, then in the statements on those lines."""
        known = self._calls.get(name)
        if known is not None:
            return known
        found: list[tuple[ast.Call, ast.stmt]] = []
        seen: set[int] = set()
        for offset in self._called_at(name):
            line = bisect.bisect_right(self.line_starts(), offset)
            for statement in self.statements_on(line):
                if id(statement) in seen:
                    continue
                seen.add(id(statement))
                for node in _own_expressions(statement):
                    if isinstance(node, ast.Call) and (
                        (isinstance(node.func, ast.Name) and node.func.id == name)
                        or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
                    ):
                        found.append((node, statement))
        self._calls[name] = found
        return found

    def _called_at(self, name: str) -> list[int] | Iterator[int]:
        """Where ``name(`` stands in the source: ``str.find`` per name, or — in a source
        past :data:`_INDEXED_SOURCE` characters — every call's name indexed in one pass (a
        find per name scans the whole text each time: on a 50,000-line script the finds
        took a second, the pass 40 ms)."""
        source = self.analyzer.source
        if len(source) <= _INDEXED_SOURCE:
            return _called_at(source, name)
        if self._call_index is None:
            self._call_index = {}
            for match in _CALLED.finditer(source):
                self._call_index.setdefault(match.group(1), []).append(match.start())
        return self._call_index.get(name, [])

    def statements_on(self, line: int) -> list[ast.stmt]:
        """The innermost statements whose own lines hold ``line`` (several when written
        on one line with ``;``)."""
        statement: ast.stmt | None = None
        block: list[ast.stmt] | None = self.tree.body
        while block:  # descend by line: the statement starting last at or before it
            holder = _holding(block, (line, 10**6), by_line=True)
            if holder is None:
                break
            statement, block = holder, None
            for inner in _blocks(holder, None):
                if inner and inner[0].lineno <= line <= (inner[-1].end_lineno or 0):
                    block = inner
                    break
        holding: list[ast.stmt] = []
        while statement is not None:
            holding.append(statement)
            block, index, _ = self.places[id(statement)]
            before = block[index - 1] if index else None
            statement = before if before is not None and before.end_lineno == line else None
        return holding

    def scope_of(self, statement: ast.AST) -> FunctionInfo | None:
        place = self.places.get(id(statement))
        while place is not None:
            owner = place[2]
            if isinstance(owner, FUNCTIONS):
                return self.analyzer.index.by_node.get(id(owner))
            place = self.places.get(id(owner)) if owner is not None else None
        return None

    def leaves_code_behind(self, statement: ast.stmt) -> bool:
        """Whether statements of ``statement``'s function (or module) come after it, up to
        a ``try`` with handlers: what a ``raise`` or ``return`` there leaves unsure."""
        place = self.places.get(id(statement))
        while place is not None:
            block, index, owner = place
            if index < len(block) - 1:
                return True
            if owner is None or isinstance(owner, (*FUNCTIONS, ast.ClassDef)):
                return False
            if isinstance(owner, ast.Try) and owner.handlers:
                return False
            place = self.places.get(id(owner))
        return False

    def inside(self, statement: ast.AST, ancestor: ast.AST) -> bool:
        current: ast.AST | None = statement
        while current is not None:
            if current is ancestor:
                return True
            place = self.places.get(id(current))
            current = place[2] if place is not None else None
        return False

    def chain(
        self, statement: ast.AST, scope: FunctionInfo | None
    ) -> list[tuple[list[ast.stmt], int, ast.AST | None]]:
        """The blocks around ``statement`` up to its scope's body, innermost first: each
        block, ``statement``'s (or its ancestor's) place in it, and the block's owner
        (None for the scope's own body)."""
        top = scope.node if scope is not None else None
        chain: list[tuple[list[ast.stmt], int, ast.AST | None]] = []
        place = self.places.get(id(statement))
        while place is not None:
            block, index, owner = place
            if owner is top:
                chain.append((block, index, None))
                break
            chain.append(place)
            place = self.places.get(id(owner))
        return chain

    def included(self, statement: ast.stmt) -> list[ast.stmt] | None:
        driver = self.analyzer.launch_driver
        found = driver.inputs.included.get(id(statement)) if driver is not None else None
        return found if found else None  # type: ignore[return-value]

    def bound_names(self, statement: ast.stmt) -> frozenset[str]:
        """The names and attribute paths ``statement`` binds or changes in place, its
        blocks included (not nested functions' or classes' bodies): its own, with its
        blocks' statements' (each statement's expressions are walked once)."""
        key = id(statement)
        known = self._bound.get(key)
        if known is None:
            names = set(_own_bindings(statement))
            if not isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
                for block in _blocks(statement, self.included(statement)):
                    for inner in block:
                        names |= self.bound_names(inner)
            known = self._bound[key] = frozenset(names)
        return known

    def rebinders(self, name: str) -> frozenset[int]:
        """The functions (their nodes' ids) that declare ``name`` ``global``."""
        if self._globals is None:
            self._globals = {}
            source = self.analyzer.source
            for match in _GLOBAL.finditer(source):
                line = bisect.bisect_right(self.line_starts(), match.start())
                for statement in self.statements_on(line):
                    if isinstance(statement, ast.Global):
                        function = self.scope_of(statement)
                        for declared in statement.names:
                            if function is not None:
                                self._globals.setdefault(declared, set()).add(id(function.node))
        return frozenset(self._globals.get(name, ()))

    def line_starts(self) -> list[int]:
        if not self._line_starts:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self.analyzer.source))]
        return self._line_starts

    def stopping_in(self, block: list[ast.stmt]) -> list[int]:
        """Where in ``block`` a statement may leave the function (:func:`_may_stop`), once
        per block."""
        known = self._stopping.get(id(block))
        if known is None:
            known = self._stopping[id(block)] = [
                i for i, statement in enumerate(block) if _may_stop(statement)
            ]
        return known


class _Position:
    """A position to descend to (:meth:`DemandLaunch._statement_of`)."""

    def __init__(self, lineno: int, col_offset: int) -> None:
        self.lineno, self.col_offset = lineno, col_offset


def _start(statement: ast.stmt) -> tuple[int, int]:
    return statement.lineno, statement.col_offset


def _end(statement: ast.stmt) -> tuple[int, int]:
    return statement.end_lineno or statement.lineno, statement.end_col_offset or 0


def _holding(
    block: list[ast.stmt], position: tuple[int, int], by_line: bool = False
) -> ast.stmt | None:
    """The statement of ``block`` whose span holds ``position`` (blocks are in order;
    ``by_line``: whose lines hold the position's line)."""
    low, high = 0, len(block)
    while low < high:
        middle = (low + high) // 2
        if _start(block[middle]) <= position:
            low = middle + 1
        else:
            high = middle
    if low and (
        position[0] <= _end(block[low - 1])[0] if by_line else position <= _end(block[low - 1])
    ):
        return block[low - 1]
    return None


def _blocks(statement: ast.stmt, included: list[ast.stmt] | None) -> list[list[ast.stmt]]:
    """The blocks of statements ``statement`` holds (a configurator's lines for an
    ``exec`` the caller supplied)."""
    blocks = [
        block
        for block in (
            getattr(statement, "body", None),
            getattr(statement, "orelse", None),
            getattr(statement, "finalbody", None),
        )
        if isinstance(block, list) and block
    ]
    blocks += [h.body for h in getattr(statement, "handlers", None) or ()]
    blocks += [c.body for c in getattr(statement, "cases", None) or ()]
    if included:
        blocks.append(included)
    return blocks


_STATEMENT_BLOCKS = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))


def _own_expressions(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of ``statement`` outside its blocks of statements (its test, targets,
    values, decorators...), walked."""
    pending: list[ast.AST] = [
        item
        for field, value in ast.iter_fields(statement)
        if field not in _STATEMENT_BLOCKS
        for item in (value if isinstance(value, list) else [value])
        if isinstance(item, ast.AST)
    ]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(ast.iter_child_nodes(node))


def _own_bindings(statement: ast.stmt) -> Iterator[str]:
    """What ``statement`` itself binds or changes, its blocks aside."""
    if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
        yield statement.name
        return
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            yield from _target_names(target)
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        for alias in statement.names:
            yield (alias.asname or alias.name).split(".")[0]
        return
    yield from header_names(statement)
    for handler in getattr(statement, "handlers", None) or ():
        if handler.name:
            yield handler.name
    call = statement.value if isinstance(statement, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        # a change in place written as a statement (``config.update(...)``); one inside
        # an expression is not followed
        receiver = dotted(call.func.value)
        if receiver is not None and (
            call.func.attr in _MUTATING or call.func.attr in ("add_argument", "set_defaults")
        ):
            yield receiver


def _called_at(source: str, name: str) -> Iterator[int]:
    """Where ``name(`` (a whole word, spaces allowed before the parenthesis) stands in
    ``source``: ``str.find`` per name (a regular expression over every call of the file
    cost more than the questions it served)."""
    start, end_of_source = source.find(name), len(source)
    while start != -1:
        end = start + len(name)
        before = source[start - 1] if start else " "
        if not (before.isalnum() or before == "_"):
            after = end
            while after < end_of_source and source[after] in " \t":
                after += 1
            if after < end_of_source and source[after] == "(":
                yield start
        start = source.find(name, end)


def _may_stop(statement: ast.stmt) -> bool:
    """A ``raise`` or ``return`` in ``statement``'s blocks that no ``try`` with handlers
    stands around (a handler may catch the raise; a ``return`` there is let be alike, as
    the forward launch does)."""
    if isinstance(statement, (ast.Raise, ast.Return)):
        return True
    if isinstance(statement, ast.Try) and statement.handlers:
        return False
    if isinstance(statement, (ast.If, *WITHS, *LOOPS)):
        blocks = [statement.body, getattr(statement, "orelse", [])]
        return any(_may_stop(s) for block in blocks for s in block)
    return False


def _target_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)
    elif isinstance(target, ast.Subscript):
        base = dotted(target.value)
        if base is not None:
            yield base
    else:
        path = dotted(target)
        if path is not None:
            yield path


def header_names(owner: ast.AST) -> frozenset[str]:
    """Names a loop's target, a ``with``'s ``as`` or a handler binds at the block's top."""
    if isinstance(owner, (ast.For, ast.AsyncFor)):
        return frozenset(_target_names(owner.target))
    if isinstance(owner, WITHS):
        return frozenset(
            n
            for item in owner.items
            if item.optional_vars is not None
            for n in _target_names(item.optional_vars)
        )
    if isinstance(owner, ast.ExceptHandler) and owner.name:
        return frozenset((owner.name,))
    return frozenset()


def own_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a function's body and its blocks, not of nested definitions."""
    pending = list(reversed(body))
    while pending:
        statement = pending.pop()
        yield statement
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            pending.extend(reversed(getattr(statement, field, None) or []))
        for handler in getattr(statement, "handlers", None) or []:
            pending.extend(reversed(handler.body))
