"""TW016 compile-in-loop."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import events, is_iteration_loop, loop_header
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule


class CompileInLoop(Rule):
    """
    ## What it does
    Flags `torch.compile(...)` called inside a training or evaluation loop — a loop whose
    iterations run `backward()`, step an optimizer or iterate a data loader.

    ## Why is this bad?
    `torch.compile` returns a new wrapper whose first call traces and compiles the model
    (seconds to minutes). Called per iteration it re-wraps the model every step: at best
    the guard checks and wrapper construction are paid every step, at worst (a lambda or
    closure built in the loop, a changed argument) every step recompiles and hits the
    recompile limit, after which the model silently runs eagerly. The speed-up the call
    was meant to buy turns into a slowdown.

    ## Example
    ```python
    for x, y in loader:
        compiled = torch.compile(model)       # TW016
        loss = criterion(compiled(x), y)
    ```
    Use instead:
    ```python
    compiled = torch.compile(model)
    for x, y in loader:
        loss = criterion(compiled(x), y)
    ```

    ## Fix safety
    No automatic fix: hoisting the call is only right when what it compiles does not
    change between iterations, which a person should confirm.

    ## Known limitations
    Only `torch.compile` by its qualified name counts; loops over models or
    configurations (a benchmark compiling each model once) are not iteration loops and
    are not flagged, but a loop over layers nested in the training loop runs every step
    and is. A call under an `if` in the loop (compile once, lazily) is not flagged.
    """

    code = "TW016"
    name = "compile-in-loop"
    default_severity = Severity.WARNING
    summary = (
        "torch.compile is called inside the training loop: it re-wraps (or recompiles) every step."
    )

    VALID = (
        "import torch\ndef train(model, loader, opt, crit):\n    model = torch.compile(model)\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n",
        # compiling each model of a benchmark once
        "import torch\ndef bench(models, x):\n    for model in models:\n        fast = torch.compile(model)\n        fast(x)\n",
        # lazily, under an if
        "import torch\ndef train(model, loader, opt, crit):\n    fast = None\n    for x, y in loader:\n        if fast is None:\n            fast = torch.compile(model)\n        crit(fast(x), y).backward()\n        opt.step()\n",
        # a different compile function
        "import torch\ndef train(model, loader, opt, crit, compile):\n    for x, y in loader:\n        compile(model)\n        crit(model(x), y).backward()\n        opt.step()\n",
        # after the loop
        "import torch\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n    return torch.compile(model)\n",
        # a loop over layers inside a model setup
        "import torch\ndef setup(model):\n    for block in model.blocks:\n        block.attn = torch.compile(block.attn)\n    return model\n",
    )
    INVALID = (
        Invalid(
            "import torch\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        fast = torch.compile(model)\n        crit(fast(x), y).backward()\n        opt.step()\n",
            Severity.WARNING,
            line=4,
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.Adam(model.parameters())\nfor step in range(100):\n    out = torch.compile(model)(torch.randn(4, 2))\n    out.sum().backward()\n    opt.step()\n",
            line=5,
        ),
        Invalid(
            "import torch\nfrom torch import compile as tc\ndef evaluate(model, loader):\n    with torch.no_grad():\n        for x in loader:\n            tc(model)(x)\n",
            line=6,
        ),
        Invalid(
            "import torch\ndef train(model, loader, opt, epochs):\n    for epoch in range(epochs):\n        for x in loader:\n            step = torch.compile(lambda b: model(b).sum())\n            step(x).backward()\n            opt.step()\n",
            line=5,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, compiled in events(facts, EventKind.COMPILE):
            if not compiled.loops or compiled.span in reported:
                continue
            # the innermost iteration loop around the call: a loop over layers inside
            # the training loop still runs once per step
            inside = next(
                (
                    compiled.loops[k:]
                    for k in range(len(compiled.loops) - 1, -1, -1)
                    if is_iteration_loop(trace, compiled.loops[k])
                ),
                None,
            )
            if inside is None:
                continue
            loop = inside[0]
            if any(gate.loop in inside for gate in compiled.gates):
                continue  # an if inside that loop encloses it: compiled lazily, or on some steps
            reported.add(compiled.span)
            yield self.finding(
                compiled.span,
                "`torch.compile` runs inside the training loop: every iteration wraps the model anew (and "
                "may recompile). Compile once, before the loop.",
                evidence=[Evidence(loop_header(trace, loop), "the loop")],
            )
