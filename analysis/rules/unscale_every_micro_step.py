"""TW025 unscale-every-micro-step."""

from __future__ import annotations

from ..facts.events import Event, EventKind, Trace
from ..facts.structure import accumulation_gate, events, runs_backward
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule


class UnscaleEveryMicroStep(Rule):
    """
    ## What it does
    Flags `scaler.unscale_(optimizer)` that runs on every micro-step of gradient
    accumulation while `scaler.step(optimizer)` and `scaler.update()` run only on the
    accumulation boundary: the unscale is outside the `if (i + 1) % accum == 0:` that
    gates the step, or inside an inner micro-batch loop that runs backward while the step
    comes after that loop (also in a `step(self, batch)` that handles one batch, with no
    batch loop of its own around the micro-batch loop).

    ## Why is this bad?
    A `GradScaler` allows one `unscale_` per optimizer between two `update()` calls. The
    second micro-step calls it again before any update and raises
    `RuntimeError: unscale_() has already been called on this optimizer since the last
    update()`: the run crashes on its second batch (or, with the unscale under a flag,
    as soon as the flag is set). Unscaling before the gradients are complete would also
    clip a partial sum.

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        scaler.scale(criterion(model(x), y) / accum).backward()
        scaler.unscale_(optimizer)                       # TW025
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    ```
    Use instead: move the `unscale_` and the clipping under the `if`, just before
    `scaler.step(optimizer)`.

    ## Fix safety
    No automatic fix: the clipping that follows the unscale has to move with it, and
    which statements belong to the update is the author's call.

    ## Known limitations
    The step boundary is recognised by a modulo gate (`i % accum == 0`) on
    `scaler.step`; a step gated by a flag computed elsewhere is not. An unscale under a
    modulo gate of its own is taken to share the step's. An inner loop over optimizers
    (`for opt in optimizers: scaler.unscale_(opt)`) is not a micro-step loop: it runs no
    backward. timm's `loss_scaler(loss, optimizer, clip_grad=...)` unscales and steps in
    one call and is never flagged.
    """

    code = "TW025"
    name = "unscale-every-micro-step"
    default_severity = Severity.ERROR
    summary = "GradScaler.unscale_ runs on every accumulation micro-step but the scaler steps only on the boundary."

    VALID = (
        # the recipe: unscale and clip under the accumulation gate
        "import torch\ndef train(model, loader, opt, crit, accum):\n    scaler = torch.amp.GradScaler()\n    for i, (x, y) in enumerate(loader):\n        scaler.scale(crit(model(x), y) / accum).backward()\n        if (i + 1) % accum == 0:\n            scaler.unscale_(opt)\n            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n            scaler.step(opt)\n            scaler.update()\n            opt.zero_grad()\n",
        # no accumulation: unscale every step is right
        "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        scaler.scale(crit(model(x), y)).backward()\n        scaler.unscale_(opt)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        scaler.step(opt)\n        scaler.update()\n        opt.zero_grad()\n",
        # an inner micro-batch loop, unscaled once after it
        "import torch\ndef train(model, batches, opt, crit, n):\n    scaler = torch.amp.GradScaler()\n    for chunks in batches:\n        for x, y in chunks:\n            scaler.scale(crit(model(x), y) / n).backward()\n        scaler.unscale_(opt)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        scaler.step(opt)\n        scaler.update()\n        opt.zero_grad()\n",
        # several optimizers unscaled in a loop of their own: no backward in it
        "import torch\ndef train(model, loader, opts, crit):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        scaler.scale(crit(model(x), y)).backward()\n        for opt in opts:\n            scaler.unscale_(opt)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        for opt in opts:\n            scaler.step(opt)\n        scaler.update()\n",
        # unscale under a modulo gate of its own, as the step
        "import torch\ndef train(model, loader, opt, crit, accum):\n    scaler = torch.amp.GradScaler()\n    for i, (x, y) in enumerate(loader):\n        scaler.scale(crit(model(x), y) / accum).backward()\n        if (i + 1) % accum == 0:\n            scaler.unscale_(opt)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        if (i + 1) % accum == 0:\n            scaler.step(opt)\n            scaler.update()\n            opt.zero_grad()\n",
        # timm's loss scaler unscales and steps in one call
        "from timm.utils import NativeScaler\ndef train(model, loader, opt, crit):\n    loss_scaler = NativeScaler()\n    for x, y in loader:\n        opt.zero_grad()\n        loss_scaler(crit(model(x), y), opt, clip_grad=1.0, parameters=model.parameters())\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef train(model, loader, opt, crit, accum):\n    scaler = torch.amp.GradScaler()\n    for i, (x, y) in enumerate(loader):\n        scaler.scale(crit(model(x), y) / accum).backward()\n        scaler.unscale_(opt)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        if (i + 1) % accum == 0:\n            scaler.step(opt)\n            scaler.update()\n            opt.zero_grad()\n",
            Severity.ERROR,
            line=6,
        ),
        # under a clipping flag, still outside the accumulation gate
        Invalid(
            "import torch\ndef train(model, loader, opt, crit, accum, clip):\n    scaler = torch.cuda.amp.GradScaler()\n    for step, (x, y) in enumerate(loader):\n        scaler.scale(crit(model(x), y) / accum).backward()\n        if clip:\n            scaler.unscale_(opt)\n            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)\n        if step % accum == 0:\n            scaler.step(opt)\n            scaler.update()\n            opt.zero_grad()\n",
            line=7,
        ),
        # unscaled inside the micro-batch loop, stepped after it
        Invalid(
            "import torch\ndef train(model, batches, opt, crit, n):\n    scaler = torch.amp.GradScaler()\n    for chunks in batches:\n        for x, y in chunks:\n            scaler.scale(crit(model(x), y) / n).backward()\n            scaler.unscale_(opt)\n            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        scaler.step(opt)\n        scaler.update()\n        opt.zero_grad()\n",
            line=7,
        ),
        # a trainer class, the scaler and optimizer on self
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self, model, opt, accum):\n        self.model, self.opt, self.accum = model, opt, accum\n        self.scaler = torch.amp.GradScaler()\n    def fit(self, loader, crit):\n        for i, (x, y) in enumerate(loader):\n            loss = crit(self.model(x), y) / self.accum\n            self.scaler.scale(loss).backward()\n            self.scaler.unscale_(self.opt)\n            if (i + 1) % self.accum == 0:\n                self.scaler.step(self.opt)\n                self.scaler.update()\n                self.opt.zero_grad()\n",
            line=10,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, unscale in events(facts, EventKind.SCALER_UNSCALE):
            if not unscale.loops or unscale.span in reported:
                continue
            for step in trace.events:
                if step.kind is not EventKind.SCALER_STEP or step.span == unscale.span:
                    continue
                why = _more_often(trace, unscale, step)
                if why is None:
                    continue
                reported.add(unscale.span)
                yield self.finding(
                    unscale.span,
                    "`unscale_()` runs on every accumulation micro-step, but the scaler steps and "
                    "updates only on the boundary: the second micro-step raises `RuntimeError: "
                    "unscale_() has already been called on this optimizer since the last update()`. "
                    "Move the unscale (and the clipping after it) to just before `scaler.step(optimizer)`.",
                    evidence=[why, Evidence(step.span, "the scaler steps only here"), *unscale.via],
                )
                break


def _more_often(trace: Trace, unscale: Event, step: Event) -> Evidence | None:
    """Why ``unscale`` runs more often than ``step`` (None: it does not, as far as known)."""
    gate = accumulation_gate(step) if step.loops else None
    if unscale.loops == step.loops and gate is not None:
        innermost = step.loops[-1]
        if gate in unscale.gates or any(g.is_modulo and g.loop == innermost for g in unscale.gates):
            return None
        return Evidence(gate.span, "the step is gated here, once every N micro-steps")
    depth = len(step.loops)
    if depth == 0 and (unscale.via or step.via):
        # no batch loop around the step: only a micro-batch loop written in this function
        # counts, not two calls of a helper (one inside a loop, one outside)
        return None
    if len(unscale.loops) > depth and unscale.loops[:depth] == step.loops:
        inner = unscale.loops[depth]
        if runs_backward(trace, inner):
            return Evidence(
                trace.loops[inner].span, "this micro-step loop runs backward on every iteration"
            )
    return None
