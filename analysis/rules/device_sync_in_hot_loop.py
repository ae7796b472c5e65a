"""TW007 device-sync-in-hot-loop."""

from __future__ import annotations

from ..facts.events import Event, EventKind, Trace
from ..facts.relevance import in_test_code
from ..facts.structure import events, loop_header
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule


def steps_directly(trace: Trace, loop: int) -> bool:
    """The loop's own body (not a loop nested in it) runs a backward or an optimizer step:
    each of its iterations is one training step."""
    return any(
        e.loops and e.loops[-1] == loop and e.kind in (EventKind.BACKWARD, EventKind.STEP)
        for e in trace.events
    )


def gated_by_modulo(event: Event, loop: int) -> bool:
    """Inside ``if step % N == 0`` of that loop (periodic logging), or any if nested in it."""
    return any(g.is_modulo for g in event.gates if g.loop is not None and g.loop >= loop)


def already_syncs(trace: Trace, sync: Event, loop: int) -> Event | None:
    """Another read of a tensor to the host on every iteration of the step ``loop``
    (``loss.item()`` for a NaN check or a progress bar): the step waits for the device
    there anyway, so one ``synchronize()`` more (before reading a clock) adds little."""
    return next(
        (
            e
            for e in trace.events
            if e.kind is EventKind.SYNC
            and e is not sync
            and e.target is not None
            and e.loops
            and e.loops[-1] == loop
            and not gated_by_modulo(e, loop)
        ),
        None,
    )


def drives_the_next_step(trace: Trace, loop: int) -> bool:
    """The loop runs the model on every iteration, so what it reads back is a fresh
    output each time: a rollout handing each action to a CPU environment
    (``env.step(action.item())``) or sampling token by token, where the next iteration
    needs the value on the host. Per-element reads of one batch's output run no model."""
    return any(
        e.kind is EventKind.FORWARD and e.loops and e.loops[-1] == loop for e in trace.events
    )


_TIMING = ("time(", "perf_counter", "elapsed", "Event(", "record(", "timer", "Timer")


def times_the_step(facts, sync: Event) -> bool:
    """A synchronize next to a clock reading (``t1 = time.time()``, ``end.record()``,
    ``start.elapsed_time(end)``) within three lines: a measurement, which needs the sync."""
    lines = range(sync.span.line - 3, sync.span.end_line + 4)
    return any(marker in facts.lines.line_text(n) for n in lines for marker in _TIMING)


