"""TW014 unscaled-gradient-accumulation."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import accumulation_gate, events, framework_scales
from ..finding import Applicability, Evidence, Severity
from ..rule import Fixed, Invalid, Rule


class UnscaledGradientAccumulation(Rule):
    """
    ## What it does
    Flags gradient accumulation whose loss is never divided by the number of
    accumulated micro-steps: `backward()` runs on every micro-step, the optimizer step
    is gated by `(i + 1) % accum == 0`, and no division happens on the way to
    `backward()`.

    ## Why is this bad?
    Gradients add up over the micro-steps, so the update is `accum` times larger than
    the one for the equivalent large batch: an effective learning rate `accum` times too
    high, which destabilises training or forces a retuned learning rate that no longer
    transfers when `accum` changes.

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()                       # TW014
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```
    Use instead: `(loss / accum_steps).backward()`.

    ## Fix safety
    Dividing the loss changes the update size, which is the fix; it is unsafe if the
    learning rate was tuned for the unscaled sum.

    ## Known limitations
    Quiet when the loss is divided (or multiplied by a factor) anywhere on its path to
    `backward()`, including inside a helper the file defines, or on one branch of an
    `if` (`if accum > 1: loss = loss / accum` divides exactly when it accumulates); when
    the gradients are divided by hand before the step (`p.grad /= n`,
    `p.grad.div_(n)`); when the loss comes from a function the file cannot see; for
    `reduction="sum"` losses, also after more terms are added (normalised elsewhere by
    design); under `accelerator.accumulate(...)` and with `accelerator.backward`, which
    scale by themselves; for DeepSpeed engines, Lightning's automatic optimization
    (`Trainer(accumulate_grad_batches=N)` divides the loss) and a Hugging Face `Trainer`.
    Lightning's `manual_backward` does not divide: a manual-optimization `training_step`
    that gates its step with `batch_idx % N` must scale the loss itself.
    """

    code = "TW014"
    name = "unscaled-gradient-accumulation"
    default_severity = Severity.WARNING
    summary = "Gradient accumulation backpropagates a loss that is never divided by the accumulation count."

    VALID = (
        "def train(model, loader, opt, crit, accum):\n    for i, (x, y) in enumerate(loader):\n        loss = crit(model(x), y) / accum\n        loss.backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
        "def train(model, loader, opt, crit, accum):\n    for i, (x, y) in enumerate(loader):\n        loss = crit(model(x), y)\n        loss /= accum\n        loss.backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
        # divided inside a helper
        "def compute(model, x, y, crit, accum):\n    return crit(model(x), y) / accum\n\ndef train(model, loader, opt, crit, accum):\n    for i, (x, y) in enumerate(loader):\n        loss = compute(model, x, y, crit, accum)\n        loss.backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
        # reduction='sum', normalised later by design
        "import torch.nn as nn\ndef train(model, loader, opt, accum):\n    crit = nn.CrossEntropyLoss(reduction='sum')\n    for i, (x, y) in enumerate(loader):\n        loss = crit(model(x), y)\n        loss.backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
        # accelerate does the scaling
        "from accelerate import Accelerator\ndef train(model, loader, opt, crit):\n    accelerator = Accelerator(gradient_accumulation_steps=4)\n    for x, y in loader:\n        with accelerator.accumulate(model):\n            loss = crit(model(x), y)\n            accelerator.backward(loss)\n            opt.step()\n            opt.zero_grad()\n",
        # no accumulation gate: a plain loop
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
        # the step itself is not gated, only logging is
        "def train(model, loader, opt, crit):\n    for i, (x, y) in enumerate(loader):\n        opt.zero_grad()\n        loss = crit(model(x), y)\n        loss.backward()\n        opt.step()\n        if i % 100 == 0:\n            print(loss.item())\n",
        # loss from a function the file cannot see
        "from mylib import compute_loss\ndef train(model, loader, opt, accum):\n    for i, batch in enumerate(loader):\n        loss = compute_loss(model, batch)\n        loss.backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
    )
    INVALID = (
        Invalid(
            "def train(model, loader, opt, crit, accum):\n    for i, (x, y) in enumerate(loader):\n        loss = crit(model(x), y)\n        loss.backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
            line=4,
            fixed=Fixed(
                "def train(model, loader, opt, crit, accum):\n    for i, (x, y) in enumerate(loader):\n        loss = crit(model(x), y)\n        (loss / accum).backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.AdamW(model.parameters())\nscaler = torch.amp.GradScaler()\nfor step, (x, y) in enumerate(torch.utils.data.DataLoader(range(4))):\n    loss = F.cross_entropy(model(x), y)\n    scaler.scale(loss).backward()\n    if step % 8 == 7:\n        scaler.step(opt)\n        scaler.update()\n        opt.zero_grad()\n",
            Severity.WARNING,
            line=8,
            fixed=Fixed(
                "import torch\nimport torch.nn.functional as F\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.AdamW(model.parameters())\nscaler = torch.amp.GradScaler()\nfor step, (x, y) in enumerate(torch.utils.data.DataLoader(range(4))):\n    loss = F.cross_entropy(model(x), y)\n    scaler.scale(loss / 8).backward()\n    if step % 8 == 7:\n        scaler.step(opt)\n        scaler.update()\n        opt.zero_grad()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "def train(model, loader, opt, crit):\n    accum = 4\n    for i, (x, y) in enumerate(loader):\n        out = model(x)\n        crit(out, y).backward()\n        if i % accum == 0:\n            opt.step()\n            model.zero_grad()\n",
            line=5,
            fixed=Fixed(
                "def train(model, loader, opt, crit):\n    accum = 4\n    for i, (x, y) in enumerate(loader):\n        out = model(x)\n        (crit(out, y) / accum).backward()\n        if i % accum == 0:\n            opt.step()\n            model.zero_grad()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "class Trainer:\n    def __init__(self, model, opt, crit, accum):\n        self.model, self.opt, self.crit, self.accum = model, opt, crit, accum\n    def fit(self, loader):\n        for i, (x, y) in enumerate(loader):\n            loss = self.crit(self.model(x), y)\n            loss.backward()\n            if (i + 1) % self.accum == 0:\n                self.opt.step()\n                self.opt.zero_grad()\n",
            line=7,
            fixed=Fixed(
                "class Trainer:\n    def __init__(self, model, opt, crit, accum):\n        self.model, self.opt, self.crit, self.accum = model, opt, crit, accum\n    def fit(self, loader):\n        for i, (x, y) in enumerate(loader):\n            loss = self.crit(self.model(x), y)\n            (loss / self.accum).backward()\n            if (i + 1) % self.accum == 0:\n                self.opt.step()\n                self.opt.zero_grad()\n",
                Applicability.UNSAFE,
            ),
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, step in events(facts, EventKind.STEP):
            gate = accumulation_gate(step)
            if gate is None or framework_scales(step) or step.in_accumulate:
                continue
            loop = step.loops[-1]
            if trace.events_in(loop, EventKind.GRAD_SCALE):
                continue  # the gradients are divided by hand before the step
            for backward in trace.events_in(loop, EventKind.BACKWARD):
                value = backward.value
                if (
                    framework_scales(backward)
                    or backward.in_accumulate
                    or value is None
                    or gate in backward.gates
                ):
                    continue
                if (
                    value.scaled is not False
                    or (value.criterion_facts and value.criterion_facts.reduction == "sum")
                    or backward.span in reported
                ):
                    continue
                reported.add(backward.span)
                message = (
                    "backward() runs on every micro-step while the optimizer steps only every N (the modulo gate), "
                    "and the loss is never divided by the accumulation count: the update is N times too large. "
                    "Divide the loss by the number of accumulation steps before backward()."
                )
                evidence = [
                    Evidence(gate.span, "the optimizer step is gated here"),
                    Evidence(step.span, "the accumulated update"),
                ]
                if value.graph:
                    evidence.insert(0, value.graph)
                yield self.finding(
                    backward.span, message, evidence=evidence, confidence=value.graph_confidence
                )
