"""TW017 optimizer-in-loop."""

from __future__ import annotations

from ..facts.events import Event, EventKind
from ..facts.structure import events, is_framework_step, loop_header
from ..finding import Applicability, Evidence, Severity, Span
from ..rule import Fixed, Invalid, Rule


class OptimizerInLoop(Rule):
    """
    ## What it does
    Flags an optimizer that is constructed inside the loop that steps it: a fresh
    `torch.optim.Adam(...)` (or any stateful optimizer) every iteration, or every epoch.

    ## Why is this bad?
    Adam's moments, momentum buffers, Adagrad's sums and the step count live in the
    optimizer. Building a new one each iteration throws that state away before every
    update: Adam degenerates to a sign-like update of size `lr` on every step (its bias
    correction sees step 1 forever), momentum never builds up, and the learning-rate
    scheduler attached to the old optimizer no longer drives the one that steps. The
    loss still goes down a little, so the bug hides as "poor convergence".

    ## Example
    ```python
    for x, y in loader:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)   # TW017
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    ```
    Use instead:
    ```python
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    ```

    ## Fix safety
    The fix moves the construction statement to just before the loop. Its proof
    obligations, checked on the source: the statement is a plain `name = Optimizer(...)`
    directly in the loop body (not under an `if` or `with`); no name the constructor
    call reads is assigned anywhere in the loop (so the hoisted call sees the same
    model, parameters and hyper-parameters as every iteration did); the optimizer's
    name is assigned nowhere else in the loop and not read in the loop before the
    construction. When they hold and the optimizer is rebuilt every step, the fix is
    safe: the update changes only by keeping the state the optimizer exists to keep.
    When it is rebuilt once per epoch the reset may be a deliberate warm restart, and
    when the loop also builds something on it (a scheduler re-created each iteration
    re-bases on the rate the last one left), the fix is unsafe. When an obligation
    fails there is no fix.

    ## Known limitations
    Quiet when the construction is under an `if` in the loop (lazy creation, progressive
    unfreezing), when the parameters it is given are rebound in the same loop (a fresh
    model per fold or trial, a fresh leaf tensor per guidance step), for plain
    `torch.optim.SGD` without momentum (which keeps no state: rebuilding it only costs
    time), and for optimizers built by a framework. An optimizer built by a helper that
    the loop calls (`self.train_one_epoch()` in the epoch loop) is reported at the call.
    Parameters rebound in the loop only to a wrap of themselves
    (`model, optimizer = accelerator.prepare(model, optimizer)`) are the same parameters,
    and the rebuilt optimizer is reported.
    """

    code = "TW017"
    name = "optimizer-in-loop"
    default_severity = Severity.ERROR
    summary = "An optimizer is constructed inside the loop that steps it, losing its state."

    VALID = (
        "import torch\ndef train(model, loader, crit):\n    opt = torch.optim.Adam(model.parameters())\n    for x, y in loader:\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
        # a fresh model per fold: the optimizer must be fresh too
        "import torch\ndef cv(folds, crit):\n    for train_loader in folds:\n        model = torch.nn.Linear(2, 2)\n        opt = torch.optim.Adam(model.parameters())\n        for x, y in train_loader:\n            opt.zero_grad()\n            crit(model(x), y).backward()\n            opt.step()\n",
        # lazy creation under an if
        "import torch\ndef train(model, loader, crit):\n    opt = None\n    for x, y in loader:\n        if opt is None:\n            opt = torch.optim.Adam(model.parameters())\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
        # a fresh leaf every guidance step
        "import torch\ndef guide(unet, latents, steps):\n    for t in steps:\n        x = latents.detach().clone().requires_grad_(True)\n        opt = torch.optim.Adam([x], lr=0.1)\n        unet(x, t).sum().backward()\n        opt.step()\n",
        # plain SGD keeps no state
        "import torch\ndef train(model, loader, crit, lr):\n    for x, y in loader:\n        opt = torch.optim.SGD(model.parameters(), lr=lr)\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
        # built in a loop, stepped after it: a sweep that trains once per value
        "import torch\ndef sweep(model, batch, crit, rates):\n    opts = []\n    for lr in rates:\n        opts.append(torch.optim.Adam(model.parameters(), lr=lr))\n    crit(model(batch), batch).backward()\n    opts[0].step()\n",
        # progressive unfreezing: rebuilt under an if at a chosen epoch
        "import torch\ndef train(model, loader, crit, epochs):\n    opt = torch.optim.Adam(model.head.parameters())\n    for epoch in range(epochs):\n        if epoch == 5:\n            opt = torch.optim.Adam(model.parameters())\n        for x, y in loader:\n            opt.zero_grad()\n            crit(model(x), y).backward()\n            opt.step()\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef train(model, loader, crit):\n    for x, y in loader:\n        opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
            Severity.ERROR,
            line=4,
            fixed=Fixed(
                "import torch\ndef train(model, loader, crit):\n    opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n    for x, y in loader:\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch.optim as optim\nimport torch\nmodel = torch.nn.Linear(2, 2)\nfor step in range(100):\n    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n    model(torch.randn(4, 2)).sum().backward()\n    optimizer.step()\n    optimizer.zero_grad()\n",
            Severity.ERROR,
            line=5,
            fixed=Fixed(
                "import torch.optim as optim\nimport torch\nmodel = torch.nn.Linear(2, 2)\noptimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\nfor step in range(100):\n    model(torch.randn(4, 2)).sum().backward()\n    optimizer.step()\n    optimizer.zero_grad()\n",
                Applicability.SAFE,
            ),
        ),
        # rebuilt every epoch: a warning, and the fix is for review
        Invalid(
            "import torch\ndef train(model, loader, crit, epochs):\n    for epoch in range(epochs):\n        opt = torch.optim.AdamW(model.parameters())\n        for x, y in loader:\n            opt.zero_grad()\n            crit(model(x), y).backward()\n            opt.step()\n",
            Severity.WARNING,
            line=4,
            fixed=Fixed(
                "import torch\ndef train(model, loader, crit, epochs):\n    opt = torch.optim.AdamW(model.parameters())\n    for epoch in range(epochs):\n        for x, y in loader:\n            opt.zero_grad()\n            crit(model(x), y).backward()\n            opt.step()\n",
                Applicability.UNSAFE,
            ),
        ),
        # stepped by a helper the loop calls
        Invalid(
            "import torch\ndef update(opt, loss):\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n\ndef train(model, loader, crit):\n    for x, y in loader:\n        opt = torch.optim.Adam(model.parameters())\n        update(opt, crit(model(x), y))\n",
            Severity.ERROR,
            line=9,
            fixed=Fixed(
                "import torch\ndef update(opt, loss):\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n\ndef train(model, loader, crit):\n    opt = torch.optim.Adam(model.parameters())\n    for x, y in loader:\n        update(opt, crit(model(x), y))\n",
                Applicability.SAFE,
            ),
        ),
        # the learning rate changes every iteration: flagged, but no fix can hoist it
        Invalid(
            "import torch\ndef train(model, loader, crit):\n    lr = 1e-3\n    for x, y in loader:\n        lr = lr * 0.99\n        opt = torch.optim.Adam(model.parameters(), lr=lr)\n        crit(model(x), y).backward()\n        opt.step()\n        opt.zero_grad()\n",
            Severity.ERROR,
            line=6,
            fixed=None,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, built in events(facts, EventKind.OPTIMIZER_BUILT):
            call = built.call
            if not built.loops or call is None or call.stateless or call.rebuilt_inputs:
                continue
            if built.in_helper_loop:
                continue  # built in a loop of the helper: reported there, once
            loop = built.loops[-1]
            if any(gate.loop == loop for gate in built.gates) or built.span in reported:
                continue
            steps = [
                step
                for step in trace.events
                if step.kind is EventKind.STEP
                and not is_framework_step(step)
                and loop in step.loops
                and step.target is not None
                and step.target.origin is not None
                and step.target.origin.span == _construction(built)
            ]
            if not steps:
                continue
            reported.add(built.span)
            every_step = any(step.loops[-1] == loop for step in steps)
            step = next((s for s in steps if s.loops[-1] == loop), steps[0])
            if every_step:
                message = (
                    "this optimizer is constructed inside the loop that steps it: its state "
                    "(Adam moments, momentum buffers, step count) is thrown away before every update. "
                    "Construct it once, before the loop."
                )
            else:
                message = (
                    "this optimizer is rebuilt at every iteration of an outer (epoch) loop while an inner loop "
                    "steps it: its state (Adam moments, momentum buffers) restarts every epoch. Construct it "
                    "once, before the loop, unless the restart is deliberate."
                )
            yield self.finding(
                built.span,
                message,
                evidence=[
                    Evidence(step.span, "the optimizer steps here"),
                    Evidence(loop_header(trace, loop), "the loop that rebuilds it"),
                    *built.via,
                    *step.via,
                ],
                severity=None if every_step else Severity.WARNING,
            )


def _construction(built: Event) -> Span:
    """Where the optimizer was constructed: the event's own span, or, for one a called
    helper builds (``self.train_one_epoch()`` in the epoch loop), the innermost step of
    its ``via`` chain, which is where the step's optimizer value has its origin."""
    return built.via[-1].span if built.via else built.span
