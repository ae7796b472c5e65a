"""Severity and quietness decisions taken from reading findings on real training code.

Each case names the code it came from; the snippets are reduced rewrites, not copies.
"""

from __future__ import annotations

import pytest
from torchward.analysis import Severity, analyze_source
from torchward.analysis.finding import Proof


def findings(source: str):
    return analyze_source(source, "case.py").findings


def test_accumulator_reset_every_update_is_a_warning_not_an_error():
    # torchtune recipes: running_loss += current_loss, reset to 0 after each optimizer step
    source = (
        "def train(model, loader, opt, loss_fn, accum):\n"
        "    running_loss = 0\n"
        "    for idx, batch in enumerate(loader):\n"
        "        current_loss = loss_fn(model(batch), batch)\n"
        "        running_loss += current_loss\n"
        "        current_loss.backward()\n"
        "        if (idx + 1) % accum == 0:\n"
        "            opt.step()\n"
        "            opt.zero_grad()\n"
        "            print(running_loss.item())\n"
        "            running_loss = 0\n"
    )
    found = [f for f in findings(source) if f.code == "TW001"]
    assert [(f.span.line, f.severity) for f in found] == [(5, Severity.WARNING)]
    assert "reset inside the loop" in found[0].message


def test_stats_returned_after_backward_in_a_helper_are_a_warning():
    # torchtune PPO/GRPO: a step helper runs loss.backward() and returns stats holding the loss
    source = (
        "def ppo_step(model, batch, opt):\n"
        "    loss = model(batch).mean()\n"
        "    loss.backward()\n"
        "    return (loss, loss * 2)\n"
        "\n"
        "def train(model, loader, opt):\n"
        "    stats = []\n"
        "    for batch in loader:\n"
        "        stats.append(ppo_step(model, batch, opt))\n"
        "        opt.step()\n"
        "        opt.zero_grad()\n"
    )
    found = [f for f in findings(source) if f.code == "TW001"]
    assert [(f.span.line, f.severity) for f in found] == [(9, Severity.WARNING)]


def test_loop_variable_rebinding_is_not_a_store():
    # timm tests: `for o, r in zip(out, ref)` rebinding `o` each iteration is no accumulator
    source = (
        "import torch\n"
        "def check(model, x, ref):\n"
        "    for _ in range(2):\n"
        "        out = model(x)\n"
        "        for o, r in zip(out, ref):\n"
        "            torch.testing.assert_close(o, r)\n"
        "        sum(o.mean() for o in out).backward()\n"
    )
    assert findings(source) == ()


def test_columns_and_lines_survive_form_feeds_and_non_ascii_text():
    # str.splitlines() splits at \f and \u2028 where ast does not; columns count code points
    source = (
        "import torch\n"
        "\f\n"
        "def train(model, loader, opt):\n"
        "    hist = []  # \u2028 ünïcødé\n"
        "    for x in loader:\n"
        "        loss = model(x).sum()\n"
        "        é = 1; hist.append(loss)\n"
        "        loss.backward()\n"
    )
    [finding] = [f for f in findings(source) if f.code == "TW001"]
    assert finding.span.line == 7
    assert (
        source.split("\n")[6][finding.span.column : finding.span.end_column] == "hist.append(loss)"
    )


def test_deeply_nested_loops_are_interpreted_a_linear_number_of_times(monkeypatch):
    # a quiet pass of an inner loop runs its body once, so 40 nested loops execute each
    # body a bounded number of times (the exponential version never finished)
    from torchward.analysis.facts.interpreter import FunctionRun

    executed = []
    original = FunctionRun.execute

    def counting(self, body):
        executed.append(len(body))
        return original(self, body)

    monkeypatch.setattr(FunctionRun, "execute", counting)
    depth = 40
    source = (
        "import torch\ndef f(model, loader):\n"
        + "".join("    " * (k + 1) + f"for a{k} in loader:\n" for k in range(depth))
        + "    " * (depth + 1)
        + "model(a0).sum().backward()\n"
    )
    report = analyze_source(source, "nested.py")
    assert not report.problems
    assert len(executed) < 20 * depth * depth


