"""TW015 pin-memory-without-workers: drop ``pin_memory=True``, or add ``num_workers=4``.

The finding's span is the ``DataLoader(...)`` call. Proof obligations: ``pin_memory`` is
passed by keyword as the literal ``True`` (a positional one is left alone: removing it
would shift the arguments after it), and for the second fix ``num_workers`` is absent or
a keyword ``0``. Both fixes are unsafe (see the rule's Fix safety): dropping the flag
makes ``non_blocking`` copies synchronous; workers need a picklable dataset and
``__main__`` guards.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .tree import Rewrite


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


class PinMemoryWithoutWorkersFixer(Fixer):
    code = "TW015"

    def build(self, tree, finding):
        call = tree.at(finding.span, cst.Call)
        if call is None:
            return
        pin = _keyword(call, "pin_memory")
        if pin is None or not (isinstance(pin.value, cst.Name) and pin.value.value == "True"):
            return
        drop = Rewrite(tree)
        drop.replace(call, lambda node: _without(node, "pin_memory"))
        yield self.fix("Drop `pin_memory=True`", Applicability.UNSAFE, drop)
        workers = _keyword(call, "num_workers")
        if workers is not None and not (
            isinstance(workers.value, cst.Integer) and workers.value.value == "0"
        ):
            return
        add = Rewrite(tree)
        if workers is not None:
            add.replace(workers.value, cst.Integer("4"))
        else:
            add.replace(call, _with_workers)
        yield self.fix("Load in worker processes: `num_workers=4`", Applicability.UNSAFE, add)


def _without(call: cst.CSTNode, name: str) -> cst.CSTNode:
    """``call`` without its keyword argument ``name``; when that was the last argument, the
    one before it takes over its comma (or lack of one), so the layout stays as written."""
    assert isinstance(call, cst.Call)
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == name)
    removed = args.pop(index)
    if index == len(args) and args:
        args[-1] = args[-1].with_changes(comma=removed.comma)
    return call.with_changes(args=args)


def _with_workers(call: cst.CSTNode) -> cst.CSTNode:
    """``call`` with ``num_workers=4`` appended in the layout of its other arguments."""
    assert isinstance(call, cst.Call)
    args = list(call.args)
    last = args[-1]
    separator = (
        args[-2].comma
        if len(args) > 1 and isinstance(args[-2].comma, cst.Comma)
        else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    )
    added = cst.Arg(
        keyword=cst.Name("num_workers"),
        value=cst.Integer("4"),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
        comma=last.comma,
    )
    return call.with_changes(args=[*args[:-1], last.with_changes(comma=separator), added])
