"""TW013 redundant-host-to-device-transfer."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import events, loop_header
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule

_WHAT = {
    "model": "the model is moved to the device",
    "factory": "a tensor built on the host from the same values is copied to the device",
    "invariant": "a tensor bound before the loop is copied to the device",
}


class RedundantHostToDeviceTransfer(Rule):
    """
    ## What it does
    Flags a host-to-device copy inside a training or evaluation loop of something that
    does not change between iterations: the model itself (`model.to(device)`), a tensor
    built on the host from the same values (`torch.tensor(class_weights).cuda()`), or a
    tensor bound before the loop (`weights.to(device)`).

    ## Why is this bad?
    Each copy allocates device memory and transfers the data again, every step, and a
    `.cuda()` / `.to(device)` on a pageable host tensor synchronises the host with the
    device: the GPU idles while Python waits. Moving the model each step walks every
    parameter and buffer. Doing it once, before the loop, costs nothing per step.

    ## Example
    ```python
    for x, y in loader:
        w = torch.tensor([1.0, 5.0]).to(device)       # TW013
        loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=w)
    ```
    Use instead:
    ```python
    w = torch.tensor([1.0, 5.0]).to(device)
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=w)
    ```

    ## Fix safety
    No automatic fix: hoisting a copy is only right when nothing in the loop changes
    what is copied (an in-place update of the host tensor), which a person should check.

    ## Known limitations
    Batches (anything bound in the loop), device-to-host copies and casts
    (`x.to(torch.float16)`) are never flagged; a model that the same loop also moves to
    the host (out and back around checkpoint saving, or to free memory) is not flagged;
    nor is a copy under an `if` in the loop. Tensors passed in as parameters are not
    considered (they may differ per call of the function); a model passed in is (it
    exists before the loop), and so is a host factory over a parameter that the loop
    uses nowhere else (`torch.tensor(class_weights).cuda()`; a list the loop appends to
    may change and is not flagged).
    """

    code = "TW013"
    name = "redundant-host-to-device-transfer"
    default_severity = Severity.WARNING
    summary = "Something that does not change is copied to the device on every iteration."

    VALID = (
        "import torch\ndef train(model, loader, opt, device):\n    model.to(device)\n    for x, y in loader:\n        x, y = x.to(device), y.to(device)\n        model(x).sum().backward()\n        opt.step()\n",
        # a batch
        "import torch\ndef train(model, loader, opt):\n    for batch in loader:\n        inputs = batch['x'].cuda()\n        model(inputs).sum().backward()\n        opt.step()\n",
        # out and back around checkpoint saving
        "import torch\nimport torch.nn as nn\ndef train(loader, opt, device):\n    model = nn.Linear(2, 2)\n    for step, x in enumerate(loader):\n        model.to(device)\n        model(x).sum().backward()\n        opt.step()\n        model.cpu()\n        torch.save(model.state_dict(), 'ckpt.pt')\n",
        # a cast, not a transfer
        "import torch\ndef train(model, loader, opt):\n    scale = torch.ones(2)\n    for x in loader:\n        s = scale.to(torch.float16)\n        (model(x) * s).sum().backward()\n        opt.step()\n",
        # device to host
        "import torch\ndef evaluate(model, loader):\n    stats = torch.zeros(2)\n    with torch.no_grad():\n        for x in loader:\n            print(model(x).cpu(), stats.cpu())\n",
        # a host tensor rebuilt from a list the loop grows (greedy decoding)
        "import torch\ndef decode(model, x, device):\n    tokens = [0]\n    with torch.no_grad():\n        for _ in range(20):\n            step = torch.LongTensor([tokens[-1]]).to(device)\n            tokens.append(model(x, step).argmax(-1).item())\n    return tokens\n",
        # a host tensor rebuilt from the batch
        "import torch\ndef train(model, loader, opt, device):\n    for x, labels in loader:\n        y = torch.tensor(labels).to(device)\n        model(x).sum().backward()\n        opt.step()\n",
        # moved once, under an if
        "import torch\nimport torch.nn as nn\ndef train(loader, opt, device):\n    model = nn.Linear(2, 2)\n    for step, x in enumerate(loader):\n        if step == 0:\n            model.to(device)\n        model(x).sum().backward()\n        opt.step()\n",
    )
    INVALID = (
        Invalid(
            "import torch\nimport torch.nn as nn\ndef train(loader, opt, device):\n    model = nn.Linear(2, 2)\n    for x in loader:\n        model.to(device)\n        model(x.to(device)).sum().backward()\n        opt.step()\n",
            Severity.WARNING,
            line=6,
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\ndef train(model, loader, opt):\n    for x, y in loader:\n        w = torch.tensor([1.0, 5.0]).cuda()\n        F.cross_entropy(model(x), y, weight=w).backward()\n        opt.step()\n",
            line=5,
        ),
        Invalid(
            "import torch\ndef train(model, loader, opt, device):\n    mask = torch.ones(4, 4)\n    for x in loader:\n        m = mask.to(device)\n        (model(x) * m).sum().backward()\n        opt.step()\n",
            line=5,
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor step in range(100):\n    model = model.cuda()\n    model(torch.randn(2, 2).cuda()).sum().backward()\n    opt.step()\n",
            line=6,
        ),
    )

    def check(self, facts):
        reported = set()
        for trace, moved in events(facts, EventKind.TRANSFER):
            what = moved.call.moved if moved.call is not None else None
            if what not in _WHAT or not moved.loops or moved.span in reported:
                continue
            loop = moved.loops[-1]
            if any(gate.loop == loop for gate in moved.gates) or not is_step_loop(trace, loop):
                continue
            if what == "model" and any(
                e.call is not None and e.call.moved == "model-to-host"
                for e in trace.events_in(loop, EventKind.TRANSFER)
            ):
                continue  # out and back (checkpoint saving, freeing memory)
            reported.add(moved.span)
            yield self.finding(
                moved.span,
                f"{_WHAT[what]} on every iteration although it does not change in the loop: each step pays "
                "a copy (and a host-device synchronisation). Move it once, before the loop.",
                evidence=[Evidence(loop_header(trace, loop), "the loop")],
            )


def is_step_loop(trace, loop: int) -> bool:
    """A loop whose every iteration is a step: it iterates a loader, or runs a backward,
    an optimizer step or a forward itself (not only in a loop nested in it, as an epoch
    loop does, where a copy per epoch is cheap and often a deliberate reset)."""
    steps = (EventKind.ITERATE, EventKind.BACKWARD, EventKind.STEP, EventKind.FORWARD)
    return any(
        e.loops and e.loops[-1] == loop and e.kind in steps and not e.in_helper_loop
        for e in trace.events
    )
