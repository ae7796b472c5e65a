"""What one module of the project offers to the files that import it, read from its text.

A :class:`ModuleSummary` depends on the module's text alone (it is cached by content
hash, :mod:`.index`): its syntax tree and static shape (:class:`ModuleIndex`), the names
it binds by import (resolved later, against the file system, by :mod:`.linking`), what
``from module import *`` brings in, its ``nn.Module`` classes and what each registers as
submodules, its registries (``MODELS = {"resnet": ResNet}``, ``@register_model``), where
it builds models and data loaders (and whether a loader shards), and whether anything in
it can matter to a rule at all.

What a function *does* when called — returns, training events, stores — is not a
syntactic fact: the engine analyses the function in the caller's context
(:meth:`~torchward.analysis.facts.analyzer.FileAnalyzer.invoke`) and replays its summary at the
call site, exactly as for a function of the caller's own file.
"""

from __future__ import annotations

import ast
import functools
import warnings
import weakref
from typing import Protocol

import attrs

from ..facts import catalog
from ..facts.fallback import kind_from_name
from ..facts.relevance import TRAINING_KINDS, functions_worth_analysing, training_import_aliases
from ..facts.semantic import ModuleIndex, mentions_training_words
from ..facts.values import Kind
from ..syntax.names import dotted, qualified_name
from ..syntax.parsing import parse_module

# packages whose names in a function's text say it may build a model
_MODEL_PACKAGES = ("torch.nn", "torchvision.models", "transformers", "timm", "peft")


@attrs.frozen
class ImportBinding:
    """A name a module binds by ``import``: ``module`` (with ``level`` leading dots) and,
    for ``from module import attribute``, the attribute; ``attribute`` is None for
    ``import module`` / ``import module as name``."""

    module: str
    level: int = 0
    attribute: str | None = None


@attrs.frozen
class ModuleClass:
    """An ``nn.Module`` subclass a module defines, and the submodules its ``__init__`` assigns."""

    name: str
    line: int
    submodules: tuple[str, ...] = ()  # ``self.<attribute> = <module constructor>(...)``
    bases: tuple[str, ...] = ()  # its base classes as written


@attrs.frozen
class Construction:
    """A model or a data loader built at module level or in a function of the module."""

    what: str  # the constructor as written (``Net``, ``torch.utils.data.DataLoader``)
    line: int
    shards: bool = (
        False  # a loader given a sampler= / batch_sampler= (a DistributedSampler may hide there)
    )


class Syntax:
    """A module's syntax tree and the semantic model built on it, kept together (the
    model's node lookups hold only for its own tree). Its summary refers to it weakly:
    the workspace index's bound (:class:`~.index.SyntaxBound`) decides how many stay
    alive, and a summary whose syntax was dropped parses its text again when asked."""

    __slots__ = ("__weakref__", "_index", "source", "tree")

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.tree = tree
        self.source = source
        self._index: ModuleIndex | None = None

    @property
    def index(self) -> ModuleIndex:
        if self._index is None:
            self._index = ModuleIndex(self.tree, self.source)
        return self._index


class SyntaxKeeper(Protocol):
    """What keeps a bounded number of syntax trees alive (:class:`~.index.SyntaxBound`)."""

    def keep(self, key: tuple[str, str], syntax: Syntax) -> None: ...


