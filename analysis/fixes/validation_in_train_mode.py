"""TW024 validation-in-train-mode: ``model.eval()`` before the pass, ``model.train()`` after.

The finding's span is the header of the evaluation loop; its first evidence is the
forward call inside it. The rule checks the obligations below on its ``ast`` and hands
over a :class:`~torchward.analysis.rules.mode_switch.EvalModeSwitch` payload when 1 and
2 hold (no payload: no fix); the fixer writes two lines, without LibCST.

1. The model is called as a plain name or attribute (``model(x)``, ``self.net(x)``), and
   the loop binds that name nowhere, so the inserted calls switch the model the loop runs.
2. The loop contains no ``return``, ``yield`` or ``raise`` (outside nested functions): the
   ``model.train()`` after it runs whenever the loop ends, so the model leaves the pass in
   the mode it entered it — training mode, which is what the finding established.

Then only the evaluation changes (dropout off; batch norm uses, and no longer updates,
its running statistics): safe — provided also that

3. no module's mode is set apart from the model's anywhere in the file: no ``.eval()`` or
   ``.train(...)`` on another receiver (``model.backbone.eval()`` to freeze batch norm,
   ``m.eval()`` over ``model.modules()``, ``teacher.eval()``). ``model.train()`` after the
   pass sets *every* submodule to train mode, so a part kept in eval mode on purpose
   would train differently from then on. When any such switch exists, the fix is unsafe.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..finding import Applicability, Edit, Finding, Fix, Span
from ..rules.mode_switch import EvalModeSwitch
from .edits import SourceLines
from .fixer import PayloadFixer


class ValidationInTrainModeFixer(PayloadFixer):
    code = "TW024"

    def build_from_payload(self, lines: SourceLines, finding: Finding) -> Iterator[Fix]:
        switch = finding.payload
        if not isinstance(switch, EvalModeSwitch):
            return
        model, indent = switch.model, switch.indent
        header = lines.line(finding.span.line)
        if not (
            switch.before_line <= finding.span.line <= switch.after_line <= len(lines.lines)
            and header.startswith(indent)
            and header[len(indent) :].startswith(("for", "async", "while"))
        ):
            return  # not the text the finding was computed on
        ending = lines.ending(switch.after_line)
        before = Edit(
            Span(switch.before_line, 0, switch.before_line, 0), f"{indent}{model}.eval(){ending}"
        )
        if lines.lines[switch.after_line - 1].endswith(("\n", "\r")):
            at = switch.after_line + 1
            after = Edit(Span(at, 0, at, 0), f"{indent}{model}.train(){ending}")
        else:  # the loop ends the text without a line break
            end = len(lines.line(switch.after_line))
            after = Edit(
                Span(switch.after_line, end, switch.after_line, end),
                f"{ending}{indent}{model}.train()",
            )
        yield Fix(
            f"Run the evaluation in eval mode: `{model}.eval()` before it, `{model}.train()` after",
            Applicability.UNSAFE if switch.switches_others else Applicability.SAFE,
            (before, after),
        )
