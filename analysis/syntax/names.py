"""Qualified names: ``nn.CrossEntropyLoss``, ``torch.nn.modules.loss.CrossEntropyLoss``
and ``from torch.nn import CrossEntropyLoss as CE; CE`` are one thing.

The import table maps each name bound by an import to the dotted path it stands for;
:func:`qualified_name` resolves an expression (``F.cross_entropy``) through it, and
:func:`canonical` folds the long internal module paths onto the public ones so that the
catalog lists each API once.
"""

from __future__ import annotations

import ast
import bisect
import functools

# Internal module paths that re-export under a public one (the torch source defines the
# class in the long path; users import either).
_CANONICAL_PREFIXES = (
    ("torch.nn.modules.loss.", "torch.nn."),
    ("torch.nn.modules.activation.", "torch.nn."),
    ("torch.nn.modules.container.", "torch.nn."),
    ("torch.nn.modules.linear.", "torch.nn."),
    ("torch.nn.modules.module.", "torch.nn."),
    ("torch.nn.modules.", "torch.nn."),
    ("torch.nn.parallel.distributed.", "torch.nn.parallel."),
    ("torch.nn.parallel.data_parallel.", "torch.nn.parallel."),
    ("torch.utils.data.dataloader.", "torch.utils.data."),
    ("torch.utils.data.distributed.", "torch.utils.data."),
    ("torch.utils.data.dataset.", "torch.utils.data."),
    ("torch.utils.data.sampler.", "torch.utils.data."),
    ("torch.optim.adamw.", "torch.optim."),
    ("torch.optim.adam.", "torch.optim."),
    ("torch.optim.sgd.", "torch.optim."),
    ("torch.optim.optimizer.", "torch.optim."),
    ("torch.cuda.amp.", "torch.amp."),
    ("torch.cuda.amp.grad_scaler.", "torch.amp."),
    ("torch.amp.grad_scaler.", "torch.amp."),
    ("torch.autograd.grad_mode.", "torch."),
    ("torch.autograd.", "torch.autograd."),
    ("torch.nn.functional.", "torch.nn.functional."),
    ("lightning.pytorch.", "lightning."),
    ("pytorch_lightning.", "lightning."),
    ("lightning.fabric.", "lightning."),
    ("accelerate.accelerator.", "accelerate."),
)
_CANONICAL_EXACT = {
    "torch.nn.parallel.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.DataParallel": "torch.nn.parallel.DataParallel",
    "torch.nn.DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel": "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.autograd.no_grad": "torch.no_grad",
    "torch.autograd.enable_grad": "torch.enable_grad",
    "torch.autograd.set_grad_enabled": "torch.set_grad_enabled",
    "torch.autograd.inference_mode": "torch.inference_mode",
    "pytorch_lightning": "lightning",
    "lightning.pytorch": "lightning",
}


@functools.lru_cache(maxsize=4096)
def canonical(name: str) -> str:
    if name in _CANONICAL_EXACT:
        return _CANONICAL_EXACT[name]
    for prefix, replacement in _CANONICAL_PREFIXES:
        if name.startswith(prefix):
            name = replacement + name[len(prefix) :]
            break
    return _CANONICAL_EXACT.get(name, name)


class ImportTable:
    """Local names bound by ``import`` statements anywhere in a module.

    Given the module's lines, only the top-level statements whose lines mention
    ``import`` are walked (an import statement always does): walking every statement of
    a large file cost a tenth of an editor keystroke."""

    def __init__(self, tree: ast.Module, source_lines: list[str] | None = None) -> None:
        self.names: dict[str, str] = {}
        body = tree.body if source_lines is None else _mentioning_import(tree.body, source_lines)
        for node in _statements(body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        self.names[head] = head
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def imports(self, module_prefix: str) -> bool:
        return any(
            v == module_prefix or v.startswith(module_prefix + ".") for v in self.names.values()
        )


def _mentioning_import(body: list[ast.stmt], source_lines: list[str]) -> list[ast.stmt]:
    marked = [number for number, line in enumerate(source_lines, 1) if "import" in line]
    kept = []
    for statement in body:
        at = bisect.bisect_left(marked, statement.lineno)
        if at < len(marked) and marked[at] <= (statement.end_lineno or statement.lineno):
            kept.append(statement)
    return kept


def _statements(body: list[ast.stmt]):
    """Every statement at any depth, without descending into expressions: imports are
    statements, and walking expressions too costs most of the time on large files."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if children:
                stack.extend(reversed(children))


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attribute accesses on a name, else None."""
    cls = node.__class__
    if cls is ast.Name:  # most calls (a name, or not a chain): a few hundred thousand a run
        return node.id  # type: ignore[attr-defined]
    if cls is not ast.Attribute:
        return None
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def qualified_name(
    node: ast.AST, imports: ImportTable, local_names: frozenset[str] = frozenset()
) -> str | None:
    """The canonical qualified name of an expression that refers to an imported API.

    ``local_names`` are names the current scope rebinds, which shadow imports.
    """
    path = dotted(node)
    return None if path is None else qualified_path(path, imports, local_names)


def qualified_path(
    path: str, imports: ImportTable, local_names: frozenset[str] = frozenset()
) -> str | None:
    """:func:`qualified_name` of an expression already spelt as its dotted ``path``."""
    head, _, rest = path.partition(".")
    if head in local_names or head not in imports.names:
        return None
    base = imports.names[head]
    return canonical(f"{base}.{rest}" if rest else base)
