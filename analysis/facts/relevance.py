"""Which files and functions are worth interpreting at all.

The dataflow costs far more than parsing, and in a large tree most files and most
functions cannot trigger any rule. These cheap tests — literal and regex pre-checks over
source text, and a closure over calls by name — decide what the analyzer interprets.
Measured on PyTorch's own tree, they leave about a tenth of the files to the dataflow.
"""

from __future__ import annotations

import fnmatch
import os
import re
import weakref
from typing import TYPE_CHECKING

from ..syntax.names import ImportTable, canonical
from . import catalog
from .semantic import FunctionInfo, ModuleIndex, mentions_training_words
from .values import Kind

if TYPE_CHECKING:
    from .events import Trace

# Callee names too common to follow: every ``super().__init__()`` and ``x.backward()``
# would otherwise pull its caller in (autograd Functions define ``backward``).
_GENERIC_CALLEES = {
    "__init__",
    "__call__",
    "forward",
    "backward",
    "step",
    "apply",
    "run",
    "get",
    "update",
    "reset",
}
_CALLED_NAME = re.compile(r"(\w+)\s*\(")
#: the names each function calls, by module index (computed once, by relevance)
_CALLS_BY_FUNCTION: weakref.WeakKeyDictionary[ModuleIndex, dict[str, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
#: function text -> (the names it calls, whether it mentions training words)
_TEXT_FACTS: dict[str, tuple[frozenset[str], bool]] = {}
_MAX_TEXT_FACTS = 4_000  # the functions of the few documents being edited
TRAINING_KINDS = {Kind.MODEL, Kind.CRITERION, Kind.OPTIMIZER, Kind.LOADER, Kind.ENGINE}

_OTHER_FRAMEWORKS = (
    "mxnet",
    "tensorflow",
    "jax",
    "paddle",
    "mindspore",
    "oneflow",
    "keras",
    "flax",
    "chainer",
)
_TORCH_WORLD = (
    "torch",
    "lightning",
    "pytorch_lightning",
    "transformers",
    "accelerate",
    "deepspeed",
    "timm",
    "torchvision",
)


def is_other_framework(imports: ImportTable) -> bool:
    """The file is written for another framework (d2l's MXNet chapters): ``loss.backward()``
    and ``trainer.step()`` there mean something else, so no PyTorch rule applies."""
    return any(imports.imports(f) for f in _OTHER_FRAMEWORKS) and not any(
        imports.imports(t) for t in _TORCH_WORLD
    )


def training_import_aliases(index: ModuleIndex) -> frozenset[str]:
    """Local names of imported losses, loaders and DDP wrappers (``cross_entropy as ce``)."""
    found = set()
    for alias, target in index.imports.names.items():
        name = canonical(target)
        if (
            name in catalog.LOSS_CLASSES
            or catalog.is_functional_loss(name)
            or name in catalog.DDP_WRAPPERS
            or name in catalog.LOADERS
        ):
            found.add(alias)
    return frozenset(found)


def _text_facts(text: str) -> tuple[frozenset[str], bool]:
    """What relevance reads from a function's text, remembered by the text: the language
    server re-checks every function of a file on each keystroke, and all but the edited
    one are unchanged (the regexes cost a sixth of a keystroke at 1,000 lines)."""
    facts = _TEXT_FACTS.get(text)
    if facts is None:
        if len(_TEXT_FACTS) >= _MAX_TEXT_FACTS:
            _TEXT_FACTS.clear()
        facts = (frozenset(_CALLED_NAME.findall(text)), mentions_training_words(text))
        _TEXT_FACTS[text] = facts
    return facts


def functions_worth_analysing(index: ModuleIndex, kinded_globals: frozenset[str]) -> set[str]:
    """Cheap relevance, so most functions of a large file are never interpreted.

    A function is worth analysing when its text has training words, when it uses a
    module-level model, criterion, optimizer or loader (``crit(net(x), y)`` mentions
    neither), or when it calls — by name, transitively — a function or class that is
    (``trainer.fit()`` whose ``fit`` calls ``self.train_epoch()``).
    """
    calls: dict[str, frozenset[str]] = {}
    _CALLS_BY_FUNCTION[index] = calls
    worth: set[str] = set()
    uses_global = (
        re.compile(r"\b(?:{})\b".format("|".join(map(re.escape, kinded_globals))))
        if kinded_globals
        else None
    )
    for info in index.functions.values():
        text = index.text_of(info.node)
        calls[info.qualname], mentions = _text_facts(text)
        if mentions or (uses_global and uses_global.search(text)):
            worth.add(info.qualname)
    changed = True
    while changed:
        relevant_names = {q.rsplit(".", 1)[-1] for q in worth}
        relevant_names |= {
            q.split(".")[0] for q in worth if "." in q
        }  # a class whose method is relevant
        relevant_names -= _GENERIC_CALLEES
        changed = False
        for qualname, names in calls.items():
            if qualname not in worth and names & relevant_names:
                worth.add(qualname)
                changed = True
    return worth


def callers_first(index: ModuleIndex, worth: set[str]) -> list[FunctionInfo]:
    """The functions of ``worth`` in the order to analyse them on their own: those no
    other function of the file calls (entry points) first, then the rest, each group in
    file order.

    A helper is then analysed through its callers, in their context, before anything
    analyses it alone with guessed arguments: the ``@torch.no_grad()`` evaluation method
    reaches the helper defined above it, instead of that helper being judged first with
    gradients on.
    """
    chosen = [info for info in index.functions_in_order() if info.qualname in worth]
    known = _CALLS_BY_FUNCTION.get(index, {})
    called: set[str] = set()
    for info in chosen:
        names = known.get(info.qualname)
        if names is None:
            names = _text_facts(index.text_of(info.node))[0]
        called |= names - {info.node.name}
    entry = [info for info in chosen if info.node.name not in called]
    return entry + [info for info in chosen if info.node.name in called]


# pytest's default ``python_files``: the modules it collects as tests
_TEST_MODULES = ("test_*.py", "*_test.py")


def in_test_code(facts, trace: Trace) -> bool:
    """The trace is test code, by the conventions test runners collect it by: a module
    named ``test_*.py`` / ``*_test.py``, a function or method named ``test_*`` (pytest),
    or a ``test*`` method of a ``TestCase`` (unittest, and the frameworks built on it).
    Its loops check a result over a few steps: their throughput and the memory they keep
    are not what a training run pays for, so the performance and memory rules (TW007,
    TW001) stay quiet there."""
    if any(fnmatch.fnmatch(os.path.basename(facts.path), p) for p in _TEST_MODULES):
        return True
    outermost = trace.function.split(".<locals>.", 1)[0]  # a closure belongs to its function
    info = facts.index.functions.get(outermost)
    if info is None:
        return False
    name = info.node.name
    if name.startswith("test_"):
        return True
    return (
        name.startswith("test")
        and info.class_name is not None
        and any(b.rsplit(".", 1)[-1].endswith("TestCase") for b in _bases(facts, info.class_name))
    )


def _bases(facts, class_name: str) -> set[str]:
    """Every base a class names, imported (canonical) or local, through its local bases."""
    index = facts.index
    found: set[str] = set()
    todo, seen = [class_name], set()
    while todo:
        info = index.classes.get(todo.pop())
        if info is None or info.name in seen:
            continue
        seen.add(info.name)
        found |= set(info.base_names) | set(info.local_bases)
        todo.extend(info.local_bases)
    return found
