"""The static shape of one module: its functions, classes, methods and imports.

This is the part of the semantic model that needs no dataflow: which names are local
functions and classes (so calls resolve to them), what each class derives from (an
``nn.Module``, a ``LightningModule``, an ``IterableDataset``...), and which functions a
cheap text test says are worth analysing at all.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

import attrs

from ..effects import table as library_effects
from ..syntax.names import ImportTable, qualified_name
from ..syntax.positions import LineIndex
from . import catalog

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# A function whose text mentions none of these cannot trigger any rule on its own; it is
# analysed only when an analysed caller reaches it. Measured on PyTorch's source tree,
# this skips most functions (forward passes, utilities, tests of unrelated features).
# torch's own spellings; a library's (a trainer's hooks, ``manual_backward``) come from
# the library-effects table, see :func:`_training_words`.
_TORCH_WORDS = (
    r"\.backward\(|\.step\(|\.eval\(|zero_grad|Loss\b|_loss\(|loss_f|criterion|cross_entropy|DataLoader|"
    r"(?:\bin|enumerate\(|tqdm\()\s*[\w.]*loader\b|"
    r"DistributedDataParallel|DDP|FullyShardedDataParallel|\.train\(|fully_shard\("
)

# Literal fragments, one of which every _TORCH_WORDS match contains: ``in`` on a str is
# several times faster than the regex, and most files of a large tree contain none.
_TORCH_FRAGMENTS = (
    "fully_shard(",
    ".backward(",
    ".step(",
    ".eval(",
    "zero_grad",
    "Loss",
    "_loss(",
    "loss_f",
    "criterion",
    "cross_entropy",
    "oader",
    "DDP",
    "DistributedDataParallel",
    "FullyShardedDataParallel",
    ".train(",
)

_WORDS: dict[int, tuple[tuple[str, ...], re.Pattern[str]]] = {}


def _training_words() -> tuple[tuple[str, ...], re.Pattern[str]]:
    """The fragments and the pattern for the library-effects table in force: torch's
    words, a definition of every method a library calls on a user's class once per batch
    or step (``def compute_loss(``, ``def on_step_end(``: such a class may name nothing
    else), and a call of every method the table says runs backward
    (``.manual_backward(``). Built once per table (:func:`.adapters.effects.token`)."""
    key = library_effects.token()
    known = _WORDS.get(key)
    if known is None:
        table = library_effects.current()
        spelled = sorted(f"def {name}(" for name in table.hook_names()) + sorted(
            f".{name}(" for name in table.backward_methods()
        )
        pattern = "|".join([_TORCH_WORDS, *map(re.escape, spelled)])
        known = _WORDS[key] = (_TORCH_FRAGMENTS + tuple(spelled), re.compile(pattern))
    return known


def mentions_training_words(text: str) -> bool:
    fragments, pattern = _training_words()
    return any(fragment in text for fragment in fragments) and pattern.search(text) is not None


@attrs.define(eq=False)
class FunctionInfo:
    qualname: str
    node: FunctionNode
    class_name: str | None = None  # the class it is a method of

    @property
    def is_method(self) -> bool:
        return self.class_name is not None and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in self.node.decorator_list
        )


@attrs.define(eq=False)
class ClassInfo:
    name: str
    node: ast.ClassDef
    base_names: tuple[str, ...]  # canonical qualified names of imported bases
    local_bases: tuple[str, ...]  # names of bases defined in this module
    methods: dict[str, FunctionInfo] = attrs.field(factory=dict)


class ModuleIndex:
    def __init__(self, tree: ast.Module, source: str) -> None:
        self.tree = tree
        self.source_lines = LineIndex(source).lines
        self.imports = ImportTable(tree, self.source_lines)
        self.functions: dict[str, FunctionInfo] = {}  # every function, by qualified name
        self.top_functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.by_node: dict[int, FunctionInfo] = {}
        self._index(tree.body, prefix="", class_name=None, top=True)

    def _index(self, body: list[ast.stmt], prefix: str, class_name: str | None, top: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                info = FunctionInfo(prefix + node.name, node, class_name)
                self.functions[info.qualname] = info
                self.by_node[id(node)] = info
                if top:
                    self.top_functions[node.name] = info
                if class_name is not None and prefix == class_name + ".":
                    self.classes[class_name].methods[node.name] = info
                self._index(node.body, f"{info.qualname}.<locals>.", None, False)
            elif isinstance(node, ast.ClassDef):
                bases, local_bases = [], []
                for base in node.bases:
                    name = qualified_name(base, self.imports)
                    if name:
                        bases.append(name)
                    elif isinstance(base, ast.Name):
                        local_bases.append(base.id)
                qual = prefix + node.name
                self.classes.setdefault(
                    qual, ClassInfo(qual, node, tuple(bases), tuple(local_bases))
                )
                if top:
                    self.classes.setdefault(node.name, self.classes[qual])
                self._index(node.body, qual + ".", qual, False)
            elif isinstance(node, (ast.If, ast.Try, ast.With)) and top:
                # functions defined under ``if TYPE_CHECKING`` / ``try`` are still module level
                self._index(getattr(node, "body", []), prefix, class_name, top)
                self._index(getattr(node, "orelse", []), prefix, class_name, top)

    # --- class hierarchy ----------------------------------------------------------
    def all_bases(self, class_name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        """Canonical names of every imported base, through local base classes."""
        info = self.classes.get(class_name)
        if info is None or class_name in seen:
            return set()
        found = set(info.base_names)
        for local in info.local_bases:
            found |= self.all_bases(local, seen | {class_name})
        return found

    def is_module_class(self, class_name: str) -> bool:
        """Derived from an ``nn.Module``: a torch module class, or a capitalised class of a
        package the library-effects table lists under ``[models] base_packages``."""
        bases = self.all_bases(class_name)
        packages = ("torch.nn.", *(p + "." for p in library_effects.current().model_base_packages))
        return bool(bases & catalog.MODULE_BASES) or any(
            b.startswith(packages) and b.rsplit(".", 1)[-1][:1].isupper() for b in bases
        )

    def is_lightning_class(self, class_name: str) -> bool:
        return bool(self.all_bases(class_name) & catalog.LIGHTNING_MODULE_BASES)

    def dataset_flavour(self, class_name: str) -> str | None:
        bases = self.all_bases(class_name)
        if bases & catalog.ITERABLE_DATASET_BASES:
            return "iterable"
        if bases & catalog.DATASET_BASES:
            return "map"
        return None

    def find_method(
        self, class_name: str, method: str, seen: frozenset[str] = frozenset()
    ) -> FunctionInfo | None:
        info = self.classes.get(class_name)
        if info is None or class_name in seen:
            return None
        if method in info.methods:
            return info.methods[method]
        for local in info.local_bases:
            found = self.find_method(local, method, seen | {class_name})
            if found:
                return found
        return None

    def subclasses(self) -> list[str]:
        """Classes derived from a class of this module, in file order."""
        unique = {id(info): info for info in self.classes.values() if info.local_bases}
        return [info.name for info in sorted(unique.values(), key=lambda c: c.node.lineno)]

    def inherited_methods(self, class_name: str) -> list[FunctionInfo]:
        """The methods ``class_name`` takes from its local bases without overriding them
        (dunder methods aside), as attribute lookup on an instance resolves them."""
        info = self.classes.get(class_name)
        if info is None:
            return []
        names: dict[str, None] = {}
        for base in info.local_bases:
            for ancestor in self.lineage(base):
                names.update(dict.fromkeys(ancestor.methods))
        found = []
        for name in names:
            if name.startswith("__") or name in info.methods:
                continue
            method = self.find_method(class_name, name)
            if method is not None and method.class_name != class_name:
                found.append(method)
        return found

    def lineage(self, class_name: str, seen: frozenset[str] = frozenset()) -> list[ClassInfo]:
        """``class_name`` and its local ancestors, nearest first."""
        info = self.classes.get(class_name)
        if info is None or class_name in seen:
            return []
        found = [info]
        for local in info.local_bases:
            found += self.lineage(local, seen | {class_name})
        return found

    # --- cheap relevance test -----------------------------------------------------
    def text_of(self, node: ast.AST) -> str:
        start = getattr(node, "lineno", 1) - 1
        end = getattr(node, "end_lineno", start + 1)
        return "\n".join(self.source_lines[start:end])

    def mentions_training(self, node: ast.AST) -> bool:
        return mentions_training_words(self.text_of(node))

    def functions_in_order(self) -> Iterator[FunctionInfo]:
        return iter(sorted(self.functions.values(), key=lambda f: f.node.lineno))
