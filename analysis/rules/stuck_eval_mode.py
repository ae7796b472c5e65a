"""TW011 stuck-eval-mode."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import events
from ..facts.values import Mode
from ..finding import Applicability, Evidence, Severity
from ..rule import Fixed, Invalid, Rule
from .train_mode_restore import train_mode_restore


def _switches_back(trace, loop: int) -> bool:
    """The loop also calls ``model.train()`` somewhere (a phase loop): path-insensitive
    analysis cannot tell which branch runs first, so stay quiet."""
    return any(
        e.switch is not None and e.switch.mode is Mode.TRAIN
        for e in trace.events_in(loop, EventKind.MODE)
    )


class StuckEvalMode(Rule):
    """
    ## What it does
    Flags `model.eval()` inside the epoch loop (directly, or in a helper such as
    `evaluate(model)`) with no `model.train()` before the next training step.

    ## Why is this bad?
    After the first validation pass every later epoch trains in eval mode: dropout is
    off and batch-norm uses frozen running statistics instead of batch statistics. The
    model still trains, the loss still falls, and the final accuracy is quietly worse.

    ## Example
    ```python
    for epoch in range(epochs):
        for x, y in train_loader:
            ...
            loss.backward()
        evaluate(model, val_loader)     # calls model.eval()  — TW011
    ```
    Use instead: call `model.train()` at the top of each epoch.

    ## Fix safety
    The fix inserts `model.train()` at the start of the epoch loop. It is safe only when
    the first epoch provably trained in train mode — `model.train()` before the loop, or
    a model built fresh by `torch.nn` or a class of the file — so every epoch then starts
    as the first did. A model received from a caller or loaded (`from_pretrained`
    returns eval mode) may be in eval mode on purpose: there the fix is unsafe.

    ## Known limitations
    Only mode switches the analysis can follow are seen (in the file, through helpers it
    can resolve). A model put into eval mode once before the loop on purpose (frozen
    batch-norm fine-tuning) is not reported, and nor is a frozen teacher whose outputs
    carry no graph.
    """

    code = "TW011"
    name = "stuck-eval-mode"
    default_severity = Severity.WARNING
    summary = "model.eval() in the epoch loop is never undone before the next training step."

    VALID = (
        "def fit(model, train_loader, val_loader, opt):\n    for epoch in range(3):\n        model.train()\n        for x, y in train_loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        model.eval()\n        for x, y in val_loader:\n            model(x)\n",
        # eval before the whole loop: deliberate
        "def finetune(model, loader, opt):\n    model.eval()\n    for x, y in loader:\n        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n",
        # the helper restores train mode
        "def evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        model(x)\n    model.train()\n\ndef fit(model, loader, opt):\n    for epoch in range(3):\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        evaluate(model, loader)\n",
        # a frozen teacher under no_grad
        "import torch\ndef distill(student, teacher, loader, opt):\n    for epoch in range(3):\n        teacher.eval()\n        for x in loader:\n            with torch.no_grad():\n                t = teacher(x)\n            opt.zero_grad()\n            (student(x) - t).pow(2).mean().backward()\n            opt.step()\n",
        "def fit(model, loader, opt):\n    for epoch in range(3):\n        model.train(True)\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        model.train(False)\n",
        "def test(model, loader):\n    for epoch in range(2):\n        model.eval()\n        for x in loader:\n            model(x)\n",
    )
    INVALID = (
        Invalid(
            "def fit(model, train_loader, val_loader, opt):\n    model.train()\n    for epoch in range(3):\n        for x, y in train_loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        model.eval()\n        for x, y in val_loader:\n            model(x)\n",
            line=8,
            fixed=Fixed(
                "def fit(model, train_loader, val_loader, opt):\n    model.train()\n    for epoch in range(3):\n        model.train()\n        for x, y in train_loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        model.eval()\n        for x, y in val_loader:\n            model(x)\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "def evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        model(x)\n\ndef fit(model, loader, opt):\n    for epoch in range(3):\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        evaluate(model, loader)\n",
            line=12,
            fixed=Fixed(
                "def evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        model(x)\n\ndef fit(model, loader, opt):\n    for epoch in range(3):\n        model.train()\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        evaluate(model, loader)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(3):\n    for x in range(4):\n        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n    model.eval()\n",
            Severity.WARNING,
            line=9,
            fixed=Fixed(
                "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(3):\n    model.train()\n    for x in range(4):\n        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n    model.eval()\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "def fit(model, loader, opt):\n    for epoch in range(3):\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        model.train(False)\n",
            line=7,
            fixed=Fixed(
                "def fit(model, loader, opt):\n    for epoch in range(3):\n        model.train()\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n        model.train(False)\n",
                Applicability.UNSAFE,
            ),
        ),
    )

    def check(self, facts):
        reported: set = set()
        for trace, backward in events(facts, EventKind.BACKWARD):
            value = backward.value
            stuck = value.eval_forward if value is not None else None
            if stuck is None or stuck.owner != trace.function:
                continue
            shared = [loop for loop in backward.loops if loop in stuck.loops]
            if not shared or _switches_back(trace, shared[-1]):
                continue
            if stuck.evidence.span in reported:
                continue
            reported.add(stuck.evidence.span)
            # the switch sits in the loop of the training steps themselves (a validation
            # every N steps) or in an outer, epoch loop
            per_step = shared[-1] == backward.loops[-1]
            where, later, each = (
                ("inside the loop of training steps", "the following steps", "step")
                if per_step
                else ("inside the epoch loop", "later epochs", "epoch")
            )
            message = (
                f"the model is switched to eval mode {where} and nothing switches it back before "
                f"the next training step: {later} train with dropout off and batch-norm statistics frozen. "
                f"Call `model.train()` at the start of each {each}."
            )
            evidence = [
                stuck.evidence,
                Evidence(backward.span, "the next iteration trains here in eval mode"),
            ]
            yield self.finding(
                stuck.evidence.span,
                message,
                evidence=evidence,
                payload=train_mode_restore(
                    facts.analyzer.tree, facts.lines, stuck.evidence.span, evidence
                ),
            )