def test_a_positional_shuffle_flag_is_not_mistaken_for_a_sampler():
    # DataLoader(dataset, batch_size, shuffle, sampler, ...): the third argument is
    # ``shuffle``, so ``DataLoader(ds, 8, True)`` under DDP still has no DistributedSampler
    source = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def main(model, ds, opt):\n"
        "    model = DDP(model)\n"
        "    loader = DataLoader(ds, 8, True)\n"
        "    sharded = DataLoader(ds, 8, False, DistributedSampler(ds))\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "        opt.step()\n"
        "    for x in sharded:\n"
        "        model(x).sum().backward()\n"
        "        opt.step()\n"
    )
    found = [f for f in findings(source) if f.code == "TW012"]
    assert [f.span.line for f in found] == [5]


def _lines(source: str, code: str) -> list[int]:
    report = analyze_source(source, "case.py")
    assert not report.problems, report.problems  # a broken analysis is not a quiet one
    return [f.span.line for f in report.findings if f.code == code]


def test_compile_in_a_layer_loop_nested_in_the_training_loop_is_reported():
    # each step re-compiles every block: the loop around the call is over layers, but the
    # training loop around that one runs it every iteration
    source = (
        "import torch\n"
        "def train(model, loader, opt, crit):\n"
        "    for x, y in loader:\n"
        "        for block in model.blocks:\n"
        "            block.attn = torch.compile(block.attn)\n"
        "        crit(model(x), y).backward()\n"
        "        opt.step()\n"
    )
    assert _lines(source, "TW016") == [5]


def test_compile_in_a_layer_loop_stays_quiet_when_the_step_gates_it():
    # compiled lazily, on the first step only: an if inside the training loop encloses it
    source = (
        "import torch\n"
        "def train(model, loader, opt, crit):\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        if step == 0:\n"
        "            for block in model.blocks:\n"
        "                block.attn = torch.compile(block.attn)\n"
        "        crit(model(x), y).backward()\n"
        "        opt.step()\n"
    )
    assert _lines(source, "TW016") == []


def _stored_proofs(source: str) -> list[tuple[int, bool]]:
    """TW001's findings: line, and whether the stored value is proven a tensor."""
    return [
        (f.span.line, Proof.STORED_TENSOR in f.proofs)
        for f in findings(source)
        if f.code == "TW001"
    ]


def test_a_reduction_of_a_known_layers_output_is_proven_a_tensor():
    # ``nn.Linear(...)(x).sum()``: a Linear returns one tensor, so its sum is one, and
    # the `.detach()` the fix writes cannot raise; a Sequential ending in one is the same
    source = (
        "import torch.nn as nn\n"
        "def train(loader):\n"
        "    head = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.Linear(8, 2))\n"
        "    kept = []\n"
        "    for x in loader:\n"
        "        kept.append(nn.Linear(4, 2)(x).sum())\n"
        "        kept.append(head(x).mean())\n"
        "    print(len(kept))\n"
    )
    assert _stored_proofs(source) == [(6, True), (7, True)]


def test_a_reduction_of_a_layer_that_returns_a_tuple_is_not_proven():
    # an LSTM returns (output, (h, c)); a Sequential ending in one returns that tuple, and
    # a layer chosen on one path only proves nothing after the branches join
    source = (
        "import torch.nn as nn\n"
        "def train(loader, model, deep):\n"
        "    rnn = nn.Sequential(nn.Linear(4, 4), nn.LSTM(4, 4))\n"
        "    either = nn.Linear(4, 2) if deep else model\n"
        "    kept = []\n"
        "    for x in loader:\n"
        "        kept.append(nn.LSTM(4, 4)(x).sum())\n"
        "        kept.append(rnn(x).sum())\n"
        "        kept.append(either(x).sum())\n"
        "    print(len(kept))\n"
    )
    assert _stored_proofs(source) == [(7, False), (8, False), (9, False)]


