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

The rule checks 1 and 2 on its ``ast`` and records 4, in an
:class:`~torchward.analysis.rules.epoch_reseed.EpochReseed` payload (none: no fix); the
fixer writes one line, without LibCST.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..finding import Applicability, Edit, Finding, Fix, Span
from ..rules.epoch_reseed import EpochReseed
from .edits import SourceLines
from .fixer import PayloadFixer


class SamplerSetEpochMissingFixer(PayloadFixer):
    code = "TW021"

    def build_from_payload(self, lines: SourceLines, finding: Finding) -> Iterator[Fix]:
        reseed = finding.payload
        if not isinstance(reseed, EpochReseed):
            return
        line = reseed.before_line
        if not (1 < line <= len(lines.lines)) or ":" not in lines.line(line - 1):
            return  # not the text the finding was computed on
        code = f"{reseed.loader}.sampler.set_epoch({reseed.epoch})"
        yield Fix(
            f"Call `{code}` at the start of each epoch",
            Applicability.SAFE if reseed.distributed else Applicability.UNSAFE,
            (Edit(Span(line, 0, line, 0), f"{reseed.indent}{code}{lines.ending(line - 1)}"),),
        )
