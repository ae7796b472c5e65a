"""TW012 ddp-without-distributed-sampler: give the loader a ``DistributedSampler``.

The finding's span is the ``DataLoader(...)`` call. The fix passes
``sampler=DistributedSampler(dataset)`` (replacing ``sampler=None``) and moves the
loader's ``shuffle`` into the sampler, since a loader with a sampler must not shuffle:
``shuffle=True`` becomes the sampler's default, an absent or false ``shuffle`` becomes
``shuffle=False`` (the loader did not shuffle before; now each rank still does not).
``DistributedSampler`` is imported from ``torch.utils.data``, merged into an existing
``from torch.utils.data import ...`` line. The dataset expression is repeated, so it must
be a plain name or attribute (no fix for ``DataLoader(make_dataset())``).

Unsafe: each rank now sees its own shard (the point), the epoch length per rank
shrinks, and ``sampler.set_epoch(epoch)`` still has to be called each epoch for the
shuffle to change between epochs — a person must look.
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .imports import Imports
from .tree import Rewrite, expression


class DdpWithoutDistributedSamplerFixer(Fixer):
    code = "TW012"

    def build(self, tree, finding):
        call = tree.at(finding.span, cst.Call)
        if call is None or not tree.text(call.func).endswith("DataLoader"):
            return
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
        dataset = (
            positional[0].value
            if positional
            else keywords["dataset"].value
            if "dataset" in keywords
            else None
        )
        if not isinstance(dataset, (cst.Name, cst.Attribute)) or len(positional) > 2:
            return
        shuffle = keywords.get("shuffle")
        rewrite = Rewrite(tree)
        sampler_class = Imports(tree, rewrite).name(
            "torch.utils.data", "DistributedSampler", also_from=("torch.utils.data.distributed",)
        )
        shuffle_text = tree.text(shuffle.value) if shuffle is not None else "False"
        extra = "" if shuffle_text == "True" else f", shuffle={shuffle_text}"
        sampler = expression(f"{sampler_class}({tree.text(dataset)}{extra})")
        args = [
            arg for arg in call.args if arg is not shuffle and arg is not keywords.get("sampler")
        ]
        new_arg = cst.Arg(
            keyword=cst.Name("sampler"),
            value=sampler,
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
        )
        trailing = call.args[-1].comma
        args = [
            arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            if isinstance(arg.comma, cst.MaybeSentinel)
            else arg
            for arg in args
        ]
        args.append(new_arg.with_changes(comma=trailing))
        rewrite.replace(call, lambda node: node.with_changes(args=args))
        yield self.fix(
            f"Pass `sampler={tree.module.code_for_node(sampler)}` (and call `set_epoch` each epoch)",
            Applicability.UNSAFE,
            rewrite,
        )
