"""TW003 missing-zero-grad: insert ``optimizer.zero_grad(set_to_none=True)`` after the step.

The finding's span is the optimizer step (``opt.step()``, ``self.opt.step()``, or a
scaler's ``scaler.step(opt)``: a receiver bound to a constructor that the library-effects
table says builds a scaler, whose ``step`` entry names the argument that is stepped). The reset goes on the line after the statement
that steps, at its indentation, written with the optimizer's own expression. The rule
records all of that, and the facts below, in the finding's
:class:`~torchward.analysis.rules.missing_zero_grad_reset.ZeroGradReset` payload: the
fix is one text insertion, built without parsing the file again. After the
step rather than at the top of the loop: when the step sits inside an accumulation
``if``, a reset at the top of the loop would throw the accumulated gradients away, while
a reset after the step is right in both shapes. When the loop only steps through a
helper (``train_step(model, x, opt)``), there is no statement to anchor to: no fix.

The reset changes the next update by removing the stale gradients — the fix. It is
**safe** only when it changes nothing else:

1. *It is a torch optimizer.* The analysis proved the stepped object was built by a
   ``torch.optim`` constructor (:attr:`~torchward.analysis.finding.Proof.TORCH_OPTIMIZER`),
   not guessed from a name: a wrapper of another library may lack
   ``zero_grad(set_to_none=...)``.
2. *Writing the optimizer again is harmless.* Its expression is a name or a chain of
   attributes (``opt``, ``self.optimizer``): evaluating it twice has no side effect.
3. *Nobody reads the gradients the reset removes.* Nothing in the function reads
   ``.grad``: ``set_to_none=True`` leaves ``p.grad`` ``None`` until the next backward,
   so a gradient-norm log or a hand-written update would change or raise.
4. *The accumulation is not deliberate.* The loop calls no
   ``backward(retain_graph=True)`` (a gradient-comparison harness), and the step takes no
   closure (``LBFGS``'s closure resets gradients itself).

Otherwise the reset is offered as **unsafe**.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..finding import Applicability, Edit, Finding, Fix, Proof, Span
from ..rules.missing_zero_grad_reset import ZeroGradReset
from .edits import SourceLines
from .fixer import PayloadFixer


class MissingZeroGradFixer(PayloadFixer):
    code = "TW003"

    def build_from_payload(self, lines: SourceLines, finding: Finding) -> Iterator[Fix]:
        reset = finding.payload
        if not isinstance(reset, ZeroGradReset):
            return  # no statement of its own to anchor to, or not a plain reference
        if not _still_there(lines, finding.span, reset):
            return  # the text is not the one the finding was computed on
        code = f"{reset.optimizer}.zero_grad(set_to_none=True)"
        line = reset.after_line
        insertion = _line_after(lines, line, f"{reset.indent}{code}")
        proven = (
            Proof.TORCH_OPTIMIZER in finding.proofs
            and not reset.retains_graph
            and not reset.closure
            and not reset.reads_gradients
        )
        yield Fix(
            f"Insert `{code}` after the step",
            Applicability.SAFE if proven else Applicability.UNSAFE,
            (insertion,),
        )


def _line_after(lines: SourceLines, line: int, text: str) -> Edit:
    """An edit that adds the line ``text`` after line ``line``: a whole line inserted at
    the start of the next one, or, after a last line with no line break, a break and the
    line at its end."""
    ending = lines.ending(line)
    if lines.lines[line - 1].endswith(("\n", "\r")):
        return Edit(Span(line + 1, 0, line + 1, 0), f"{text}{ending}")
    end = len(lines.line(line))
    return Edit(Span(line, end, line, end), f"{ending}{text}")


def _still_there(lines: SourceLines, span: Span, reset: ZeroGradReset) -> bool:
    """Whether ``lines`` still hold the step the payload describes: a fix may be asked
    for on a newer text than the finding's (an editor's stale diagnostic), and an
    insertion computed for another text must not land in this one."""
    call = lines.text_of(span)
    return (
        span.end_line <= reset.after_line <= len(lines.lines)
        and lines.line(span.line)[: len(reset.indent)] == reset.indent
        and ".step" in call
        and call.endswith(")")
        and reset.optimizer in call
    )