class ModuleSummary:
    """One module's offer to its importers (immutable once built; shared between analyses).

    What it offers is plain data (names, classes, registries), computed once and kept;
    its syntax tree is kept only while ``keeper`` holds it (none given: always)."""

    def __init__(
        self,
        path: str,
        digest: str,
        source: str,
        tree: ast.Module,
        keeper: SyntaxKeeper | None = None,
    ) -> None:
        self.path = path
        self.digest = digest
        self.source = source
        self._keeper = keeper
        syntax = Syntax(tree, source)
        self._held = syntax if keeper is None else None
        self._syntax = weakref.ref(syntax)
        if keeper is not None:
            keeper.keep((path, digest), syntax)
        self.bindings: dict[str, ImportBinding] = {}
        self.star_imports: list[ImportBinding] = []
        self._trains: dict[str, bool] = {}
        self._read_imports()

    @functools.cached_property
    def relevant(self) -> bool:
        """Whether the module's text has training words (read only when asked: most
        summaries are read for their names alone)."""
        return mentions_training_words(self.source)

    @property
    def syntax(self) -> Syntax:
        """The tree and its model: the same objects while anything holds them, parsed
        again from the text once the bound dropped them (the text parsed before)."""
        syntax = self._held or self._syntax()
        if syntax is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                syntax = Syntax(parse_module(self.source, self.path), self.source)
            self._syntax = weakref.ref(syntax)
        if self._keeper is not None:
            self._keeper.keep((self.path, self.digest), syntax)
        return syntax

    @property
    def tree(self) -> ast.Module:
        return self.syntax.tree

    @property
    def index(self) -> ModuleIndex:
        return self.syntax.index

    # --- names ------------------------------------------------------------------------
    def _read_imports(self) -> None:
        for node in _module_statements(self.tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.bindings[alias.asname] = ImportBinding(alias.name)
                    else:
                        head = alias.name.split(".")[0]
                        self.bindings.setdefault(head, ImportBinding(head))
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                for alias in node.names:
                    if alias.name == "*":
                        self.star_imports.append(ImportBinding(module, node.level))
                    else:
                        self.bindings[alias.asname or alias.name] = ImportBinding(
                            module, node.level, alias.name
                        )

    @functools.cached_property
    def defined(self) -> frozenset[str]:
        """Top-level names the module defines itself (functions, classes, assignments)."""
        names: set[str] = set()
        for node in _module_statements(self.tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name):
                            names.add(leaf.id)
        return frozenset(names)

    @functools.cached_property
    def top_functions(self) -> frozenset[str]:
        """Names of the module's top-level functions (kept when its tree is not)."""
        return frozenset(self.index.top_functions)

    @functools.cached_property
    def top_classes(self) -> frozenset[str]:
        """Names of the module's top-level classes (kept when its tree is not)."""
        return frozenset(name for name in self.index.classes if "." not in name)

    @functools.cached_property
    def public_names(self) -> frozenset[str] | None:
        """What ``from module import *`` binds: ``__all__`` when it is a literal, else every
        name not starting with an underscore (None: ``__all__`` is computed, unknown)."""
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return None
                if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                    return frozenset(value)
                return None
        names = self.defined | frozenset(self.bindings)
        return frozenset(n for n in names if not n.startswith("_"))

    @functools.cached_property
    def worth_following(self) -> frozenset[str]:
        """Top-level functions an importer's call is worth analysing (the rest — path,
        logging and config helpers — stay unknown calls, as in a single-file analysis):
        those with training words, those building a model (``nn.``, a module class of
        this file), those taking a model, optimizer, loader or criterion by name, and
        those that call one of them (:func:`~torchward.analysis.facts.relevance.functions_worth_analysing`)."""
        index = self.index
        kinded = set(self.module_classes) | training_import_aliases(index)
        kinded |= {
            alias
            for alias, target in index.imports.names.items()
            if target.startswith(_MODEL_PACKAGES)
        }
        worth = functions_worth_analysing(index, frozenset(kinded))
        for info in index.top_functions.values():
            arguments = info.node.args
            names = [
                a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            ]
            if any(kind_from_name(n) in TRAINING_KINDS for n in names):
                worth.add(info.qualname)
        return frozenset(
            name for name, info in index.top_functions.items() if info.qualname in worth
        )

    def trains(self, name: str) -> bool:
        """Whether the top-level function or class ``name`` has training code in its own
        text (a ``backward``, a loss, a loader loop): calling it makes the caller a
        training script."""
        known = self._trains.get(name)
        if known is None:
            index = self.index
            node = index.top_functions.get(name) or index.classes.get(name)
            known = self._trains[name] = node is not None and index.mentions_training(node.node)
        return known

    # --- models ------------------------------------------------------------------------
    @functools.cached_property
    def module_classes(self) -> dict[str, ModuleClass]:
        """The ``nn.Module`` classes defined at top level (bases resolved in this file only)."""
        found = {}
        index = self.index
        for name, info in index.classes.items():
            if "." in name or not index.is_module_class(name):
                continue
            init = info.methods.get("__init__")
            submodules = _assigned_submodules(index, init.node) if init is not None else ()
            bases = tuple(dotted(b) or "" for b in info.node.bases)
            found[name] = ModuleClass(name, info.node.lineno, submodules, bases)
        return found

    @functools.cached_property
    def registries(self) -> dict[str, dict[str, str]]:
        """Registries the module fills: a dict display of names (``MODELS = {"resnet":
        ResNet}``) and decorators (``@register_model``, ``@MODELS.register("resnet")``),
        each as ``registry -> key -> the top-level class or function it names``."""
        found: dict[str, dict[str, str]] = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                entries = _named_entries(node.value)
                if entries:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            found.setdefault(target.id, {}).update(entries)
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                for decorator in node.decorator_list:
                    registry, key = _registration(decorator, node.name)
                    if registry:
                        found.setdefault(registry, {})[key] = node.name
        return found

    def registered(self, key: str) -> str | None:
        """The class or function registered under ``key`` in any registry of the module."""
        for entries in self.registries.values():
            if key in entries:
                return entries[key]
        return None

    @functools.cached_property
    def constructions(self) -> tuple[Construction, ...]:
        """Models (its own module classes, torch / library model constructors) and data
        loaders the module builds, in file order."""
        built = []
        imports = self.index.imports
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            written = dotted(node.func) or ""
            name = qualified_name(node.func, imports) or written
            if written in self.module_classes:
                built.append(Construction(written, node.lineno))
                continue
            kind = catalog.kind_of_constructor(name) if name else None
            if kind is Kind.LOADER:
                shards = any(k.arg in ("sampler", "batch_sampler") for k in node.keywords)
                built.append(Construction(name, node.lineno, shards or len(node.args) > 2))
            elif kind is Kind.MODEL and "." in name:
                built.append(Construction(name, node.lineno))
        return tuple(sorted(built, key=lambda c: c.line))


def _module_statements(body: list[ast.stmt]):
    """Top-level statements, including those under ``if`` / ``try`` (guarded imports)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            yield from _module_statements(node.body)
            yield from _module_statements(node.orelse)
            for handler in getattr(node, "handlers", ()):
                yield from _module_statements(handler.body)


def _assigned_submodules(index: ModuleIndex, init: ast.AST) -> tuple[str, ...]:
    names = []
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        for target in node.targets:
            path = dotted(target) or ""
            if not path.startswith("self.") or path.count(".") != 1:
                continue
            func = node.value.func
            name = qualified_name(func, index.imports) or ""
            local = func.id if isinstance(func, ast.Name) and func.id in index.classes else None
            if (local is not None and index.is_module_class(local)) or (
                name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper()
            ):
                names.append(path[5:])
    return tuple(dict.fromkeys(names))


def _named_entries(display: ast.Dict) -> dict[str, str]:
    """``{"resnet": ResNet, "vgg": vgg16}``: string keys to top-level names (all or none)."""
    entries = {}
    for key, value in zip(display.keys, display.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return {}
        if not isinstance(value, ast.Name):
            return {}
        entries[key.value] = value.id
    return entries


def _registration(decorator: ast.expr, name: str) -> tuple[str | None, str]:
    """(registry, key) for ``@register_model``, ``@register_model("name")``,
    ``@MODELS.register()`` / ``@MODELS.register_module(name="x")``; (None, "") otherwise."""
    call = decorator if isinstance(decorator, ast.Call) else None
    target = call.func if call is not None else decorator
    path = dotted(target) or ""
    leaf = path.rsplit(".", 1)[-1]
    if not leaf.startswith("register"):
        return None, ""
    key = name
    if call is not None:
        given = [a for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        given += [
            k.value
            for k in call.keywords
            if k.arg == "name"
            and isinstance(k.value, ast.Constant)
            and isinstance(k.value.value, str)
        ]
        if given:
            key = str(given[0].value)
    registry = path.rsplit(".", 1)[0] if "." in path else path
    return registry, key
