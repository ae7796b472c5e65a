"""The engine's hook into the workspace: calls to imported project functions and classes.

A file's analyzer gets a :class:`ProjectLinker` (files with a real path only). When the
dataflow meets a call whose callee is a name the file imports from a module of the
project (``train_step(...)`` after ``from helpers import train_step``, ``models.Net()``,
a name ``from models import *`` brings in, a method of an instance of an imported
class), the linker finds the module (:mod:`.resolve`), its summary (:mod:`.index`) and
an analyzer of that module (:class:`ForeignAnalyzer`: its module body run once for its
globals, then functions analysed on demand in the caller's context). The callee is
analysed with the caller's argument values and its summary — returned value, training
events, stores into containers that outlive the call, mode switches — is replayed at the
call site, exactly as for a helper of the caller's own file
(:meth:`~torchward.analysis.facts.analyzer.FileAnalyzer.call_function`). Evidence inside
another module carries that module's path, so a fixer never edits the wrong file.

All analyzers of one analysis share a :class:`ProjectSession`: one analyzer per module,
the modules read (the file's dependencies, recorded in the workspace import graph), and
the module that owns each imported class.

Past 400 lines (475) for now: the session, the name resolver, the linker and the foreign
analyzer call each other in both directions (the session makes resolvers and analyzers;
the linker is a resolver that enters analyzers through the session), so a split today
would be an import cycle held together by ``TYPE_CHECKING``. The seam for the next
change: :class:`Resolver` and :class:`Symbol` (names to modules and symbols, no
dataflow) into ``workspace/symbols.py``, with the session passed in as a protocol.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs

from ..facts.analyzer import FileAnalyzer
from ..facts.events import Trace
from ..facts.semantic import FunctionInfo
from ..facts.values import UNKNOWN, Kind, Value, combine
from ..finding import Confidence, Evidence, Span
from ..syntax.names import dotted
from .boundary import at_call
from .index import WORKSPACE, WorkspaceIndex
from .resolve import is_external, package_of, resolve_module, search_roots
from .returns import detached_items
from .summary import ModuleSummary

if TYPE_CHECKING:
    from ..facts.interpreter import FunctionRun

SWITCH = "TORCHWARD_CROSSFILE"  # "0": every file analysed alone, as before issue 15
# calls followed into other modules per analysis: past it they are unknown calls, as
# before (a script reaching a whole library through its entry point stays bounded)
MAX_ENTRIES = 64
MAX_DEPTH = 3  # modules deep: script -> helpers -> models -> layers
_CALLED = re.compile(r"\b(\w+)\s*[.(]")  # a name called, or whose attribute is used


@attrs.frozen
class Symbol:
    """A top-level function or class ``name`` of the project module ``summary``."""

    summary: ModuleSummary
    name: str


class ProjectSession:
    """What the analyzers of one analysis share."""

    def __init__(self, workspace: WorkspaceIndex) -> None:
        self.workspace = workspace
        self.analyzers: dict[str, ForeignAnalyzer] = {}
        self.resolvers: dict[str, Resolver] = {}
        self.owners: dict[str, ForeignAnalyzer] = {}  # imported class name -> its module
        self.read: set[str] = set()  # project modules the analysis read
        self.depth = 0  # nested calls into other modules
        self.entered = 0  # calls followed into other modules (at most MAX_ENTRIES)
        # another module's body is running: its own calls into modules are not followed
        # (its globals are torch objects and constants; a library's import-time setup is not)
        self.in_globals = False
        # a call into another module was not followed: what the modules' code did is
        # only partly known, so findings inside them are not reported (relocate.py)
        self.partial = False
        # the call in the analysed file that first led into each function of another
        # module (and into each module): where a finding inside it is reported
        self.entries: dict[tuple[str, str], Span] = {}
        self.first_entries: dict[str, Span] = {}
        self.current: Span | None = None  # the analysed file's call being followed
        # where the values each call of the analysed file brought back were constructed
        # inside other modules, before :mod:`.boundary` re-anchored them at the call
        self.brought: dict[Span, set[Evidence]] = {}
        self._roots: dict[str, tuple[str, ...]] = {}
        self._resolved: dict[tuple[str, str, int], str | None] = {}

    def may_enter(self) -> bool:
        """Whether another call may be followed into another module (depth and budget);
        a refusal outside a module body makes the analysis partial (:attr:`partial`)."""
        if self.in_globals:
            return False
        if self.depth < MAX_DEPTH and self.entered < MAX_ENTRIES:
            return True
        self.partial = True
        return False

    def resolve(self, importer: str, name: str, level: int) -> str | None:
        """:func:`.resolve.resolve_module`, once per importer and name in one analysis (the
        search roots once per folder): its reads are recorded by the first time."""
        folder = os.path.dirname(os.path.abspath(importer))
        key = (importer, name, level)
        if key not in self._resolved:
            roots = self._roots.get(folder)
            if roots is None and not level:
                roots = self._roots[folder] = search_roots(importer)
            self._resolved[key] = resolve_module(importer, name, level, roots)
        return self._resolved[key]

    def analyzer_for(self, summary: ModuleSummary) -> ForeignAnalyzer:
        found = self.analyzers.get(summary.path)
        if found is None or found.summary is not summary:
            found = ForeignAnalyzer(summary, self)
            self.analyzers[summary.path] = found  # before its body runs: import cycles
            found.run_globals()
        return found

    def resolver_for(self, summary: ModuleSummary) -> Resolver:
        found = self.resolvers.get(summary.path)
        if found is None or found.summary is not summary:
            found = self.resolvers[summary.path] = Resolver(summary, self)
        return found


class Resolver:
    """Resolves the names one module imports to functions and classes of the project."""

    def __init__(self, summary: ModuleSummary, session: ProjectSession) -> None:
        self.summary = summary
        self.session = session
        self._symbols: dict[str, Symbol | None] = {}
        self._modules: dict[tuple[str, int], ModuleSummary | None] = {}

    def module(self, name: str, level: int = 0) -> ModuleSummary | None:
        key = (name, level)
        if key not in self._modules:
            path = self.session.resolve(self.summary.path, name, level)
            found = self.session.workspace.summary(path) if path is not None else None
            if found is not None:
                self.session.read.add(found.path)
            self._modules[key] = found
        return self._modules[key]

    def symbol(self, path: str) -> Symbol | None:
        """The project function or class the dotted name ``path`` refers to in this module."""
        if path not in self._symbols:
            self._symbols[path] = None  # a re-export cycle resolves to nothing
            self._symbols[path] = self._symbol(path)
        return self._symbols[path]

    def _symbol(self, path: str) -> Symbol | None:
        head, _, rest = path.partition(".")
        binding = self.summary.bindings.get(head)
        if binding is None:
            if head in self.summary.defined:
                return None
            for star in self.summary.star_imports:
                module = self.module(star.module, star.level)
                names = module.public_names if module is not None else None
                if module is not None and names is not None and head in names:
                    return self._within(module, path)
            return None
        if not binding.level and is_external(binding.module):
            return None
        if binding.attribute is None:  # import pkg.mod [as m]: m.f(...) / pkg.mod.f(...)
            if not rest:
                return None
            prefix = binding.module.split(".") if binding.module.split(".")[0] != head else [head]
            parts = prefix + rest.split(".")
            for cut in range(len(parts) - 1, len(prefix) - 1, -1):  # the longest module prefix
                module = self.module(".".join(parts[:cut]))
                if module is not None:
                    return self._within(module, ".".join(parts[cut:]))
            return None
        parent = self.module(binding.module, binding.level) if binding.module else None
        if parent is not None and binding.attribute in parent.defined:
            return self._within(parent, binding.attribute + ("." + rest if rest else ""))
        name = f"{binding.module}.{binding.attribute}" if binding.module else binding.attribute
        if parent is None or package_of(parent.path):
            submodule = self.module(name, binding.level)  # from pkg import helpers
            if submodule is not None:
                return self._within(submodule, rest) if rest else None
        if parent is not None:
            return self._within(parent, binding.attribute + ("." + rest if rest else ""))
        return None

    def _within(self, module: ModuleSummary, path: str) -> Symbol | None:
        """``path`` inside ``module``, following re-exports (``from .resnet import ResNet``
        in a package's ``__init__``)."""
        name, _, rest = path.partition(".")
        if name in module.top_functions or name in module.top_classes:
            return Symbol(module, name) if not rest else None
        if name in module.bindings or (name not in module.defined and module.star_imports):
            return self.session.resolver_for(module).symbol(path)
        return None

    def training_names(self) -> frozenset[str]:
        """Names this module imports of project functions and classes with training code
        of their own: a function that calls one is worth analysing even when its own text
        has no training word."""
        found = set()
        for name, binding in self.summary.bindings.items():
            if not binding.level and is_external(binding.module):
                continue
            symbol = self.symbol(name)
            if symbol is not None and symbol.summary.trains(symbol.name):
                found.add(name)
        return frozenset(found)

    def imported_modules(self) -> list[ModuleSummary]:
        """The project modules this one imports from (resolved, in import order)."""
        found = []
        for binding in [*self.summary.bindings.values(), *self.summary.star_imports]:
            if not binding.level and is_external(binding.module):
                continue
            module = self.module(binding.module, binding.level) if binding.module else None
            if module is None and binding.attribute is not None:
                name = (
                    f"{binding.module}.{binding.attribute}" if binding.module else binding.attribute
                )
                module = self.module(name, binding.level)
            if module is not None and module not in found:
                found.append(module)
        return found

    def imports_training_code(self) -> bool:
        """Whether this module calls into a module with training code (it may then be a
        training script that says so only through its helpers): a name it imports from
        one is called, or its attribute is (``train.run(...)``). A package's
        ``__init__`` that only re-exports calls nothing."""
        if not self.summary.star_imports and all(
            not binding.level and is_external(binding.module)
            for binding in self.summary.bindings.values()
        ):
            return False  # imports nothing of the project (the text is not searched)
        called = set(_CALLED.findall(self.summary.source))
        if not called:
            return False
        for name, binding in self.summary.bindings.items():
            if name not in called or (not binding.level and is_external(binding.module)):
                continue
            symbol = self.symbol(name)
            if symbol is not None and symbol.summary.trains(symbol.name):
                return True
            if symbol is None and binding.attribute is None:  # import train; train.run(...)
                module = self.module(binding.module)
                if (
                    module is not None
                    and module.relevant
                    and any(module.trains(n) for n in called & module.top_functions)
                ):
                    return True
        for star in self.summary.star_imports:
            module = self.module(star.module, star.level)
            names = module.public_names if module is not None else None
            if module is not None and names and any(module.trains(n) for n in names & called):
                return True
        return False

    def fingerprint(self) -> str:
        """The texts of every project module this one imports, transitively: a cached
        function analysis is reused only while none of them changed."""
        seen: dict[str, str] = {}
        stack: list[Resolver] = [self]
        while stack:
            resolver = stack.pop()
            for module in resolver.imported_modules():
                if module.path not in seen:
                    seen[module.path] = module.digest
                    stack.append(self.session.resolver_for(module))
        text = "\n".join(f"{path}:{digest}" for path, digest in sorted(seen.items()))
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class ProjectLinker(Resolver):
    """The resolver of the module an analyzer analyses, with the dataflow's hooks."""

    def __init__(
        self, analyzer: FileAnalyzer, summary: ModuleSummary, session: ProjectSession
    ) -> None:
        super().__init__(summary, session)
        self.analyzer = analyzer

    # --- the hooks the dataflow calls ---------------------------------------------------
    def call(self, run: FunctionRun, node: ast.Call) -> Value | None:
        """The value of ``node`` when it calls an imported project function or class; None
        when it does not (the dataflow resolves it as before)."""
        path = dotted(node.func)
        if path is None:
            return None
        head = path.partition(".")[0]
        if (
            head in run.env
            or head in run.params
            or head in self.analyzer.index.top_functions
            or head in self.analyzer.index.classes
        ):
            return None  # a local name shadows the import
        if head not in self.summary.bindings and not self.summary.star_imports:
            return None
        symbol = self.symbol(path)
        if symbol is None:
            return None
        if not self.session.may_enter():
            function = symbol.summary.index.top_functions.get(symbol.name)
            if function is None or detached_items(function.node) is None:
                return None  # an unknown call, as before
            args, kwargs = run.arguments(node)
            return _unfollowed(function, args, kwargs)
        if symbol.name not in symbol.summary.top_classes and (
            symbol.name not in symbol.summary.worth_following
        ):
            return None  # a utility (paths, logging, config): an unknown call, as before
        owner = self.session.analyzer_for(symbol.summary)
        index = owner.index
        start = len(run.trace.events)
        with self._entering(owner, symbol.name, node):
            if symbol.name in index.top_functions:
                args, kwargs = run.arguments(node)
                info = index.top_functions[symbol.name]
                value = self.analyzer.call_function(
                    run, info, args, kwargs, node, None, None, owner=owner
                )
                return self._returned(run, node, value, start)
            if symbol.name in index.classes:
                args, kwargs = run.arguments(node)
                value = owner.instantiate(symbol.name, args, kwargs, None, None)
                self.session.owners[symbol.name] = owner
                origin = run.evidence(node, f"`{run.text(node)}` is constructed here")
                return self._returned(run, node, attrs.evolve(value, origin=origin), start)
        return None

    def _returned(self, run: FunctionRun, node: ast.Call, value: Value, start: int) -> Value:
        """What a call into another module left in the analysed file, its evidence there
        re-anchored at the call (:mod:`.boundary`); calls between other modules keep theirs."""
        if isinstance(self.analyzer, ForeignAnalyzer):
            return value
        span = self.analyzer.lines.span(node)
        here = self.analyzer.evidence_path
        self.session.brought.setdefault(span, set()).update(value.origins())
        events = run.trace.events
        for position in range(start, len(events)):
            event = events[position]
            events[position] = attrs.evolve(
                event,
                value=at_call(event.value, span, here),
                target=at_call(event.target, span, here),
            )
        return at_call(value, span, here)

    @contextlib.contextmanager
    def _entering(self, owner: ForeignAnalyzer, qualname: str, node: ast.Call) -> Iterator[None]:
        """Follow a call into ``owner``: depth-bounded, and remembered as the entry to it."""
        session = self.session
        previous = session.current
        if previous is None:  # a call written in the analysed file itself
            session.current = self.analyzer.lines.span(node)
        assert session.current is not None
        session.entries.setdefault((owner.path, qualname), session.current)
        session.first_entries.setdefault(owner.path, session.current)
        session.depth += 1
        session.entered += 1
        try:
            yield
        finally:
            session.depth -= 1
            session.current = previous

    def method(
        self,
        run: FunctionRun,
        receiver: Value,
        method: str,
        node: ast.Call,
        receiver_path: str | None,
    ) -> Value | None:
        """A method call on an instance of a class another project module defines."""
        owner = self.session.owners.get(receiver.class_name or "")
        if owner is None or owner is self.analyzer:
            return None
        info = owner.index.find_method(receiver.class_name or "", method)
        if info is None or method in ("eval", "train"):
            return None
        if receiver.kind is Kind.MODEL and method == "forward":
            return None
        args, kwargs = run.arguments(node)
        if not self.session.may_enter():
            return _unfollowed(info, args, kwargs)
        start = len(run.trace.events)
        with self._entering(owner, info.qualname, node):
            value = self.analyzer.call_function(
                run, info, args, kwargs, node, receiver, receiver_path, owner=owner
            )
        return self._returned(run, node, value, start)

    def finish(self) -> None:
        """Record in the workspace import graph which modules this analysis read."""
        self.session.workspace.record_reads(self.summary.path, frozenset(self.session.read))


class ForeignAnalyzer(FileAnalyzer):
    """The analyzer of a module another file imports: its globals, and its functions
    analysed in the contexts the importing file calls them in. Its own traces are never
    reported (its own check reports them); its evidence names its path."""

    def __init__(self, summary: ModuleSummary, session: ProjectSession) -> None:
        # the tree and its model, held for this analysis, shared by every analysis of
        # this text while the index's bound keeps them
        self.syntax = summary.syntax
        self.__dict__["index"] = self.syntax.index
        self.summary = summary
        super().__init__(self.syntax.tree, summary.source, summary.path, None)
        self.evidence_path = summary.path
        self.session = session
        self.project = ProjectLinker(self, summary, session)

    def run_globals(self) -> None:
        """Run the module body (not its ``if __name__ == "__main__":`` block) for the
        values its functions read from module globals."""
        if not self.relevant:
            return
        body = [s for s in self.tree.body if not _is_main_guard(s)]
        session = self.session
        outer, session.in_globals = session.in_globals, True
        try:
            self.run_module_body(Trace("<module>"), body)
        finally:
            session.in_globals = outer


def link(analyzer: FileAnalyzer, workspace: WorkspaceIndex = WORKSPACE) -> ProjectLinker | None:
    """A linker for the file ``analyzer`` analyses (None for a document without a path)."""
    if analyzer.path.startswith("<") or isinstance(analyzer, ForeignAnalyzer):
        return None  # a document without a file, or a module linked by its importer
    if os.environ.get(SWITCH) == "0":
        return None  # cross-file analysis turned off (bench/bench_crossfile.py compares)
    summary = ModuleSummary(analyzer.path, "", analyzer.source, analyzer.tree)
    return ProjectLinker(analyzer, summary, ProjectSession(workspace))


def _unfollowed(info: FunctionInfo, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """A call into another module past the budget: what an unknown call gives (its
    arguments' graph, only maybe), except for the items of a returned tuple that the
    callee's text detaches on every path (:mod:`.returns`): those carry none."""
    joined = combine([*args, *kwargs.values()])
    if joined.graph is not None:
        joined = attrs.evolve(joined, graph_confidence=Confidence.MEDIUM)
    joined = attrs.evolve(joined, scaled=None)
    shape = detached_items(info.node)
    if shape is None:
        return joined
    attached = not all(shape)
    return Value(
        kind=Kind.CONTAINER,
        graph=joined.graph if attached else None,
        graph_confidence=joined.graph_confidence if attached else Confidence.HIGH,
        locs=joined.locs,
        elements=tuple(UNKNOWN if detached else joined for detached in shape),
        scaled=None,
    )


def _is_main_guard(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.If):
        return False
    test = statement.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )
