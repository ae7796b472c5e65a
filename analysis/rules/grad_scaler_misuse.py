"""TW020 grad-scaler-misuse."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import is_framework_step, iteration
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule


class GradScalerMisuse(Rule):
    """
    ## What it does
    Flags two misuses of a `torch.amp.GradScaler` (`torch.cuda.amp.GradScaler`) within one
    iteration: after `scaler.scale(loss).backward()`, the optimizer is stepped directly
    (`optimizer.step()`) instead of through `scaler.step(optimizer)`; or the gradients are
    clipped (`clip_grad_norm_`, `clip_grad_value_`) before `scaler.unscale_(optimizer)`.

    ## Why is this bad?
    `scaler.scale(loss)` multiplies the loss by a large factor (65536 at the start) so
    that float16 gradients do not underflow; `scaler.step` divides the gradients back and
    skips steps whose gradients overflowed. A bare `optimizer.step()` applies gradients
    thousands of times too large (and the infinities of overflowed steps), and the
    scaler's `update()` never sees the overflow. Clipping scaled gradients clips at a
    threshold thousands of times too small relative to the true gradient: almost every
    step is clipped to a tiny update.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)   # TW020: scaled gradients
    optimizer.step()                                          # TW020: bypasses the scaler
    scaler.update()
    ```
    Use instead:
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety
    No automatic fix: whether `scaler.step(optimizer)` or `scaler.unscale_(optimizer)` is
    right depends on which optimizer owns the clipped parameters and on code paths that
    disable the scaler; the change is shown for a person to make.

    ## Known limitations
    Only a backward on a value passed through `scaler.scale(...)` in the same iteration
    counts as scaled. When the code branches between a scaled and a plain path (`if
    use_amp: ... else: ...`), the branch with a `scaler.step` is taken as the scaled one
    and the other branch's bare step is not flagged. Scalers of frameworks (Accelerate,
    Lightning, DeepSpeed) handle both steps themselves and are not considered.
    """

    code = "TW020"
    name = "grad-scaler-misuse"
    default_severity = Severity.ERROR
    summary = "A GradScaler's scaled gradients reach a bare optimizer step or gradient clipping."

    VALID = (
        "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        opt.zero_grad()\n        scaler.scale(crit(model(x), y)).backward()\n        scaler.unscale_(opt)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        scaler.step(opt)\n        scaler.update()\n",
        "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.cuda.amp.GradScaler()\n    for x, y in loader:\n        opt.zero_grad()\n        scaler.scale(crit(model(x), y)).backward()\n        scaler.step(opt)\n        scaler.update()\n",
        # no scaler at all
        "import torch\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        opt.zero_grad()\n        crit(model(x), y).backward()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        opt.step()\n",
        # amp switchable: the plain branch's step is right
        "import torch\ndef train(model, loader, opt, crit, use_amp):\n    scaler = torch.amp.GradScaler(enabled=use_amp)\n    for x, y in loader:\n        loss = crit(model(x), y)\n        if use_amp:\n            scaler.scale(loss).backward()\n            scaler.step(opt)\n            scaler.update()\n        else:\n            loss.backward()\n            opt.step()\n",
        # a scaled backward on one path, a plain one on the other, then common clipping
        "import torch\ndef train(model, loader, opt, crit, use_amp):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        loss = crit(model(x), y)\n        if use_amp:\n            scaler.scale(loss).backward()\n        else:\n            loss.backward()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        if use_amp:\n            scaler.step(opt)\n        else:\n            opt.step()\n",
        # clipping after the step (of the next iteration's gradients: none)
        "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        scaler.scale(crit(model(x), y)).backward()\n        scaler.step(opt)\n        scaler.update()\n        opt.zero_grad()\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        opt.zero_grad()\n        scaler.scale(crit(model(x), y)).backward()\n        opt.step()\n        scaler.update()\n",
            Severity.ERROR,
            line=7,
        ),
        Invalid(
            "import torch\ndef train(model, loader, opt, crit):\n    scaler = torch.cuda.amp.GradScaler()\n    for x, y in loader:\n        opt.zero_grad()\n        scaler.scale(crit(model(x), y)).backward()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        scaler.step(opt)\n        scaler.update()\n",
            Severity.ERROR,
            line=7,
        ),
        Invalid(
            "import torch\nfrom torch.nn.utils import clip_grad_value_\nfrom torch.amp import GradScaler\ndef train(model, loader, opt, crit):\n    scaler = GradScaler('cuda')\n    for x, y in loader:\n        scaled = scaler.scale(crit(model(x), y))\n        scaled.backward()\n        clip_grad_value_(model.parameters(), 0.5)\n        scaler.step(opt)\n        scaler.update()\n",
            line=9,
        ),
        # the update in a helper the loop calls
        Invalid(
            "import torch\ndef update(opt):\n    opt.step()\n    opt.zero_grad()\n\ndef train(model, loader, opt, crit):\n    scaler = torch.amp.GradScaler()\n    for x, y in loader:\n        scaler.scale(crit(model(x), y)).backward()\n        update(opt)\n        scaler.update()\n",
            line=10,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace in facts.traces:
            scales = [e for e in trace.events if e.kind is EventKind.SCALER_SCALE]
            if not scales:
                continue
            scaler_steps = {e.span for e in trace.events if e.kind is EventKind.SCALER_STEP}
            scaler_gates = {
                gate.span
                for e in trace.events
                if e.kind is EventKind.SCALER_STEP
                for gate in e.gates
            }
            for loops in sorted({e.loops for e in scales}):
                for finding in self._check_iteration(trace, loops, scaler_steps, scaler_gates):
                    if finding.span not in reported:
                        reported.add(finding.span)
                        yield finding

    def _check_iteration(self, trace, loops, scaler_steps, scaler_gates):
        scale_pending = None  # a scaler.scale(...) whose backward has not run yet
        scaled_backward = None  # the last backward, when it was on a scaled value
        unscaled = False
        for event in iteration(trace, loops):
            kind = event.kind
            # backward and step both inside one call of a helper of this file: the helper's
            # own trace has them in order and reports there
            in_one_helper = (
                scaled_backward is not None
                and scaled_backward.span == event.span
                and bool(event.via)
                and not event.via[0].path
            )
            if kind is EventKind.SCALER_SCALE:
                scale_pending = event
            elif kind is EventKind.BACKWARD:
                if is_framework_step(event):
                    scaled_backward, scale_pending = None, None
                    continue
                scaled_backward = event if scale_pending is not None else None
                scale_pending = None
                unscaled = False
            elif kind is EventKind.SCALER_UNSCALE:
                unscaled = True
            elif kind is EventKind.CLIP_GRAD and scaled_backward is not None and not unscaled:
                if in_one_helper:
                    continue
                yield self.finding(
                    event.span,
                    "the gradients clipped here are still multiplied by the GradScaler's scale: the "
                    "threshold is thousands of times too small. Call `scaler.unscale_(optimizer)` before "
                    "clipping.",
                    evidence=[Evidence(scaled_backward.span, "the scaled backward")],
                )
            elif kind is EventKind.STEP and scaled_backward is not None:
                if event.span in scaler_steps or is_framework_step(event):
                    scaled_backward = None
                    continue
                if any(gate.span in scaler_gates for gate in event.gates):
                    continue  # the other branch of an `if` that steps through the scaler
                if in_one_helper:
                    scaled_backward = None
                    continue
                yield self.finding(
                    event.span,
                    "this optimizer step applies gradients a GradScaler scaled up (and any inf/NaN of "
                    "overflowed steps): step through `scaler.step(optimizer)` so they are unscaled and "
                    "overflowed steps skipped.",
                    evidence=[Evidence(scaled_backward.span, "the scaled backward"), *event.via],
                )
                scaled_backward = None
