"""TW021 sampler-set-epoch-missing: insert ``loader.sampler.set_epoch(epoch)``.

The finding's span is the iterated expression of the training loop (``loader``,
``enumerate(tqdm(loader))``); its second evidence is the epoch loop's header. The call
goes first in the epoch loop's body. Proof obligations (any failure: no fix):

1. The epoch loop is ``for NAME in range(...)`` (also inside ``tqdm``/``trange``), so
   ``NAME`` is a distinct integer every epoch; any other iterable might pass a
   non-integer, and a ``while`` loop has no counter to pass.
2. The loader is a plain name or attribute, reached through ``enumerate``/``tqdm``/``iter``
   wrappers, and it is bound nowhere inside the epoch loop, so at the top of the loop
   it is the loader iterated below.
3. The rule saw that loader built with ``sampler=`` a shuffling ``DistributedSampler``
   (that is what the finding means), and ``DataLoader.sampler`` is that sampler.

4. The sampler is a ``DistributedSampler`` on every path, not only on the one the rule
   followed: the ``DistributedSampler(...)`` call the finding points at is passed
   straight as ``sampler=``, or assigned to a name that nothing else in its function
   assigns. The common ``sampler = RandomSampler(d) if local_rank == -1 else
   DistributedSampler(d)`` (or the same as an ``if``/``else``) leaves a single-process
   run with a ``RandomSampler``, which has no ``set_epoch``: the fix would raise there,
   so it is offered as unsafe.

The only change is then the shuffling order of every epoch after the first: safe.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .optimizer_in_loop import bound_names
from .tree import Rewrite, statement_line

_WRAPPERS = {"enumerate", "tqdm", "iter"}
_COUNTERS = {"range", "trange"}


def _unwrapped(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if name not in _WRAPPERS or not positional:
            return node
        node = positional[0].value
    return node


def _counts(loop: cst.For) -> bool:
    iterable = loop.iter
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, (cst.Name, cst.Attribute)):
        func = iterable.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value
        if name in _COUNTERS:
            return True
        if name == "tqdm" and iterable.args:
            inner = iterable.args[0].value
            return isinstance(inner, cst.Call) and getattr(inner.func, "value", None) == "range"
    return False


class SamplerSetEpochMissingFixer(Fixer):
    code = "TW021"

    def build(self, tree, finding):
        if len(finding.evidence) < 2:
            return
        header = finding.evidence[1].span
        loops = tree.loops_around(finding.span)
        epoch = next((lp for lp in loops if tree.spans[lp].line == header.line), None)
        if not isinstance(epoch, cst.For) or not isinstance(epoch.target, cst.Name):
            return
        if not _counts(epoch) or not isinstance(epoch.body, cst.IndentedBlock):
            return  # obligation 1
        iterated = next(
            (
                lp.iter
                for lp in tree.within(tree.spans[epoch], cst.For)
                if tree.spans[lp.iter] == finding.span
            ),
            None,
        )
        loader = _unwrapped(iterated) if iterated is not None else None
        if not isinstance(loader, (cst.Name, cst.Attribute)):
            return  # obligation 2
        name = tree.text(loader)
        if name in bound_names(tree, epoch.body):
            return  # obligation 2: rebound in the epoch loop
        rewrite = Rewrite(tree)
        rewrite.insert_before(
            epoch.body.body[0],
            statement_line(f"{name}.sampler.set_epoch({epoch.target.value})"),
        )
        yield self.fix(
            f"Call `{name}.sampler.set_epoch({epoch.target.value})` at the start of each epoch",
            Applicability.SAFE if always_distributed(tree, finding) else Applicability.UNSAFE,
            rewrite,
        )


def always_distributed(tree, finding) -> bool:
    """Obligation 4: the ``DistributedSampler(...)`` in the evidence is the loader's
    sampler on every path (passed straight as ``sampler=``, or bound to a name that is
    assigned nowhere else in its function)."""
    for item in finding.evidence:
        call = tree.at(item.span, cst.Call) if not item.path else None
        if call is None or not tree.text(call.func).endswith("DistributedSampler"):
            continue
        parent = tree.parents.get(call)
        if isinstance(parent, cst.Arg):
            return parent.keyword is not None and parent.keyword.value == "sampler"
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return False
        target = parent.targets[0].target
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return False
        bound = tree.text(target)
        scope = tree.function_of(parent)
        others = [
            assign
            for assign in tree.within(tree.spans[scope], cst.AssignTarget)
            if tree.text(assign.target) == bound and assign is not parent.targets[0]
        ]
        return not others
    return False
