"""TW019 zero-grad-between-backward-and-step: move the reset to just after the step.

The finding's span is the reset call (``opt.zero_grad()``); its first evidence is the
step it precedes. The rule checks the obligations below on its ``ast`` and hands over a
:class:`~torchward.analysis.rules.zero_grad_move.ResetMove` payload when they hold (no
payload: no fix); the fixer moves whole lines, without LibCST.

1. The reset and the step are each alone on a statement line (``opt.zero_grad()`` and
   ``opt.step()`` / ``scaler.step(opt)``, nothing else on the line), in the same block.
2. The reset comes before the step in that block.
3. No statement between them calls ``backward``, ``step``, ``zero_grad`` or
   ``autograd.grad``: the gradients the step now sees are exactly those of the backward
   before the reset, and the reset still runs before the next backward.

4. No call between them is named like a training step or a loss (``train_step(...)``,
   ``compute_loss(...)``): a helper from another file may run a backward the analysis
   never saw, whose gradients the moved reset would no longer clear (otherwise unsafe).

Moving the reset then changes only what the step (and any clipping or logging between)
sees: the computed gradients instead of zeros. That is the bug, so the fix is safe.
The reset's leading blank and comment lines go away with it; its own lines (a trailing
comment included) are written again after the step's.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..finding import Applicability, Edit, Finding, Fix, Span
from ..rules.zero_grad_move import ResetMove
from .edits import SourceLines
from .fixer import PayloadFixer


class ZeroGradBeforeStepFixer(PayloadFixer):
    code = "TW019"

    def build_from_payload(self, lines: SourceLines, finding: Finding) -> Iterator[Fix]:
        move = finding.payload
        if not isinstance(move, ResetMove):
            return
        reset, step = lines.text_of(finding.span), lines.text_of(move.step)
        if not (
            move.first_line <= move.reset_line <= finding.span.line <= move.last_line
            and move.last_line < move.step.line <= move.after_line < len(lines.lines) + 1
            and "zero_grad" in reset
            and ".step" in step
        ):
            return  # not the text the finding was computed on
        moved = "".join(lines.lines[move.reset_line - 1 : move.last_line])
        removal = Edit(Span(move.first_line, 0, move.last_line + 1, 0), "")
        ending = lines.ending(move.after_line)
        if lines.lines[move.after_line - 1].endswith(("\n", "\r")):
            insertion = Edit(Span(move.after_line + 1, 0, move.after_line + 1, 0), moved)
        else:  # the step ends the text without a line break
            end = len(lines.line(move.after_line))
            insertion = Edit(
                Span(move.after_line, end, move.after_line, end),
                ending + moved.rstrip("\r\n"),
            )
        yield Fix(
            f"Reset the gradients after the step: move `{reset}` below `{step}`",
            Applicability.UNSAFE if move.unseen else Applicability.SAFE,
            (removal, insertion),
        )
