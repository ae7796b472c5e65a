"""Every ``torch.load`` call of a module, read from the tree and the import table.

Why not from the dataflow's events: whether a load is safe depends on the call alone
(its ``weights_only=`` and ``pickle_module=`` arguments) and on where the file comes
from, never on training state. The dataflow interprets only the functions that look like
training code, so a resume helper, a ``load_checkpoint(self, path)`` method or a
``TrainerCallback`` hook that loads a checkpoint and names no training word was never
seen (issue 28's recall examples). Reading the calls from the tree covers every
function of the module, at the cost of one walk of a file that imports torch.
"""

from __future__ import annotations

import ast

import attrs

from ..finding import Span
from ..syntax.names import ImportTable, qualified_name
from ..syntax.positions import LineIndex
from .events import CallFacts
from .observed import torch_load_facts


@attrs.frozen
class TorchLoad:
    """One ``torch.load(...)`` call: where it is and what its arguments say."""

    span: Span
    call: CallFacts


def torch_loads(tree: ast.Module, imports: ImportTable, lines: LineIndex) -> list[TorchLoad]:
    """The module's calls whose callee resolves, through its imports, to ``torch.load``
    (``torch.load``, ``import torch as th; th.load``, ``from torch import load as tload``),
    in file order. A local function that happens to be called ``load`` is not one."""
    if not imports.imports("torch"):
        return []
    found = [
        TorchLoad(lines.span(node), torch_load_facts(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and qualified_name(node.func, imports) == "torch.load"
    ]
    return sorted(found, key=lambda load: (load.span.line, load.span.column))
