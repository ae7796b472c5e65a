"""TW023 unsafe-torch-load: add ``weights_only=True`` to the ``torch.load(...)`` call.

Proof obligations: the analysis proved that the loaded file holds only tensors,
containers and primitives (:attr:`~torchward.analysis.finding.Proof.TENSOR_CHECKPOINT`:
the project writes it at the same path, and every write it may read saves a
``state_dict()``, a tensor, a number or a literal container of those); without that
proof no fix is offered, since a checkpoint holding an argparse ``Namespace``, a whole
model or a NumPy array would stop loading. The call at the finding's span passes no
``**kwargs`` or ``*args`` (either could already carry ``weights_only`` or a
``pickle_module``), no ``weights_only`` and no ``pickle_module`` (which
``weights_only=True`` rejects). Always unsafe: a file an older version of the code wrote
may hold more than the code writes today.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability, Proof
from .fixer import Fixer
from .tree import Rewrite


class UnsafeTorchLoadFixer(Fixer):
    code = "TW023"

    def build(self, tree, finding):
        if Proof.TENSOR_CHECKPOINT not in finding.proofs:
            return
        call = tree.at(finding.span, cst.Call)
        if call is None or not call.args:
            return
        if any(arg.star for arg in call.args):
            return
        keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
        if keywords & {"weights_only", "pickle_module"}:
            return
        rewrite = Rewrite(tree)
        rewrite.replace(call, _with_weights_only)
        yield self.fix("Load tensors only: `weights_only=True`", Applicability.UNSAFE, rewrite)


def _with_weights_only(call: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(call, cst.Call)
    args = list(call.args)
    last = args[-1]
    added = cst.Arg(
        keyword=cst.Name("weights_only"),
        value=cst.Name("True"),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
        comma=last.comma,
    )
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return call.with_changes(args=[*args[:-1], last.with_changes(comma=separator), added])
