"""TW005 softmax-before-cross-entropy."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import events
from ..finding import Applicability, Severity
from ..rule import Fixed, Invalid, Rule


class SoftmaxBeforeCrossEntropy(Rule):
    """
    ## What it does
    Flags probabilities from `softmax` (a function, a method, an `nn.Softmax` layer, a
    `Sequential` or a model whose `forward` ends in one) fed to `CrossEntropyLoss` /
    `F.cross_entropy`, which expect raw logits. `log_softmax` fed to it is reported as
    a note: harmless, but redundant.

    ## Why is this bad?
    `cross_entropy` applies `log_softmax` itself. On probabilities it computes
    `log_softmax(softmax(z))`: the loss is squashed into a narrow range, its gradients
    nearly vanish as the model grows confident, and training stalls at a mediocre
    accuracy without any error.

    ## Example
    ```python
    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(probs, y)    # TW005
    ```
    Use instead:
    ```python
    loss = F.cross_entropy(model(x), y)
    ```

    ## Fix safety
    Dropping the softmax changes the loss value and its gradients — that is the bug
    being fixed. It is safe only when the finding has high confidence (the loss is known
    from its constructor to apply log-softmax itself) and the probabilities have no
    other use; it is unsafe if they are used elsewhere, and always unsafe when the
    softmax is the last step of a model's `forward` (every user of the model changes).

    ## Known limitations
    Recognised by binding: `self.softmax = nn.LogSoftmax(...)` is a log-softmax whatever
    its name. Probabilities computed only for metrics, attention softmax inside a layer,
    and `LogSoftmax` + `NLLLoss` are never flagged.
    """

    code = "TW005"
    name = "softmax-before-cross-entropy"
    default_severity = Severity.ERROR
    summary = "Softmax probabilities are fed to a cross-entropy loss that expects logits."

    VALID = (
        "import torch.nn.functional as F\ndef step(model, x, y):\n    return F.cross_entropy(model(x), y)\n",
        # LogSoftmax + NLLLoss is the intended pairing
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 3)\n        self.softmax = nn.LogSoftmax(dim=1)\n    def forward(self, x):\n        return self.softmax(self.fc(x))\n\ndef step(x, y):\n    model = Net()\n    return nn.NLLLoss()(model(x), y)\n",
        # probabilities for metrics only
        "import torch\nimport torch.nn.functional as F\ndef step(model, x, y):\n    logits = model(x)\n    probs = torch.softmax(logits, dim=1)\n    acc = (probs.argmax(1) == y).float().mean()\n    return F.cross_entropy(logits, y), acc\n",
        # attention softmax inside a layer
        "import torch\nimport torch.nn.functional as F\ndef attention(q, k, v):\n    w = F.softmax(q @ k.transpose(-1, -2), dim=-1)\n    return w @ v\n\ndef step(model, x, y):\n    return F.cross_entropy(model(x), y)\n",
        "import torch.nn as nn\ncrit = nn.CrossEntropyLoss()\nhead = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 3))\ndef step(x, y):\n    return crit(head(x), y)\n",
        # the name says softmax, the binding says log-softmax, NLLLoss fits it
        "import torch.nn as nn\nsoftmax = nn.LogSoftmax(dim=1)\nloss = nn.NLLLoss()\ndef step(model, x, y):\n    return loss(softmax(model(x)), y)\n",
    )
    INVALID = (
        Invalid(
            "import torch.nn.functional as F\ndef step(model, x, y):\n    probs = F.softmax(model(x), dim=1)\n    return F.cross_entropy(probs, y)\n",
            Severity.ERROR,
            line=4,
            fixed=Fixed(
                "import torch.nn.functional as F\ndef step(model, x, y):\n    probs = model(x)\n    return F.cross_entropy(probs, y)\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch.nn as nn\nnet = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\ncrit = nn.CrossEntropyLoss()\ndef step(x, y):\n    return crit(net(x), y)\n",
            Severity.ERROR,
            line=5,
            fixed=Fixed(
                "import torch.nn as nn\nnet = nn.Sequential(nn.Linear(4, 3))\ncrit = nn.CrossEntropyLoss()\ndef step(x, y):\n    return crit(net(x), y)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 3)\n        self.act = nn.Softmax(dim=1)\n    def forward(self, x):\n        return self.act(self.fc(x))\n\nmodel = Net()\ncrit = nn.CrossEntropyLoss()\ndef step(x, y):\n    return crit(model(x), y)\n",
            Severity.ERROR,
            line=13,
            fixed=Fixed(
                "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 3)\n        self.act = nn.Softmax(dim=1)\n    def forward(self, x):\n        return self.fc(x)\n\nmodel = Net()\ncrit = nn.CrossEntropyLoss()\ndef step(x, y):\n    return crit(model(x), y)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch\nfrom torch.nn.functional import cross_entropy as ce\ndef step(model, x, y):\n    return ce(model(x).softmax(dim=-1), y)\n",
            Severity.ERROR,
            line=4,
            fixed=Fixed(
                "import torch\nfrom torch.nn.functional import cross_entropy as ce\ndef step(model, x, y):\n    return ce(model(x), y)\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch.nn.functional as F\ndef step(model, x, y):\n    return F.cross_entropy(F.log_softmax(model(x), dim=1), y)\n",
            Severity.NOTE,
            line=3,
            fixed=Fixed(
                "import torch.nn.functional as F\ndef step(model, x, y):\n    return F.cross_entropy(model(x), y)\n",
                Applicability.SAFE,
            ),
        ),
    )

    def check(self, facts):
        for _, loss in events(facts, EventKind.LOSS):
            value = loss.value
            if (
                loss.loss is None
                or loss.loss.loss != "cross_entropy"
                or value is None
                or value.activation not in ("softmax", "log_softmax")
            ):
                continue
            text = loss.loss.input_text
            evidence = [value.origin] if value.origin else []
            if value.activation == "softmax":
                message = (
                    f"`{text}` holds softmax probabilities, but cross_entropy applies log_softmax itself and expects "
                    "raw logits: the loss is squashed and its gradients vanish. Pass the logits instead."
                )
                yield self.finding(loss.span, message, evidence=evidence)
            else:
                message = (
                    f"`{text}` is already log_softmax output; cross_entropy applies log_softmax again. "
                    "Harmless (log_softmax is idempotent) but redundant: pass the logits, or use NLLLoss."
                )
                yield self.finding(loss.span, message, evidence=evidence, severity=Severity.NOTE)
