"""TW019 zero-grad-between-backward-and-step."""

from __future__ import annotations

from ..facts.events import Event, EventKind
from ..facts.structure import call_parts, is_framework_step, iteration
from ..facts.values import Kind
from ..finding import Applicability, Evidence, Severity
from ..rule import Fixed, Invalid, Rule
from .zero_grad_move import reset_move


def stepped_optimizer(facts, step: Event, scaler_steps: set) -> str | None:
    """The optimizer a STEP updates, as written (``opt`` in ``opt.step()`` and in
    ``scaler.step(opt)``)."""
    parts = call_parts(facts, step)
    if parts is None:
        return None
    receiver, argument = parts
    if step.span in scaler_steps:
        return argument or None
    return receiver


class ZeroGradBetweenBackwardAndStep(Rule):
    """
    ## What it does
    Flags a gradient reset (`optimizer.zero_grad()`, `model.zero_grad()`) that runs after
    `backward()` and before the optimizer `step()` that should apply those gradients.

    ## Why is this bad?
    `step()` reads `.grad`. Reset between the backward and the step, it sees zeros (or
    `None`, with `set_to_none=True`, and skips every parameter): the model never learns,
    while the loss is computed and logged as usual. Weight decay still shrinks the
    weights, so the curves look like slow, noisy training rather than none.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.zero_grad()     # TW019
        optimizer.step()
    ```
    Use instead:
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```

    ## Fix safety
    The fix moves the reset to just after the step. Proof obligations, checked on the
    source: the reset and the step are each a statement of their own in the same block,
    the reset comes first, and no statement between them calls `backward`, `step` or
    `zero_grad`. Then the only thing that changes is that the step (and anything between,
    such as gradient clipping) sees the gradients `backward()` computed instead of
    zeros, and the gradients are still reset before the next backward: safe. A call
    between them named like a training step or a loss (a helper that may run a backward
    the analysis cannot see) makes it unsafe. When the two are in different blocks (the
    step under an accumulation `if`) there is no fix.

    ## Known limitations
    The reset and the step must name the same optimizer (or the reset is
    `model.zero_grad()` in a loop that steps one optimizer), so a GAN that resets the
    generator between the discriminator's backward and step is not flagged. Resets by
    assignment (`p.grad = None`) are not considered. The order is the order of the
    source within one iteration; branches are not correlated.
    """

    code = "TW019"
    name = "zero-grad-between-backward-and-step"
    default_severity = Severity.ERROR
    summary = "Gradients are reset after backward() and before the step that should apply them."

    VALID = (
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n        opt.zero_grad()\n",
        # a GAN: the generator's reset falls between the discriminator's backward and step
        "def train(netD, netG, optD, optG, loader):\n    for x in loader:\n        optD.zero_grad()\n        netD(x).mean().backward()\n        optG.zero_grad()\n        optD.step()\n        netD(netG(x)).mean().backward()\n        optG.step()\n",
        # accumulation: reset after the gated step
        "def train(model, loader, opt, crit, k):\n    for i, (x, y) in enumerate(loader):\n        crit(model(x), y).backward()\n        if i % k == 0:\n            opt.step()\n            opt.zero_grad()\n",
        # a second backward after the reset: the step applies that one
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
        # the reset of another optimizer
        "def train(model, loader, opt, other, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        other.zero_grad()\n        opt.step()\n        opt.zero_grad()\n",
        # a GradScaler step after the reset of its own optimizer, with a fresh backward
        "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        opt.zero_grad()\n        scaler.scale(crit(model(x), y)).backward()\n        scaler.step(opt)\n        scaler.update()\n",
    )
    INVALID = (
        Invalid(
            "def train(model, loader, opt, crit):\n    for x, y in loader:\n        loss = crit(model(x), y)\n        loss.backward()\n        opt.zero_grad()\n        opt.step()\n",
            Severity.ERROR,
            line=5,
            fixed=Fixed(
                "def train(model, loader, opt, crit):\n    for x, y in loader:\n        loss = crit(model(x), y)\n        loss.backward()\n        opt.step()\n        opt.zero_grad()\n",
                Applicability.SAFE,
            ),
        ),
        # clipping in between sees zeros too; the fix moves the reset past both
        Invalid(
            "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.Adam(model.parameters())\nfor x in range(3):\n    model(x).sum().backward()\n    model.zero_grad(set_to_none=True)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n",
            line=6,
            fixed=Fixed(
                "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.Adam(model.parameters())\nfor x in range(3):\n    model(x).sum().backward()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n    model.zero_grad(set_to_none=True)\n",
                Applicability.SAFE,
            ),
        ),
        # a GradScaler's step
        Invalid(
            "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.cuda.amp.GradScaler()\n    for x, y in loader:\n        scaler.scale(crit(model(x), y)).backward()\n        opt.zero_grad()\n        scaler.step(opt)\n        scaler.update()\n",
            line=6,
            fixed=Fixed(
                "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.cuda.amp.GradScaler()\n    for x, y in loader:\n        scaler.scale(crit(model(x), y)).backward()\n        scaler.step(opt)\n        opt.zero_grad()\n        scaler.update()\n",
                Applicability.SAFE,
            ),
        ),
        # the step under an accumulation if: flagged, but the reset cannot simply move
        Invalid(
            "def train(model, loader, opt, crit, k):\n    for i, (x, y) in enumerate(loader):\n        crit(model(x), y).backward()\n        opt.zero_grad()\n        if i % k == 0:\n            opt.step()\n",
            line=4,
            fixed=None,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace in facts.traces:
            steps = [
                e for e in trace.events if e.kind is EventKind.STEP and not is_framework_step(e)
            ]
            if not steps:
                continue
            scaler_steps = {e.span for e in trace.events if e.kind is EventKind.SCALER_STEP}
            # one iteration's events, their positions and its stepped optimizers, read once
            # per loop nest: re-reading them at every step() made a long straight-line
            # script (thousands of steps in one iteration) quadratic
            iterations: dict = {}
            for step in steps:
                finding = self._check_step(facts, trace, step, scaler_steps, iterations)
                if finding is not None and finding.span not in reported:
                    reported.add(finding.span)
                    yield finding

    def _check_step(self, facts, trace, step, scaler_steps, iterations):
        if step.loops not in iterations:
            events = iteration(trace, step.loops)
            positions = {id(e): i for i, e in enumerate(events)}
            stepped = {
                stepped_optimizer(facts, e, scaler_steps)
                for e in events
                if e.kind is EventKind.STEP and not is_framework_step(e)
            }
            iterations[step.loops] = (events, positions, stepped)
        sequence, positions, stepped_here = iterations[step.loops]
        position = positions[id(step)]
        optimizer = stepped_optimizer(facts, step, scaler_steps)
        if optimizer is None:
            return None
        reset = None
        for event in (sequence[i] for i in reversed(range(position))):
            if event.kind is EventKind.BACKWARD or event.kind is EventKind.GRAD_CALL:
                if reset is None:
                    return None  # the step applies this backward
                break
            if event.kind is EventKind.STEP and event.span not in scaler_steps:
                if stepped_optimizer(facts, event, scaler_steps) == optimizer:
                    return None  # this optimizer already stepped since the backward
            if event.kind is EventKind.ZERO_GRAD and reset is None:
                if self._resets(facts, event, optimizer, stepped_here):
                    reset = event
        else:
            return None  # no backward before the reset in this iteration
        if reset is None or reset.gates != step.gates[: len(reset.gates)]:
            return None
        backward = event
        message = (
            f"the gradients are reset here, after backward() and before `{optimizer}` steps: the step "
            "sees zeroed (or None) gradients and the model does not learn. Reset them after the step "
            "(or before the backward)."
        )
        return self.finding(
            reset.span,
            message,
            evidence=[
                Evidence(step.span, "the optimizer steps here, on the reset gradients"),
                Evidence(backward.span, "the gradients it should apply are computed here"),
            ],
            payload=reset_move(facts.analyzer.tree, facts.lines, reset.span, step.span),
        )

    @staticmethod
    def _resets(facts, reset: Event, optimizer: str, stepped_here: set) -> bool:
        """Whether ``reset`` clears the gradients ``optimizer`` is about to apply."""
        parts = call_parts(facts, reset)
        if parts is None:
            return False
        receiver = parts[0]
        if receiver == optimizer:
            return True
        target = reset.target
        return (
            target is not None
            and target.kind is Kind.MODEL
            and len(stepped_here) == 1  # model.zero_grad() with one optimizer in the loop
        )
