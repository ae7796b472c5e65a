"""TW015 pin-memory-without-workers: drop ``pin_memory=True``, or add ``num_workers=4``.

The finding's span is the ``DataLoader(...)`` call. The rule hands over a
:class:`~torchward.analysis.rules.pin_memory_without_workers.PinMemoryArguments`
payload: where the keyword is, the range that drops it with its comma (the arguments
around it keep their layout), the value of a ``num_workers=`` keyword and where a new
last argument goes. Proof obligations: ``pin_memory`` is passed by keyword as the
literal ``True`` (a positional one gets no payload: removing it would shift the
arguments after it), and for the second fix ``num_workers`` is absent or a keyword
``0``. Both fixes are unsafe (see the rule's Fix safety): dropping the flag makes
``non_blocking`` copies synchronous; workers need a picklable dataset and ``__main__``
guards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..finding import Applicability, Edit, Finding, Fix
from ..rules.pin_memory_without_workers import PinMemoryArguments
from .edits import SourceLines
from .fixer import PayloadFixer

_PINNED = re.compile(r"pin_memory\s*=\s*True")


class PinMemoryWithoutWorkersFixer(PayloadFixer):
    code = "TW015"

    def build_from_payload(self, lines: SourceLines, finding: Finding) -> Iterator[Fix]:
        arguments = finding.payload
        if not isinstance(arguments, PinMemoryArguments):
            return  # pin_memory passed by position, or a layout the rule could not measure
        if not _PINNED.fullmatch(lines.text_of(arguments.pin_memory)):
            return  # not the literal True, or not the text the finding was computed on
        if not lines.text_of(finding.span).endswith(")"):
            return
        yield Fix("Drop `pin_memory=True`", Applicability.UNSAFE, (Edit(arguments.drop, ""),))
        add = _workers(lines, arguments)
        if add is not None:
            yield Fix("Load in worker processes: `num_workers=4`", Applicability.UNSAFE, (add,))


def _workers(lines: SourceLines, arguments: PinMemoryArguments) -> Edit | None:
    """``num_workers=0`` made ``4``, or ``num_workers=4`` appended after the last argument
    with the separator written before it (``, `` after a single argument)."""
    if arguments.workers_value is not None:
        if lines.text_of(arguments.workers_value) != "0":
            return None  # workers given another way: nothing to turn on
        return Edit(arguments.workers_value, "4")
    if arguments.append_at is None:
        return None
    separator = ", " if arguments.separator is None else lines.text_of(arguments.separator)
    if not separator.lstrip().startswith(","):
        return None
    return Edit(arguments.append_at, f"{separator}num_workers=4")