def test_an_identity_layer_proves_nothing_about_what_it_passes_on():
    # ``nn.Identity()`` returns its argument unchanged: a model's output dict or tuple
    # passed through it is still a dict or a tuple, and ``.detach()`` on it would raise
    source = (
        "import torch.nn as nn\n"
        "def train(loader, model):\n"
        "    tail = nn.Sequential(nn.Linear(4, 4), nn.Identity())\n"
        "    kept = []\n"
        "    for x in loader:\n"
        "        kept.append(nn.Identity()(model(x)))\n"
        "        kept.append(tail(x))\n"
        "        kept.append(nn.Linear(4, 4)(x))\n"
        "    print(len(kept))\n"
    )
    assert _stored_proofs(source) == [(6, False), (7, False), (8, True)]


def _store_messages(source: str) -> list[tuple[int, str]]:
    return [(f.span.line, f.message) for f in findings(source) if f.code == "TW001"]


DIST_AUTOGRAD_STEP = (
    "{imports}"
    "def train(model, loader, opt):\n"
    "    losses = []\n"
    "    for x in loader:\n"
    "        with {ctx}() as ctx:\n"
    "            loss = model(x).sum()\n"
    "            losses.append(loss)\n"
    "            {backward}(ctx, [loss])\n"
    "            opt.step(ctx)\n"
    "    print(len(losses))\n"
)


@pytest.mark.parametrize(
    ("imports", "prefix"),
    [
        ("import torch\nimport torch.distributed.autograd\n", "torch.distributed.autograd"),
        ("import torch.distributed.autograd as dist_autograd\n", "dist_autograd"),
    ],
)
def test_distributed_autograd_backward_is_the_iterations_backward(imports: str, prefix: str):
    # RPC training (pytorch/examples' distributed RNN): ``dist_autograd.backward(ctx,
    # [loss])`` runs the backward of ``loss``, as ``loss.backward()`` does locally
    source = DIST_AUTOGRAD_STEP.format(
        imports=imports, ctx=f"{prefix}.context", backward=f"{prefix}.backward"
    )
    local = DIST_AUTOGRAD_STEP.format(
        imports="import contextlib\n", ctx="contextlib.nullcontext", backward="loss.backward"
    ).replace("loss.backward(ctx, [loss])", "loss.backward()")
    [(line, message)] = _store_messages(source)
    assert source.splitlines()[line - 1].strip() == "losses.append(loss)"
    assert "before its backward() has run" in message
    assert [m for _, m in _store_messages(local)] == [message]


def test_a_carried_state_backpropagated_every_step_is_reported():
    # truncated backpropagation through time without the truncation: the state carried
    # into the next step keeps this step's graph, and the next backward runs through it
    # (the backward in the loop reads it, yet it is not kept for that backward's sake)
    source = (
        "import torch\n"
        "import torch.nn as nn\n"
        "def train(loader, opt):\n"
        "    rnn = nn.GRU(4, 8)\n"
        "    hidden = torch.zeros(1, 2, 8)\n"
        "    for x in loader:\n"
        "        out, hidden = rnn(x, hidden)\n"
        "        out.sum().backward()\n"
        "        opt.step()\n"
    )
    assert _lines(source, "TW001") == [7]
    detached = source.replace(
        "rnn(x, hidden)\n", "rnn(x, hidden)\n        hidden = hidden.detach()\n"
    )
    assert _lines(detached, "TW001") == []


def test_a_fresh_output_dict_computed_from_accumulated_inputs_is_not_a_carried_state():
    # open_clip's legacy gradient accumulation: inputs are cached in lists across
    # micro-batches, then each is re-run; a helper edits the output dict of this pass in
    # place. The dict is new every pass; it only read the cached inputs
    source = (
        "import torch\n"
        "def shift(out, texts):\n"
        '    out["logits"] = out["logits"][:, :-1]\n'
        "    return out\n"
        "def train(model, loader, opt, accum):\n"
        "    cached = []\n"
        "    for i, texts in enumerate(loader):\n"
        "        cached.append(texts)\n"
        "        if (i + 1) % accum:\n"
        "            continue\n"
        "        for j in range(accum):\n"
        "            out = model(cached[j])\n"
        "            out = shift(out, cached[j])\n"
        '            out["logits"].sum().backward()\n'
        "        opt.step()\n"
        "        cached = []\n"
    )
    assert _lines(source, "TW001") == []