class DeviceSyncInHotLoop(Rule):
    """
    ## What it does
    Flags a host-device synchronisation repeated inside the training step: `.item()`,
    `.cpu()`, `.numpy()` or `.tolist()` of a tensor in a loop *nested inside* the step
    (once per element, per layer, per class), or `torch.cuda.synchronize()` on every step.

    ## Why is this bad?
    CUDA runs asynchronously: the Python loop queues kernels and races ahead. Reading a
    value back (`.item()`) or synchronising waits until every queued kernel has finished,
    so the GPU drains its queue and idles while Python catches up. Once per step (logging
    the loss) costs little; once per element of a batch, per class or per parameter it
    turns the step into hundreds of round trips.

    ## Example
    ```python
    for x, y in loader:
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        for i in range(len(y)):
            correct += out[i].argmax().item() == y[i]       # TW007: a sync per sample
    ```
    Use instead:
    ```python
        correct += (out.argmax(1) == y).sum().item()        # one sync per step
    ```

    ## Fix safety
    No automatic fix: vectorising the inner loop is a rewrite for a person.

    ## Known limitations
    Deliberate cases it stays quiet on: one `.item()` per batch (the usual loss
    logging); anything under an `if step % N == 0:` (periodic logging); a
    `synchronize()` within three lines of a clock reading (`time.time()`,
    `perf_counter()`, CUDA events), since timing a step needs it; a `synchronize()` in a
    step that already reads a tensor back on every iteration (`loss.item()` for a NaN
    check), which waits for the device anyway; and a read in a loop that runs the model
    on every iteration (a reinforcement-learning rollout handing each action to a CPU
    environment, `env.step(action.item())`, or sampling token by token), where the next
    iteration needs the value on the host. Only tensors the analysis knows to be
    tensors count (results of models, losses and torch operations); a loop's own step
    must run a backward or an optimizer step directly. Test code is not a training run
    and is left alone: a module named `test_*.py` or `*_test.py`, a function or method
    named `test_*`, and a `test*` method of a `TestCase`, where a few steps are
    synchronised to check a result.
    """

    code = "TW007"
    name = "device-sync-in-hot-loop"
    default_severity = Severity.WARNING
    summary = "A host-device sync (.item(), .cpu(), synchronize) repeats inside the training step."

    _HEAD = "import torch\ndef train(model, loader, opt, crit):\n    correct = 0\n    for x, y in loader:\n        out = model(x)\n        loss = crit(out, y)\n        loss.backward()\n        opt.step()\n"
    VALID = (
        # one .item() per batch
        _HEAD + "        print(loss.item())\n",
        # periodic logging
        "import torch\ndef train(model, loader, opt, crit):\n    for step, (x, y) in enumerate(loader):\n        out = model(x)\n        crit(out, y).backward()\n        opt.step()\n        if step % 100 == 0:\n            for i in range(len(y)):\n                print(out[i].item())\n            torch.cuda.synchronize()\n",
        # vectorised
        _HEAD + "        correct += (out.argmax(1) == y).sum().item()\n",
        # after the loop
        _HEAD + "    torch.cuda.synchronize()\n    return correct\n",
        # a per-element loop outside any training step
        "import torch\ndef report(model, x):\n    with torch.no_grad():\n        out = model(x)\n    for i in range(len(out)):\n        print(out[i].item())\n",
        # synchronising to time the step
        "import time\nimport torch\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        t0 = time.time()\n        crit(model(x), y).backward()\n        opt.step()\n        torch.cuda.synchronize()\n        print(time.time() - t0)\n",
        # a synchronize for timing in a step that already waits on loss.item() (a NaN check)
        "import torch\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        loss = crit(model(x), y)\n"
        "        if torch.isnan(loss).item():\n            raise RuntimeError('nan')\n        loss.backward()\n        opt.step()\n"
        "        opt.zero_grad()\n\n        torch.cuda.synchronize()\n        print(loss.item())\n",
        # a rollout: each action goes to a CPU environment before the next forward
        "import torch\nimport torch.nn as nn\ndef train(env, episodes):\n    policy = nn.Linear(4, 2)\n"
        "    opt = torch.optim.Adam(policy.parameters())\n    for _ in range(episodes):\n        state, done = env.reset(), False\n"
        "        log_probs, rewards = [], []\n        while not done:\n            probs = torch.softmax(policy(torch.as_tensor(state)), -1)\n"
        "            action = torch.multinomial(probs, 1)\n            log_probs.append(torch.log(probs[action]))\n"
        "            state, reward, done, _ = env.step(action.item())\n            rewards.append(reward)\n"
        "        loss = -torch.stack(log_probs).sum() * sum(rewards)\n        opt.zero_grad()\n        loss.backward()\n        opt.step()\n",
        # numbers from the loader are not device tensors we know of
        "import torch\ndef train(model, loader, opt, crit):\n    for x, y, names in loader:\n        crit(model(x), y).backward()\n        opt.step()\n        for n in names:\n            print(n)\n",
    )
    INVALID = (
        Invalid(
            _HEAD
            + "        for i in range(len(y)):\n            pred = out[i].argmax().item()\n            correct += pred == y[i]\n",
            Severity.WARNING,
            line=10,
        ),
        Invalid(_HEAD + "        torch.cuda.synchronize()\n", line=9),
        Invalid(
            _HEAD + "        for p in model.parameters():\n            print(loss.cpu())\n",
            line=10,
        ),
        Invalid(
            "import torch\nfrom torch import cuda\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        cuda.synchronize()\n        opt.step()\n",
            line=6,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, sync in events(facts, EventKind.SYNC):
            if not sync.loops or sync.span in reported or in_test_code(facts, trace):
                continue
            innermost = sync.loops[-1]
            if sync.target is None:
                # torch.cuda.synchronize(): every step when the loop is the step itself
                if not steps_directly(trace, innermost) or gated_by_modulo(sync, innermost):
                    continue
                if times_the_step(facts, sync) or already_syncs(trace, sync, innermost):
                    continue  # synchronising to time the step, or a step that waits anyway
                why = "`torch.cuda.synchronize()` runs on every training step"
                loop = innermost
            else:
                parent = trace.loops[innermost].parent
                if parent is None or not steps_directly(trace, parent):
                    continue  # not nested inside a training step
                if steps_directly(trace, innermost) or gated_by_modulo(sync, parent):
                    continue
                if drives_the_next_step(trace, innermost):
                    continue  # the host needs each fresh output: a rollout, not a per-element read
                why = "this reads a tensor back to the host once per iteration of a loop inside the training step"
                loop = innermost
            reported.add(sync.span)
            yield self.finding(
                sync.span,
                f"{why}: each read waits for the GPU to finish all queued work, so the device idles while "
                "Python catches up. Read once per step (vectorise, then one `.item()`), or only every N steps.",
                evidence=[Evidence(loop_header(trace, loop), "the loop that repeats it")],
            )
