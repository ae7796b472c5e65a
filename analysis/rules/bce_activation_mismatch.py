"""TW006 bce-activation-mismatch."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import events
from ..finding import Applicability, Severity
from ..rule import Fixed, Invalid, Rule


class BceActivationMismatch(Rule):
    """
    ## What it does
    Flags `sigmoid` output fed to `BCEWithLogitsLoss` /
    `F.binary_cross_entropy_with_logits` (which applies the sigmoid itself), and raw
    logits — the output of a layer or model known to end in a `Linear` — fed to
    `BCELoss` / `F.binary_cross_entropy` (which expects probabilities).

    ## Why is this bad?
    A double sigmoid squeezes every prediction into (0.5, 0.73): the loss can never
    approach zero and gradients shrink, so training stalls silently. Raw logits in
    `BCELoss` are outside [0, 1] and make the loss meaningless or crash on the device.

    ## Example
    ```python
    loss = F.binary_cross_entropy_with_logits(torch.sigmoid(model(x)), y)   # TW006
    ```
    Use instead:
    ```python
    loss = F.binary_cross_entropy_with_logits(model(x), y)
    ```

    ## Fix safety
    Dropping the sigmoid (or switching to the logits loss) changes the loss, which is
    the fix. Safe only when the finding has high confidence and nothing else sees the
    change: unsafe when the probabilities are reused elsewhere, the sigmoid is the last
    step of a model's `forward`, the renamed criterion is bound once and used elsewhere,
    or the loss is not spelt through torch (`nn.`, `F.`).

    ## Known limitations
    Raw logits are only reported when the producing model is known to end in a linear
    layer (a local `nn.Module` or an `nn.Linear`/`Sequential`); outputs of models the
    file cannot see are never assumed raw.
    """

    code = "TW006"
    name = "bce-activation-mismatch"
    default_severity = Severity.ERROR
    summary = "Sigmoid output fed to a logits BCE loss, or raw logits fed to BCELoss."

    VALID = (
        "import torch.nn.functional as F\ndef step(model, x, y):\n    return F.binary_cross_entropy_with_logits(model(x), y)\n",
        "import torch\nimport torch.nn.functional as F\ndef step(model, x, y):\n    return F.binary_cross_entropy(torch.sigmoid(model(x)), y)\n",
        "import torch.nn as nn\nnet = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())\ndef step(x, y):\n    return nn.BCELoss()(net(x), y)\n",
        "import torch.nn as nn\nhead = nn.Linear(4, 1)\ndef step(x, y):\n    return nn.BCEWithLogitsLoss()(head(x), y)\n",
        # model from elsewhere: not assumed raw
        "import torch.nn as nn\ndef step(model, x, y):\n    return nn.BCELoss()(model(x), y)\n",
        # sigmoid for metrics only
        "import torch\nimport torch.nn.functional as F\ndef step(model, x, y):\n    logits = model(x)\n    preds = torch.sigmoid(logits) > 0.5\n    return F.binary_cross_entropy_with_logits(logits, y), preds\n",
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch.nn.functional as F\ndef step(model, x, y):\n    return F.binary_cross_entropy_with_logits(torch.sigmoid(model(x)), y)\n",
            Severity.ERROR,
            line=4,
            fixed=Fixed(
                "import torch\nimport torch.nn.functional as F\ndef step(model, x, y):\n    return F.binary_cross_entropy_with_logits(model(x), y)\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch.nn as nn\nnet = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())\ncrit = nn.BCEWithLogitsLoss()\ndef step(x, y):\n    return crit(net(x), y)\n",
            line=5,
            fixed=Fixed(
                "import torch.nn as nn\nnet = nn.Sequential(nn.Linear(4, 1))\ncrit = nn.BCEWithLogitsLoss()\ndef step(x, y):\n    return crit(net(x), y)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch.nn as nn\nhead = nn.Linear(4, 1)\ndef step(x, y):\n    return nn.BCELoss()(head(x), y)\n",
            line=4,
            fixed=Fixed(
                "import torch.nn as nn\nhead = nn.Linear(4, 1)\ndef step(x, y):\n    return nn.BCEWithLogitsLoss()(head(x), y)\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch.nn as nn\nimport torch.nn.functional as F\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.out = nn.Linear(8, 1)\n    def forward(self, x):\n        return self.out(x)\n\nmodel = Net()\ndef step(x, y):\n    return F.binary_cross_entropy(model(x).squeeze(1), y)\n",
            line=12,
            fixed=Fixed(
                "import torch.nn as nn\nimport torch.nn.functional as F\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.out = nn.Linear(8, 1)\n    def forward(self, x):\n        return self.out(x)\n\nmodel = Net()\ndef step(x, y):\n    return F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)\n",
                Applicability.SAFE,
            ),
        ),
    )

    def check(self, facts):
        for _, loss in events(facts, EventKind.LOSS):
            value = loss.value
            if value is None or loss.loss is None:
                continue
            kind, text = loss.loss.loss, loss.loss.input_text
            evidence = [value.origin] if value.origin else []
            if kind == "bce_logits" and value.activation == "sigmoid":
                yield self.finding(
                    loss.span,
                    (
                        f"`{text}` has already been through a sigmoid, and the logits BCE loss applies another: "
                        "predictions are squeezed into (0.5, 0.73) and training stalls. Pass the logits instead."
                    ),
                    evidence=evidence,
                )
            elif kind == "bce" and value.activation == "raw":
                yield self.finding(
                    loss.span,
                    (
                        f"`{text}` is raw logits (the model ends in a linear layer), but BCELoss expects probabilities "
                        "in [0, 1]. Use BCEWithLogitsLoss / binary_cross_entropy_with_logits on the logits."
                    ),
                    evidence=evidence,
                )