@pytest.mark.parametrize(
    "call",
    [
        "torch.autograd.backward(out, retain_graph=True)",
        "torch.autograd.backward([out], None, True)",
    ],
)
def test_a_backward_function_keeps_its_retain_graph(call: str):
    # the function form of ``out.backward(retain_graph=True)``: a gradient-comparison
    # harness for TW003, as the method form is (a note, not an error)
    source = (
        "import torch\n"
        "def compare(model, loader, opt):\n"
        "    for x in loader:\n"
        "        out = model(x).sum()\n"
        f"        {call}\n"
        "        out.backward()\n"
        "        opt.step()\n"
    )
    method = source.replace(call, "out.backward(retain_graph=True)")
    plain = source.replace(call, "torch.autograd.backward(out)")
    severities = [
        [(f.span.line, f.severity) for f in findings(s) if f.code == "TW003"]
        for s in (source, method, plain)
    ]
    assert severities[0] == severities[1] == [(7, Severity.NOTE)]
    assert severities[2] == [(7, Severity.WARNING)]


def test_a_distributed_autograd_step_needs_no_zero_grad():
    # pytorch/examples' RPC training: each iteration opens a distributed autograd context
    # that holds that iteration's gradients, so there is nothing to reset between steps;
    # the same loop with the local backward accumulates into ``.grad`` and is reported
    source = (
        "import torch\n"
        "import torch.distributed.autograd as dist_autograd\n"
        "from torch.distributed.optim import DistributedOptimizer\n"
        "def train(model, loader, params, criterion):\n"
        "    opt = DistributedOptimizer(torch.optim.SGD, params, lr=0.05)\n"
        "    for x, y in loader:\n"
        "        with dist_autograd.context() as context_id:\n"
        "            loss = criterion(model(x), y)\n"
        "            dist_autograd.backward(context_id, [loss])\n"
        "            opt.step(context_id)\n"
    )
    local = source.replace("dist_autograd.backward(context_id, [loss])", "loss.backward()")
    assert _lines(source, "TW003") == []
    assert _lines(local, "TW003") == [10]


CARRIED_STATE = (
    "import torch\n"
    "import torch.nn as nn\n"
    "{header}"
    "{indent}def {name}(self, loader, opt):\n"
    "{indent}    rnn = nn.GRU(4, 8)\n"
    "{indent}    hidden = torch.zeros(1, 2, 8)\n"
    "{indent}    for x in loader:\n"
    "{indent}        out, hidden = rnn(x, hidden)\n"
    "{indent}        out.sum().backward()\n"
    "{indent}        opt.step()\n"
)


@pytest.mark.parametrize(
    ("header", "indent", "name", "path", "reported"),
    [
        ("", "", "train", "train.py", True),
        ("", "", "train", "test_train.py", False),  # a module pytest collects
        ("", "", "test_training_steps", "train.py", False),  # a pytest test function
        (
            "import unittest\nclass Steps(unittest.TestCase):\n",
            "    ",
            "test_rnn",
            "train.py",
            False,
        ),
        ("", "", "train", "testing.py", True),  # not a name a test runner collects
    ],
)
def test_a_test_keeps_a_few_graphs_and_tw001_stays_quiet_there(
    header, indent, name, path, reported
):
    # a test runs a couple of steps to check a result; the graphs it keeps are freed when
    # it ends, which is not the unbounded growth TW001 warns a training run about
    # (PyTorch's own distributed tests carry model outputs across two steps)
    source = CARRIED_STATE.format(header=header, indent=indent, name=name)
    codes = [f.code for f in analyze_source(source, path).findings]
    assert ("TW001" in codes) is reported
