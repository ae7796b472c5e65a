"""TW011 stuck-eval-mode: insert ``model.train()`` at the top of the epoch loop.

The finding's span is the switch to eval mode (``model.eval()``, ``model.train(False)``)
or a call of a helper that makes it (``evaluate(model, loader)``). The model expression
is the switch's receiver; for a helper defined in this file it is the argument passed
for the parameter the helper switches. The epoch loop is the innermost loop around the
switch that also holds the training step the evidence points at. ``model.train()`` goes
first in that loop's body. A helper from another file, or a model the fixer cannot
name, gets no fix. The rule finds all of that on its ``ast`` and hands it over as a
:class:`~torchward.analysis.rules.train_mode_restore.TrainModeRestore` payload; the
fixer writes one line, without LibCST.

The insertion is **safe** only when every epoch then starts exactly as the first did:

1. *The first epoch trained in train mode, provably.* Before the loop, in the same
   function, the model is switched with ``model.train()`` / ``model.train(True)``, or
   built by a ``torch.nn`` constructor or a class defined in this file (a fresh module
   is in train mode). A model received from a caller, or loaded by a function such as
   ``from_pretrained`` (which returns it in eval mode), may have been put in eval mode
   on purpose (frozen batch-norm fine-tuning): then the fix would change the first
   epoch too.
2. *Writing the model again is harmless.* Its expression is a name or a chain of
   attributes, so ``model.train()`` evaluates nothing else.

Otherwise it is offered as **unsafe**.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..finding import Applicability, Edit, Finding, Fix, Span
from ..rules.train_mode_restore import TrainModeRestore
from .edits import SourceLines
from .fixer import PayloadFixer


class StuckEvalModeFixer(PayloadFixer):
    code = "TW011"

    def build_from_payload(self, lines: SourceLines, finding: Finding) -> Iterator[Fix]:
        restore = finding.payload
        if not isinstance(restore, TrainModeRestore):
            return
        line = restore.before_line
        if not (1 < line <= len(lines.lines)) or ":" not in lines.line(line - 1):
            return  # not the text the finding was computed on
        ending = lines.ending(line - 1)
        code = f"{restore.model}.train()"
        trains_on_entry = (
            restore.entry is not None
            and bool(restore.entry_text)
            and lines.text_of(restore.entry) == restore.entry_text
        )
        yield Fix(
            f"Insert `{code}` as the first statement of `{restore.loop}`",
            Applicability.SAFE if restore.plain and trains_on_entry else Applicability.UNSAFE,
            (Edit(Span(line, 0, line, 0), f"{restore.indent}{code}{ending}"),),
        )
