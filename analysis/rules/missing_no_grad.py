"""TW002 missing-no-grad."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.proofs import loop_never_backpropagated
from ..facts.structure import events, loop_header, runs_backward
from ..facts.values import Mode
from ..finding import Applicability, Evidence, Proof, Severity
from ..rule import Fixed, Invalid, Rule


class MissingNoGrad(Rule):
    """
    ## What it does
    Flags an evaluation or inference loop that runs a model in eval mode while
    gradients are still enabled (no `torch.no_grad()`, `torch.inference_mode()` or
    decorator around it).

    ## Why is this bad?
    `model.eval()` changes dropout and batch-norm; it does not stop autograd. Every
    forward pass of the loop records a graph and keeps the activations it needs for a
    backward that never comes: evaluation takes several times the memory it needs and
    runs slower, and storing any output keeps those graphs alive.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()   # TW002
    ```
    Use instead:
    ```python
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    ```

    ## Fix safety
    Wrapping the loop in `torch.no_grad()` computes the same numbers without graphs. It
    is safe only when the analysis proves no graph from the loop is ever used: no
    `backward()` or `torch.autograd.grad` runs in the loop, around it or after it in the
    function, nothing the loop computes is stored where it outlives the function or
    returned with a graph, no call in the loop is named like a training step the
    analysis cannot see into, and the loop does not `yield` (which would leak the
    disabled grad mode to the consumer). Otherwise — typically a validation loop inside
    the epoch loop — the fix is unsafe.

    ## Known limitations
    A loop is an evaluation pass when the model it calls was switched to eval mode (in
    the same function, or by the caller) and the loop takes no gradients; a single
    forward outside any loop is not reported. A value of no known kind switched with
    `.eval()` counts as a model, so a hand-written generation or beam-search loop
    (`while` included) over an eval-mode decoder is an evaluation pass too. Lightning's `validation_step`,
    `test_step` and `predict_step` run under `no_grad` already and are never flagged;
    tokenizers and other non-model callables are never counted as forward passes.
    """

    code = "TW002"
    name = "missing-no-grad"
    default_severity = Severity.WARNING
    summary = "An evaluation loop runs the model with gradients enabled."

    VALID = (
        "import torch\ndef evaluate(model, loader):\n    model.eval()\n    with torch.no_grad():\n        for x, y in loader:\n            model(x)\n",
        "import torch\n@torch.no_grad()\ndef evaluate(model, loader):\n    model.eval()\n    for x, y in loader:\n        model(x)\n",
        "import torch\ndef evaluate(model, loader):\n    model.eval()\n    with torch.inference_mode():\n        for x, y in loader:\n            model(x)\n",
        # adversarial examples take a backward on purpose
        "import torch\ndef attack(model, loader, crit):\n    model.eval()\n    for x, y in loader:\n        x.requires_grad_(True)\n        loss = crit(model(x), y)\n        loss.backward()\n        x = x + 0.01 * x.grad.sign()\n",
        # a tokenizer is not a model
        "from transformers import AutoTokenizer\ndef encode(texts):\n    tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')\n    out = []\n    for t in texts:\n        out.append(tokenizer(t))\n    return out\n",
        # Lightning runs validation_step under no_grad
        "import lightning as L\nclass Lit(L.LightningModule):\n    def validation_step(self, batch, idx):\n        self.model.eval()\n        for x in batch:\n            self.model(x)\n",
        # model never switched to eval: a training loop, not an evaluation pass
        "import torch\ndef train(model, loader, opt):\n    for x, y in loader:\n        model(x).sum().backward()\n        opt.step()\n        opt.zero_grad()\n",
        "import torch\ndef predict(model, x):\n    model.eval()\n    return model(x)\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef evaluate(model, loader):\n    model.eval()\n    correct = 0\n    for x, y in loader:\n        correct += (model(x).argmax(1) == y).sum().item()\n    return correct\n",
            line=5,
            fixed=Fixed(
                "import torch\ndef evaluate(model, loader):\n    model.eval()\n    correct = 0\n    with torch.no_grad():\n        for x, y in loader:\n            correct += (model(x).argmax(1) == y).sum().item()\n    return correct\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 1)\nnet.eval()\nfor x in torch.utils.data.DataLoader(range(4)):\n    net(x)\n",
            Severity.WARNING,
            line=5,
            fixed=Fixed(
                "import torch\nimport torch.nn as nn\nnet = nn.Linear(3, 1)\nnet.eval()\nwith torch.no_grad():\n    for x in torch.utils.data.DataLoader(range(4)):\n        net(x)\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch\ndef evaluate(model, loader):\n    for x, y in loader:\n        model(x)\n\ndef main():\n    model = torch.nn.Linear(2, 2)\n    model.eval()\n    evaluate(model, [1, 2])\n",
            line=3,
            fixed=Fixed(
                "import torch\ndef evaluate(model, loader):\n    with torch.no_grad():\n        for x, y in loader:\n            model(x)\n\ndef main():\n    model = torch.nn.Linear(2, 2)\n    model.eval()\n    evaluate(model, [1, 2])\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch\ndef fit(model, train_loader, val_loader, opt):\n    for epoch in range(3):\n        model.train()\n        for x, y in train_loader:\n            model(x).sum().backward()\n            opt.step()\n            opt.zero_grad()\n        model.eval()\n        for x, y in val_loader:\n            model(x)\n",
            line=10,
            fixed=Fixed(
                "import torch\ndef fit(model, train_loader, val_loader, opt):\n    for epoch in range(3):\n        model.train()\n        for x, y in train_loader:\n            model(x).sum().backward()\n            opt.step()\n            opt.zero_grad()\n        model.eval()\n        with torch.no_grad():\n            for x, y in val_loader:\n                model(x)\n",
                Applicability.UNSAFE,
            ),
        ),
    )

    def check(self, facts):
        reported: set[tuple[str, int]] = set()
        for trace, forward in events(facts, EventKind.FORWARD):
            model = forward.target
            if not forward.grad_enabled or not forward.loops or model is None or model.mode is None:
                continue
            if forward.in_helper_loop:
                continue  # a helper's own evaluation loop: reported in the helper
            if model.mode.mode is not Mode.EVAL:
                continue
            passes = [loop for loop in forward.loops if not runs_backward(trace, loop)]
            if not passes or passes[-1] != forward.loops[-1]:
                continue  # the innermost loop takes gradients: on purpose
            loop = passes[0]
            if (trace.function, loop) in reported:
                continue
            reported.add((trace.function, loop))
            message = (
                "this evaluation loop runs the model in eval mode with gradients enabled: every forward "
                "records an autograd graph that is never used, costing memory and time. "
                "Wrap the loop in `with torch.no_grad():` (or `torch.inference_mode()`)."
            )
            yield self.finding(
                loop_header(trace, loop),
                message,
                evidence=[
                    model.mode.evidence,
                    Evidence(forward.span, "the model runs here with gradients enabled"),
                ],
                confidence=model.confidence,
                proofs=[Proof.LOOP_NEVER_BACKPROPAGATED]
                if loop_never_backpropagated(trace, loop)
                else [],
            )
