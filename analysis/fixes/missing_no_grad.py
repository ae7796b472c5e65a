"""TW002 missing-no-grad: wrap the evaluation loop in ``with torch.no_grad():``.

The finding's span is the loop header. The whole loop statement moves one level down
into a new ``with`` block: LibCST re-indents it with the file's own indent unit (tabs
stay tabs), keeps its comments, and leaves multi-line strings inside untouched (their
text is data). Comments above the loop stay above the ``with``. ``torch`` is written
the way the file imports it, and imported when it is not. Safe: the rule only reports
loops that never take gradients (no ``backward()``, no ``autograd.grad``).
"""

from __future__ import annotations

import libcst as cst

from ..finding import Applicability
from .fixer import Fixer
from .imports import Imports
from .tree import LOOPS, Rewrite, expression


class MissingNoGradFixer(Fixer):
    code = "TW002"

    def build(self, tree, finding):
        loop = next((node for node in tree.within(finding.span, LOOPS)), None) or self._loop_at(
            tree, finding
        )
        if loop is None or not isinstance(loop.body, cst.IndentedBlock):
            return
        rewrite = Rewrite(tree)
        torch = Imports(tree, rewrite).module("torch")
        manager = cst.WithItem(item=expression(f"{torch}.no_grad()"))

        def wrap(node: cst.BaseCompoundStatement) -> cst.With:
            return cst.With(
                items=[manager],
                body=cst.IndentedBlock(body=[node.with_changes(leading_lines=())]),
                leading_lines=node.leading_lines,
            )

        rewrite.replace(loop, wrap)
        yield self.fix(f"Wrap the loop in `with {torch}.no_grad():`", Applicability.SAFE, rewrite)

    @staticmethod
    def _loop_at(tree, finding):
        for node, span in tree.spans.items():
            if isinstance(node, LOOPS) and (span.line, span.column) == (
                finding.span.line,
                finding.span.column,
            ):
                return node
        return None
