"""TW005 softmax-before-cross-entropy: drop the softmax (or the redundant log_softmax).

See :mod:`.activations` for where the softmax is found and when dropping it is safe.
"""

from __future__ import annotations

from .activations import drop_activation
from .fixer import Fixer


class SoftmaxBeforeCrossEntropyFixer(Fixer):
    code = "TW005"

    def build(self, tree, finding):
        rewrite, applicability, title = drop_activation(
            tree, finding, ("softmax", "log_softmax", "logsoftmax")
        )
        if rewrite is not None:
            yield self.fix(title, applicability, rewrite)
