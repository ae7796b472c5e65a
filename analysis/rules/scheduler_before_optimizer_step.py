"""TW018 scheduler-before-optimizer-step."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import events, is_framework_step, iteration, loop_header
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule


class SchedulerBeforeOptimizerStep(Rule):
    """
    ## What it does
    Flags `scheduler.step()` that runs, within one iteration of a loop, before the first
    `optimizer.step()` of that iteration — at the top of the epoch loop, or before the
    update in the batch loop.

    ## Why is this bad?
    Since PyTorch 1.1 a learning-rate scheduler must step after the optimizer. Stepped
    first, the first value of the schedule is skipped: warm-up starts one step (or one
    epoch) late, a step schedule decays one epoch early, and a one-cycle or cosine
    schedule is shifted for the whole run. PyTorch only prints a warning once, at the
    first call, which is easy to miss in a long log.

    ## Example
    ```python
    for epoch in range(epochs):
        scheduler.step()                  # TW018
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    ```
    Use instead:
    ```python
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        scheduler.step()
    ```

    ## Fix safety
    No automatic fix: moving the scheduler call shifts the whole schedule by one step,
    which the code may already compensate for elsewhere (a hand-tuned `last_epoch`, a
    warm-up counted from one); the change is for a person to make.

    ## Known limitations
    Only schedulers recognised by their constructor (`torch.optim.lr_scheduler.*`,
    `transformers.get_*_schedule*`, timm) and steps in the same function or in a helper it
    calls are considered. A scheduler step under an `if` in that loop that does not also
    gate the optimizer step is not flagged (it may be skipped on the first iteration).
    DeepSpeed engines step their scheduler themselves and are ignored.
    """

    code = "TW018"
    name = "scheduler-before-optimizer-step"
    default_severity = Severity.WARNING
    summary = "The learning-rate scheduler steps before the optimizer in the same iteration."

    VALID = (
        "import torch\ndef train(model, loader, opt, crit):\n    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n    for epoch in range(5):\n        for x, y in loader:\n            opt.zero_grad()\n            crit(model(x), y).backward()\n            opt.step()\n        sched.step()\n",
        "import torch\ndef train(model, loader, opt, crit):\n    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=100)\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n        sched.step()\n        opt.zero_grad()\n",
        # a scheduler step under an if (skipped on the first iteration)
        "import torch\ndef train(model, loader, opt, crit):\n    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n    for epoch in range(5):\n        if epoch > 0:\n            sched.step()\n        for x, y in loader:\n            crit(model(x), y).backward()\n            opt.step()\n",
        # ReduceLROnPlateau after validation
        "import torch\ndef train(model, loader, opt, crit, validate):\n    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\n    for epoch in range(5):\n        for x, y in loader:\n            crit(model(x), y).backward()\n            opt.step()\n        sched.step(validate(model))\n",
        # an object with a step() that is not a scheduler
        "def train(model, loader, opt, crit, ema):\n    for x, y in loader:\n        ema.step()\n        crit(model(x), y).backward()\n        opt.step()\n",
        # the optimizer steps in a helper first
        "import torch\ndef one_epoch(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n\ndef train(model, loader, opt, crit):\n    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n    for epoch in range(5):\n        one_epoch(model, loader, opt, crit)\n        sched.step()\n",
        # DeepSpeed's engine steps its own scheduler
        "import deepspeed\ndef train(model, loader, crit):\n    engine, opt, _, sched = deepspeed.initialize(model=model)\n    for x, y in loader:\n        engine.backward(crit(engine(x), y))\n        engine.step()\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef train(model, loader, opt, crit):\n    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n    for epoch in range(5):\n        sched.step()\n        for x, y in loader:\n            opt.zero_grad()\n            crit(model(x), y).backward()\n            opt.step()\n",
            Severity.WARNING,
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch.optim.lr_scheduler import CosineAnnealingLR\ndef train(model, loader, opt, crit):\n    sched = CosineAnnealingLR(opt, T_max=100)\n    for x, y in loader:\n        sched.step()\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
            line=6,
        ),
        # the training epoch is a helper
        Invalid(
            "import torch\ndef one_epoch(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n\ndef train(model, loader, opt, crit):\n    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [30, 60])\n    for epoch in range(90):\n        sched.step()\n        one_epoch(model, loader, opt, crit)\n",
            line=10,
        ),
        # both under the accumulation gate: the `if` does not delay the scheduler alone
        Invalid(
            "import torch\ndef train(model, loader, opt, crit, acc):\n    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n    for i, (x, y) in enumerate(loader):\n        (crit(model(x), y) / acc).backward()\n        if (i + 1) % acc == 0:\n            sched.step()\n            opt.step()\n            opt.zero_grad()\n",
            line=7,
        ),
        # transformers' schedule
        Invalid(
            "import torch\nfrom transformers import get_linear_schedule_with_warmup\ndef train(model, loader, opt):\n    sched = get_linear_schedule_with_warmup(opt, 100, 1000)\n    for batch in loader:\n        sched.step()\n        model(**batch).loss.backward()\n        opt.step()\n        opt.zero_grad()\n",
            line=6,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, scheduled in events(facts, EventKind.SCHEDULER_STEP):
            if not scheduled.loops or scheduled.span in reported:
                continue
            loop = scheduled.loops[-1]
            sequence = iteration(trace, scheduled.loops)
            updates = [e for e in sequence if e.kind is EventKind.STEP and not is_framework_step(e)]
            if not updates or any(
                e.kind is EventKind.STEP and is_framework_step(e) for e in sequence
            ):
                continue
            if any(g.loop == loop and g not in updates[0].gates for g in scheduled.gates):
                continue  # an `if` the update is not under: maybe skipped on the first pass
            if scheduled.in_helper_loop and updates[0].span == scheduled.span:
                continue  # both inside one call's own loop: reported in that helper
            first_update = sequence.index(updates[0])
            if sequence.index(scheduled) > first_update:
                continue
            reported.add(scheduled.span)
            message = (
                "the learning-rate scheduler steps before the optimizer in this iteration: the first value "
                "of the schedule is skipped (warm-up starts late, decays come one step or epoch early). "
                "Call `scheduler.step()` after `optimizer.step()`."
            )
            yield self.finding(
                scheduled.span,
                message,
                evidence=[
                    Evidence(updates[0].span, "the optimizer steps later in the same iteration"),
                    Evidence(loop_header(trace, loop), "the loop"),
                    *updates[0].via,
                ],
            )
