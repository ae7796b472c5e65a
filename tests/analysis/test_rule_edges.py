"""Cases past the rules' own examples, where a mutation run showed that none could tell a
changed rule from the real one (``docs/mutation-report.md``, ``bench/mutation.sh``).

Each case states the lines its rule flags, alone (``select``): a rule that stops after
the first event it skips, reads the outer loop for the inner one, or compares a gate's
loop by order instead of identity reports other lines. The ids start with the rule's
code, so ``-k TW016`` runs a rule's cases with its examples.
"""

from __future__ import annotations

import pytest
from torchward.analysis import LintSettings, analyze_source

STEP_LR = "    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n"
CASES = [
    # a compile before the loop (skipped), then one inside it: both events are read
    (
        "TW016-compiled-before-and-inside-the-loop",
        "import torch\ndef train(model, loader, opt, crit):\n    model = torch.compile(model)\n"
        "    for x, y in loader:\n        fast = torch.compile(model)\n"
        "        crit(fast(x), y).backward()\n        opt.step()\n",
        [5],
    ),
    # a lazy compile under an if (skipped), then an unconditional one in the same loop
    (
        "TW016-lazy-then-unconditional",
        "import torch\ndef train(model, loader, opt, crit):\n    fast = None\n"
        "    for x, y in loader:\n        if fast is None:\n            fast = torch.compile(model)\n"
        "        other = torch.compile(model)\n        crit(other(x), y).backward()\n"
        "        opt.step()\n",
        [7],
    ),
    # compiling each block once in a setup loop (skipped), then per step in the training loop
    (
        "TW016-setup-loop-then-training-loop",
        "import torch\ndef train(model, loader, opt, crit):\n    for block in model.blocks:\n"
        "        block.attn = torch.compile(block.attn)\n    for x, y in loader:\n"
        "        fast = torch.compile(model)\n        crit(fast(x), y).backward()\n"
        "        opt.step()\n",
        [6],
    ),
    # an if in the outer loop does not gate the inner loop's per-step compile
    (
        "TW016-gate-in-the-outer-loop",
        "import torch\ndef train(model, loader, opt, crit, epochs):\n"
        "    for epoch in range(epochs):\n        if epoch == 0:\n            for x, y in loader:\n"
        "                fast = torch.compile(model)\n                crit(fast(x), y).backward()\n"
        "                opt.step()\n",
        [6],
    ),
    # an if outside every loop gates nothing inside the loop
    (
        "TW016-gate-outside-the-loops",
        "import torch\ndef train(model, loader, opt, crit, use_compile):\n    if use_compile:\n"
        "        for x, y in loader:\n            fast = torch.compile(model)\n"
        "            crit(fast(x), y).backward()\n            opt.step()\n",
        [5],
    ),
    # softmax probabilities into binary cross-entropy: not TW005's loss
    (
        "TW005-softmax-into-bce",
        "import torch\nimport torch.nn.functional as F\ndef step(model, x, y):\n"
        "    probs = torch.softmax(model(x), dim=1)\n    return F.binary_cross_entropy(probs, y)\n",
        [],
    ),
    # another loss first (skipped), then cross-entropy on probabilities
    (
        "TW005-another-loss-first",
        "import torch\nimport torch.nn.functional as F\ndef step(model, x, y, z):\n"
        "    aux = F.mse_loss(model(x), z)\n    probs = torch.softmax(model(x), dim=1)\n"
        "    return aux + F.cross_entropy(probs, y)\n",
        [6],
    ),
    # sigmoid output into cross-entropy: not TW006's pair of loss and activation
    (
        "TW006-sigmoid-into-cross-entropy",
        "import torch\nimport torch.nn.functional as F\ndef step(model, x, y):\n"
        "    probs = torch.sigmoid(model(x))\n    return F.cross_entropy(probs, y)\n",
        [],
    ),
    # a scheduler step before the loop (skipped), then one before the optimizer's in it
    (
        "TW018-stepped-before-the-loop-and-in-it",
        "import torch\ndef train(model, loader, opt, crit):\n" + STEP_LR + "    sched.step()\n"
        "    for x, y in loader:\n        crit(model(x), y).backward()\n        sched.step()\n"
        "        opt.step()\n",
        [7],
    ),
    # Accelerate runs the backward: the hand-written optimizer step is still the update
    (
        "TW018-accelerate-backward",
        "import torch\nfrom accelerate import Accelerator\ndef train(model, loader, opt, crit):\n"
        + STEP_LR
        + "    accelerator = Accelerator()\n"
        "    model, opt, loader, sched = accelerator.prepare(model, opt, loader, sched)\n"
        "    for x, y in loader:\n        accelerator.backward(crit(model(x), y))\n"
        "        sched.step()\n        opt.step()\n        opt.zero_grad()\n",
        [9],
    ),
    # two optimizers: the scheduler steps after the first update of the iteration
    (
        "TW018-after-the-first-of-two-updates",
        "import torch\ndef train(g, d, loader, opt, crit):\n"
        "    opt_g = torch.optim.Adam(g.parameters())\n" + STEP_LR + "    for x, y in loader:\n"
        "        crit(d(x), y).backward()\n        opt.step()\n        sched.step()\n"
        "        crit(g(x), y).backward()\n        opt_g.step()\n",
        [],
    ),
    # a scheduler step under an if of the inner loop, which the update is not under
    (
        "TW018-gated-in-the-inner-loop",
        "import torch\ndef train(model, loader, opt, crit, epochs):\n"
        + STEP_LR
        + "    for epoch in range(epochs):\n        for i, (x, y) in enumerate(loader):\n"
        "            crit(model(x), y).backward()\n            if i % 10 == 0:\n"
        "                sched.step()\n            opt.step()\n",
        [],
    ),
    # a loop with no visible optimizer step: nothing to be early for
    (
        "TW018-no-update-in-the-loop",
        "import torch\ndef train(model, opt, run_epoch):\n"
        + STEP_LR
        + "    for epoch in range(5):\n        run_epoch(model)\n        sched.step()\n",
        [],
    ),
    # a function whose scheduler step is gated (skipped), then one that steps it early
    (
        "TW018-gated-then-early",
        "import torch\ndef warm(model, loader, opt, crit):\n"
        + STEP_LR
        + "    for i, (x, y) in enumerate(loader):\n        crit(model(x), y).backward()\n"
        "        if i % 10 == 0:\n            sched.step()\n        opt.step()\n\n\n"
        "def train(model, loader, opt, crit):\n" + STEP_LR + "    for x, y in loader:\n"
        "        crit(model(x), y).backward()\n        sched.step()\n        opt.step()\n",
        [15],
    ),
    # a function that steps the scheduler after the optimizer (skipped), then one before
    (
        "TW018-in-order-then-early",
        "import torch\ndef warm(model, loader, opt, crit):\n"
        + STEP_LR
        + "    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n"
        "        sched.step()\n\n\ndef train(model, loader, opt, crit):\n"
        + STEP_LR
        + "    for x, y in loader:\n        crit(model(x), y).backward()\n        sched.step()\n"
        "        opt.step()\n",
        [14],
    ),
    # both steps in a helper's own loop: reported in the helper, not again at each call
    (
        "TW018-both-in-a-helpers-loop",
        "import torch\ndef one_epoch(model, loader, opt, sched, crit):\n    for x, y in loader:\n"
        "        crit(model(x), y).backward()\n        sched.step()\n        opt.step()\n\n\n"
        "def train(model, loader, opt, crit):\n" + STEP_LR + "    for epoch in range(5):\n"
        "        one_epoch(model, loader, opt, sched, crit)\n",
        [5],
    ),
    # a copy before the loop (skipped), then the same copy inside it
    (
        "TW013-copied-before-and-inside-the-loop",
        "import torch\ndef train(model, loader, opt, device):\n    mask = torch.ones(4, 4)\n"
        "    first = mask.to(device)\n    for x in loader:\n        m = mask.to(device)\n"
        "        (model(x) * m * first).sum().backward()\n        opt.step()\n",
        [6],
    ),
    # an if outside every loop gates nothing inside the loop
    (
        "TW013-gate-outside-the-loops",
        "import torch\ndef train(model, loader, opt, device, masked):\n    mask = torch.ones(4, 4)\n"
        "    if masked:\n        for x in loader:\n            m = mask.to(device)\n"
        "            (model(x) * m).sum().backward()\n            opt.step()\n",
        [6],
    ),
    # the step loop is the inner one: the epoch loop around it runs no step itself
    (
        "TW013-inner-step-loop",
        "import torch\ndef train(model, loader, opt, device, epochs):\n    mask = torch.ones(4, 4)\n"
        "    for epoch in range(epochs):\n        for x in loader:\n            m = mask.to(device)\n"
        "            (model(x) * m).sum().backward()\n            opt.step()\n",
        [6],
    ),
    # the model goes out and back (skipped); a tensor copied in the same loop is still flagged
    (
        "TW013-model-out-and-back-beside-a-copy",
        "import torch\ndef train(model, loader, opt, device):\n    mask = torch.ones(4, 4)\n"
        "    for x in loader:\n        m = mask.to(device)\n        (model(x) * m).sum().backward()\n"
        "        opt.step()\n        model.cpu()\n        model.cuda()\n",
        [5],
    ),
    # the batch's own copy (not this rule's) first, then a copy of a tensor bound before
    (
        "TW013-batch-copy-first",
        "import torch\ndef train(model, loader, opt, device):\n    mask = torch.ones(4, 4)\n"
        "    for x in loader:\n        x = x.to(device)\n        m = mask.to(device)\n"
        "        (model(x) * m).sum().backward()\n        opt.step()\n",
        [6],
    ),
    # a copy under an if of the loop (skipped), then an unconditional one
    (
        "TW013-gated-copy-first",
        "import torch\ndef train(model, loader, opt, device):\n    mask = torch.ones(4, 4)\n"
        "    for i, x in enumerate(loader):\n        if i == 0:\n            g = mask.to(device)\n"
        "        m = mask.to(device)\n        (model(x) * m * g).sum().backward()\n"
        "        opt.step()\n",
        [7],
    ),
]


@pytest.mark.parametrize(
    "source, lines", [pytest.param(source, lines, id=name) for name, source, lines in CASES]
)
def test_the_rule_flags_exactly_these_lines(request, source, lines):
    code = request.node.callspec.id.split("-", 1)[0]
    report = analyze_source(source, "example.py", LintSettings(select=(code,)))
    assert not report.problems, report.problems
    assert [finding.span.line for finding in report.findings] == lines
    assert {finding.code for finding in report.findings} <= {code}
