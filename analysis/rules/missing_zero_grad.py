"""TW003 missing-zero-grad."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.proofs import is_torch_optimizer
from ..facts.structure import events, framework_zeroes, loop_header
from ..facts.values import Kind, Value
from ..finding import Applicability, Evidence, Proof, Severity, Span
from ..rule import Fixed, Invalid, Rule
from .missing_zero_grad_reset import zero_grad_reset


def _optimizer_site(value: Value | None) -> Span | None:
    """Where an optimizer was built: its identity across the events of one trace."""
    if value is None or value.kind is not Kind.OPTIMIZER or value.origin is None:
        return None
    return value.origin.span


def _resets_for(trace, loop: int, step) -> bool:
    """Whether the loop resets the gradients the optimizer of ``step`` applies.

    A reset through a model, a parameter's ``.grad`` or a helper cannot be tied to one
    optimizer and counts for all of them; ``opt_d.zero_grad()`` resets only ``opt_d``,
    so a GAN loop that resets the discriminator's optimizer and never the generator's
    still accumulates the generator's gradients.
    """
    resets = trace.events_in(loop, EventKind.ZERO_GRAD)
    own = _optimizer_site(step.target)
    if own is None:
        return bool(resets)
    return any(_optimizer_site(r.target) in (None, own) for r in resets)


class MissingZeroGrad(Rule):
    """
    ## What it does
    Flags a loop that runs `backward()` and an optimizer `step()` but never resets the
    gradients (`optimizer.zero_grad()`, `model.zero_grad()`, `p.grad = None`).

    ## Why is this bad?
    `backward()` adds to `.grad`; it does not overwrite it. Without a reset every step
    applies the sum of all gradients so far: the effective learning rate grows with the
    step count, training diverges or plateaus, and the logged loss looks merely "bad".

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()          # TW003: gradients are never reset
    ```
    Use instead:
    ```python
    for x, y in loader:
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    The fix inserts `optimizer.zero_grad(set_to_none=True)` right after the optimizer
    step (inside an accumulation `if` when the step is there), which changes the update
    only by removing the stale gradients. It is safe only when the optimizer is proven
    a `torch.optim` one built in the file (a guessed one may lack `set_to_none`), the
    function never reads `.grad` (which is `None` after the reset), the step takes no
    closure and the loop calls no `backward(retain_graph=True)` (a gradient-comparison
    harness whose accumulation may be deliberate). Otherwise the fix is unsafe.

    ## Known limitations
    A reset anywhere in the loop (including inside the `if` that gates an accumulated
    step, in a helper the loop calls, or through a reset helper imported from another
    module, `zero_grad(params)`) counts. `opt_d.zero_grad()` resets `opt_d` only: a GAN
    loop that never resets the generator's optimizer is reported; a reset through a
    model or `.grad` counts for every optimizer. Loops without an optimizer step, and
    frameworks that zero the gradients themselves (a DeepSpeed engine's `step()`,
    Lightning's automatic optimization, a Hugging Face `Trainer`) are not flagged;
    `accelerator.backward` and Lightning's `manual_backward` do not zero, so a loop
    around them needs its own reset. A loop that
    calls `backward(retain_graph=True)` looks like a gradient-comparison harness and is
    reported as a note at most.
    """

    code = "TW003"
    name = "missing-zero-grad"
    default_severity = Severity.ERROR
    summary = "A training loop steps the optimizer but never resets the gradients."

    VALID = (
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        opt.step()\n",
        # deliberate accumulation: reset inside the update if
        "def train(model, loader, opt, crit, accum):\n    for i, (x, y) in enumerate(loader):\n        (crit(model(x), y) / accum).backward()\n        if (i + 1) % accum == 0:\n            opt.step()\n            opt.zero_grad()\n",
        # no optimizer step: a gradient probe
        "def grads(model, loader, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n",
        # parameters reset by hand
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        for p in model.parameters():\n            p.grad = None\n        crit(model(x), y).backward()\n        opt.step()\n",
        "def train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n        model.zero_grad(set_to_none=True)\n",
        # a scheduler step is not an optimizer step
        "import torch\ndef train(model, loader, crit):\n    sched = torch.optim.lr_scheduler.StepLR(None, 1)\n    for x, y in loader:\n        crit(model(x), y).backward()\n        sched.step()\n",
        # a helper resets
        "def reset(opt):\n    opt.zero_grad()\n\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n        reset(opt)\n",
        # framework loops: a HF Trainer and Lightning's automatic optimization
        "from transformers import Trainer, TrainingArguments\ndef main(model, ds):\n    trainer = Trainer(model=model, args=TrainingArguments('out'), train_dataset=ds)\n    trainer.train()\n",
        "import lightning as L\nclass Lit(L.LightningModule):\n    def training_step(self, batch, idx):\n        loss = self.model(batch).mean()\n        return loss\n",
        # an optimizer built inside the loop over a fresh leaf each iteration
        "import torch\ndef guide(unet, latents, steps):\n    for t in steps:\n        x = latents.detach().clone().requires_grad_(True)\n        opt = torch.optim.SGD([x], lr=0.1)\n        unet(x, t).sum().backward()\n        opt.step()\n",
        # DeepSpeed's engine zeroes gradients in step()
        "import deepspeed\ndef train(model, loader, crit):\n    engine, opt, _, _ = deepspeed.initialize(model=model)\n    for x, y in loader:\n        loss = crit(engine(x), y)\n        engine.backward(loss)\n        engine.step()\n",
    )
    INVALID = (
        Invalid(
            "def train(model, loader, opt, crit):\n    for x, y in loader:\n        loss = crit(model(x), y)\n        loss.backward()\n        opt.step()\n",
            line=5,
            fixed=Fixed(
                "def train(model, loader, opt, crit):\n    for x, y in loader:\n        loss = crit(model(x), y)\n        loss.backward()\n        opt.step()\n        opt.zero_grad(set_to_none=True)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nopt.zero_grad()\nfor x in range(10):\n    model(x).sum().backward()\n    opt.step()\n",
            Severity.ERROR,
            line=7,
            fixed=Fixed(
                "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nopt.zero_grad()\nfor x in range(10):\n    model(x).sum().backward()\n    opt.step()\n    opt.zero_grad(set_to_none=True)\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch\ndef step(model, x, opt):\n    model(x).sum().backward()\n    opt.step()\n\ndef train(model, loader):\n    opt = torch.optim.Adam(model.parameters())\n    for x in loader:\n        step(model, x, opt)\n",
            line=9,
        ),
        Invalid(
            "def compare(model, loader, opt):\n    for x in loader:\n        out = model(x).sum()\n        out.backward(retain_graph=True)\n        out.backward()\n        opt.step()\n",
            Severity.NOTE,
            line=6,
            fixed=Fixed(
                "def compare(model, loader, opt):\n    for x in loader:\n        out = model(x).sum()\n        out.backward(retain_graph=True)\n        out.backward()\n        opt.step()\n        opt.zero_grad(set_to_none=True)\n",
                Applicability.UNSAFE,
            ),
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, step in events(facts, EventKind.STEP):
            if not step.loops or step.in_helper_loop or framework_zeroes(step):
                continue
            loop = step.loops[-1]
            if (id(trace), loop) in reported:
                continue  # one finding per loop, however many optimizers it steps
            backwards = [
                b for b in trace.events_in(loop, EventKind.BACKWARD) if not framework_zeroes(b)
            ]
            if not backwards or _resets_for(trace, loop, step):
                continue
            reported.add((id(trace), loop))
            target = step.target
            if (
                target is not None
                and target.origin is not None
                and trace.loops[loop].contains_line(target.origin.span.line)
            ):
                continue  # a fresh optimizer each iteration, usually over fresh leaf tensors (diffusers' guidance)
            harness = any(b.retain_graph for b in backwards)
            target = step.target
            confidence = (
                target.confidence
                if target is not None and target.kind is not None
                else backwards[0].value.graph_confidence
                if backwards[0].value
                else None
            )
            message = (
                "this loop runs backward() and steps the optimizer but never resets the gradients: "
                "backward() adds to `.grad`, so each step applies the sum of all gradients so far. "
                "Call `optimizer.zero_grad(set_to_none=True)` once per update."
            )
            if trace.events_in(loop, EventKind.ZERO_GRAD):
                message += " (The loop resets another optimizer's gradients, never this one's.)"
            if harness:
                message += " (backward(retain_graph=True) suggests a gradient-comparison harness: reported as a note.)"
            evidence = [
                Evidence(backwards[0].span, "gradients are accumulated here"),
                Evidence(loop_header(trace, loop), "the loop that repeats it"),
            ]
            evidence.extend(step.via)
            yield self.finding(
                step.span,
                message,
                evidence=evidence,
                severity=Severity.NOTE if harness else None,
                **({"confidence": confidence} if confidence else {}),
                proofs=[Proof.TORCH_OPTIMIZER] if is_torch_optimizer(step.target) else [],
                payload=zero_grad_reset(facts.analyzer.tree, facts.lines, step.span),
            )
