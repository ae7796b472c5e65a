"""Which ``nn.Module`` classes keep submodules in plain lists and dicts.

``nn.Module.__setattr__`` registers a module (and an ``nn.ModuleList`` /
``nn.ModuleDict``) assigned to an attribute; a Python ``list`` or ``dict`` of modules is
just an attribute: its modules are not in ``parameters()``, ``state_dict()``, ``.to()``,
``.train()``/``.eval()``. This is a question about the static shape of a class (its
methods' assignments to ``self``), answered from the semantic model, not the dataflow:
the model files where it matters often contain no training code at all.

Evidence is by binding: an element counts as a module only when it is a constructor
call of a module class named by its canonical qualified name (``nn.Linear(...)``,
``torchvision.models.resnet18()``) or of an ``nn.Module`` subclass defined in the file.
Lists of modules that were passed in (``self.teacher = [teacher]``, the usual trick to
keep a module out of the parent's parameters) are not considered.
"""

from __future__ import annotations

import ast
import re

import attrs

from ..effects import table as library_effects
from ..syntax.names import ImportTable, dotted, qualified_name
from . import catalog
from .semantic import ModuleIndex
from .values import Kind

# A cheap pre-test on the text: an attribute of ``self`` bound to a list/dict display or
# appended to. Most files of a large tree fail it and never get a semantic model.
_CANDIDATE = re.compile(
    r"self\.\w+\s*(?::[^=\n]*)?=\s*[\[{][^\n]*[\w.]\("  # self.x = [Layer(...) ...] / {k: Layer(...)}
    r"|self\.\w+\s*=\s*[\[{]\s*\n\s*[^\n]*[\w.]\("  # the same, spread over lines
    r"|\.(?:append|insert)\(\s*[\w.]*?[A-Z]\w*\("  # xs.append(Layer(...))
    r"|\]\s*=\s*[\w.]*?[A-Z]\w*\("  # xs[k] = Layer(...)
)
_READING_BUILTINS = {"len", "enumerate", "zip", "reversed", "iter", "print", "isinstance", "range"}
_REGISTERING_CALLS = {"add_module", "register_module", "setattr", "register_parameter"}
# Uses of a list that ``nn.ModuleList`` supports the same way (and of a dict that
# ``nn.ModuleDict`` supports): iterating, indexing, len, and adding.
LIST_METHODS = {"append", "extend", "insert"}
DICT_METHODS = {"items", "keys", "values", "get", "update"}


@attrs.frozen
class PlainContainer:
    """``self.<attribute>`` of class ``class_name`` holds modules in a plain container."""

    class_name: str
    attribute: str
    container: str  # "list" or "dict"
    binding: ast.AST  # the statement that binds the plain container to the attribute
    value: ast.expr  # the container expression bound (a display, a comprehension, a name)
    module: ast.Call  # one module constructed into it (evidence)


def plain_module_containers(index: ModuleIndex, source: str) -> list[PlainContainer]:
    if not _may_define_a_module(source) or "self." not in source:
        return []
    if _CANDIDATE.search(source) is None:
        return []
    found = []
    for name, info in index.classes.items():
        if "." in name and name.split(".")[-1] in index.classes:
            continue  # a top-level class is indexed twice (by name and qualified name)
        if not index.is_module_class(name):
            continue
        found.extend(_in_class(index, name, info.node))
    return found


def _may_define_a_module(source: str) -> bool:
    """A cheap text test: a module class names ``Module`` in its bases (``nn.Module``,
    ``LightningModule``) or derives from a package whose classes are model bases
    (``transformers.PreTrainedModel``: the table's ``[models] base_packages``), which the
    file then names in an import."""
    if "Module" in source:
        return True
    packages = library_effects.current().model_base_packages
    return any(package.split(".")[0] in source for package in packages)


def _in_class(index: ModuleIndex, class_name: str, node: ast.ClassDef) -> list[PlainContainer]:
    """One pass over the class's own nodes, collecting what the verdict needs."""
    bindings: dict[str, list[tuple[ast.AST, ast.expr]]] = {}
    passed_on: set[str] = set()  # paths handed whole to a call
    filled: dict[str, ast.Call] = {}  # path -> a module constructor appended / stored into it
    for n in _own_nodes(node):
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for target in targets:
                if isinstance(target, ast.Subscript):
                    path = dotted(target.value)
                    if path and _is_module_constructor(index, n.value):
                        filled.setdefault(path, n.value)  # type: ignore[arg-type]
                    continue
                path = dotted(target)
                if path and path.startswith("self.") and path.count(".") == 1:
                    bindings.setdefault(path[5:], []).append((n, n.value))
        elif isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _REGISTERING_CALLS:
                return []  # modules registered by hand (add_module in a loop)
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("append", "insert")
                and n.args
                and _is_module_constructor(index, n.args[-1])
            ):
                path = dotted(func.value)
                if path:
                    filled.setdefault(path, n.args[-1])  # type: ignore[arg-type]
            if not (isinstance(func, ast.Name) and func.id in _READING_BUILTINS):
                for arg in [*n.args, *(k.value for k in n.keywords)]:
                    inner = arg.value if isinstance(arg, ast.Starred) else arg
                    path = dotted(inner)
                    if path:
                        passed_on.add(path)
    found = []
    for attribute, bound in bindings.items():
        plain = [(stmt, value) for stmt, value in bound if _container_kind(value) is not None]
        if not plain or len(plain) != len(bound) or f"self.{attribute}" in passed_on:
            continue  # also bound to something else, or handed on (wrapped, registered)
        for stmt, value in plain:
            module = _module_element(index, value) or filled.get(f"self.{attribute}")
            if module is None and isinstance(value, ast.Name):
                module = filled.get(value.id)
            if module is not None:
                kind = _container_kind(value) or "list"
                found.append(PlainContainer(class_name, attribute, kind, stmt, value, module))
                break
    return found


def _own_nodes(node: ast.ClassDef):
    """Every node of the class's own methods (not of nested classes)."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, ast.ClassDef):
            continue
        stack.extend(ast.iter_child_nodes(current))


def _container_kind(value: ast.expr) -> str | None:
    if isinstance(value, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(value, ast.Name):
        return "list"  # a local list, counted only if modules are appended to it
    return None


def _is_module_constructor(index: ModuleIndex, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name) and node.func.id in index.classes:
        return index.is_module_class(node.func.id)
    name = qualified_name(node.func, index.imports)
    if name is None or name in catalog.MODEL_PASSTHROUGH_FUNCTIONS:
        return False
    return (
        catalog.kind_of_constructor(name) is Kind.MODEL
        and name not in catalog.NON_MODULE_NN_NAMES
        and not name.endswith(("ModuleList", "ModuleDict", "ParameterList", "ParameterDict"))
    )


def _module_element(index: ModuleIndex, value: ast.expr) -> ast.Call | None:
    if isinstance(value, ast.List):
        elements = list(value.elts)
    elif isinstance(value, ast.Dict):
        elements = list(value.values)
    elif isinstance(value, ast.ListComp):
        elements = [value.elt]
    elif isinstance(value, ast.DictComp):
        elements = [value.value]
    else:
        return None
    return next(
        (e for e in elements if isinstance(e, ast.Call) and _is_module_constructor(index, e)), None
    )


_MODE_DEPENDENT = ("Dropout", "BatchNorm", "InstanceNorm", "RNN", "LSTM", "GRU", "Transformer")


def is_mode_dependent_layer(name: str) -> bool:
    """``name`` (qualified) is a ``torch.nn`` layer or functional whose output depends on
    the module's mode: dropout, batch or instance norm, a recurrent or transformer layer."""
    leaf = name.rsplit(".", 1)[-1]
    if name.startswith("torch.nn.functional."):
        return "dropout" in leaf
    return name.startswith("torch.nn.") and any(marker in leaf for marker in _MODE_DEPENDENT)


def builds_mode_dependent_layer(construction: ast.Call, imports: ImportTable) -> bool:
    """The ``torch.nn`` construction ``construction`` (``nn.Sequential(nn.Conv2d(...),
    nn.BatchNorm2d(8), ...)``) builds, anywhere in its arguments, a layer whose output
    depends on the mode. Positive evidence only: a layer from elsewhere counts as not."""
    return any(
        isinstance(node, ast.Call)
        and (name := qualified_name(node.func, imports)) is not None
        and is_mode_dependent_layer(name)
        for node in ast.walk(construction)
    )


def is_mode_sensitive(
    index: ModuleIndex, class_name: str, seen: frozenset[str] = frozenset()
) -> bool:
    """Whether ``model.train()`` / ``model.eval()`` can change what an instance of the local
    module class computes: it (or a local module class it builds) constructs dropout, batch
    or instance norm, a recurrent layer or a transformer layer, reads ``self.training``,
    calls a functional dropout, or builds a module the file does not define (whose layers
    are unknown, so assumed sensitive)."""
    info = index.classes.get(class_name)
    if info is None or class_name in seen:
        return True
    for local in info.local_bases:
        if is_mode_sensitive(index, local, seen | {class_name}):
            return True
    if any(not b.startswith("torch.nn.") for b in info.base_names):
        return True  # a library model class (transformers, timm): its layers are unknown
    for node in ast.walk(info.node):
        if isinstance(node, ast.Attribute) and node.attr == "training":
            return True
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in index.classes:
            if index.is_module_class(node.func.id) and is_mode_sensitive(
                index, node.func.id, seen | {class_name}
            ):
                return True
            continue
        name = qualified_name(node.func, index.imports)
        if name is None:
            continue
        if is_mode_dependent_layer(name):
            return True
        if name.startswith("torch.nn."):
            continue
        if catalog.kind_of_constructor(name) is Kind.MODEL:
            return True
    return False
