"""TW001 retained-graph."""

from __future__ import annotations

import ast
import functools

from ..facts.events import EventKind
from ..facts.relevance import in_test_code
from ..facts.structure import events, is_iteration_loop, loop_header
from ..finding import Applicability, Evidence, Proof, Severity
from ..rule import Fixed, Invalid, Rule
from ..syntax.parsing import parse_expression


def _escaping_locs(facts) -> frozenset:
    """Containers whose contents leave the file: returned by a function that nothing in the
    file calls (values flow up through callers' returns, so a chain of helpers counts)."""
    found: set = set()
    for trace in facts.traces:
        if trace.function not in facts.called_functions:
            found |= trace.returned_locs
    return frozenset(found)


def _chained_every_iteration(trace, store, loop: int) -> bool:
    """A backward inside ``loop`` (the innermost loop the stored value outlives) reads
    what that loop stores, and nothing resets it: each iteration's graph hangs on the
    previous ones' (a recurrent state carried across steps and never detached), so the
    graph is not kept for one later backward but grows with every step. A backward after
    that loop (an episode's losses backpropagated at its end) keeps them on purpose. Only
    a store into the carried variable itself counts: a container bound in the iteration
    whose values were read from it (a model's output dict, computed from inputs taken out
    of an accumulation list) is not what the next step backpropagates through."""
    if store.store is None or store.loc is None or store.store.container != store.loc.name:
        return False  # stored into something else that only read from it (a fresh dict)
    return any(
        event.kind is EventKind.BACKWARD
        and loop in event.loops
        and event.value is not None
        and store.loc in event.value.locs
        for event in trace.events
    )


@functools.lru_cache(maxsize=4096)  # re-asked for every stored value on each keystroke
def _called(text: str | None, method: str) -> str:
    """``text.method()``, parenthesised when ``text`` is not atomic: ``(a * b).detach()``."""
    text = text or "x"
    try:
        node = parse_expression(text.strip())
    except SyntaxError:
        return f"({text}).{method}()"
    atomic = isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    return f"{text}.{method}()" if atomic else f"({text}).{method}()"


class RetainedGraph(Rule):
    """
    ## What it does
    Flags a tensor that still carries its autograd graph being stored somewhere that
    outlives the loop iteration: `losses.append(loss)`, `total += loss`,
    `history[k] = out`, `self.outputs.append(out)`.

    ## Why is this bad?
    A stored graph keeps alive everything needed to backpropagate through it. Before
    `backward()` has run that is the whole step's activations: memory grows by one
    step's activations per iteration until the job runs out of GPU memory hundreds of
    steps in (an error). After `backward()` the activations are freed but the graph's
    nodes and the loss tensor stay (a warning: a slower leak).

    ## Example
    ```python
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        losses.append(loss)          # TW001
        loss.backward()
    ```
    Use instead:
    ```python
        losses.append(loss.item())   # or loss.detach()
    ```

    ## Fix safety
    The fix stores `x.detach()` (`(a * b).detach()` for a compound expression), and is
    offered only when the analysis proves that the stored value is a tensor (a loss, a
    tensor operation's result, or the output of a `torch.nn` layer that returns one
    tensor, such as `nn.Linear`): on a tuple, a namedtuple, a dict, a `ModelOutput` or a
    model's output of unknown type `.detach()` raises, so those get no fix. It is safe
    only when, besides, nothing stored can reach a `backward()`: the container is a
    local of the function and every other read of it ends in a number or a report
    (`len`, `print`, `float`, `.item()`, an f-string). Otherwise — a container on
    `self`, returned, summed, iterated — the fix is unsafe. Storing `.item()` changes
    the type to a float: always unsafe.

    ## Known limitations
    Deliberate cases it stays quiet on: values kept so that a later `backward()` uses
    them — micro-batch losses summed and backpropagated, and in reinforcement learning
    the log-probabilities or losses stored during an episode and backpropagated at its
    end (`zip(self.saved_log_probs, returns)` feeding the episode's loss is traced back
    to the container); and a recurrent state carried across steps that is detached in
    place each step (`hidden[0].detach_()` before `out, hidden = model(x, hidden)`).
    An accumulator that the loop also resets (`running_loss = 0`, `window.clear()` after
    each update) retains only the iterations between resets and is reported as a
    warning; when what it holds was already backpropagated, the window is bounded and
    the rule is quiet. A store a helper makes into a container that outlives the call
    (`self.history.append(loss)` in a `step()` method called by the epoch loop) is
    reported at the helper's statement.
    The rule is quiet when the values stored later reach a `backward()` (summed
    micro-batch losses) — but not when a `backward()` inside the same loop reads them on
    every step without a reset (a recurrent state carried across steps, never
    detached: each step's graph chains onto the last) —, when the container — or the variable stored into, such as a
    dict a loss function returned — is bound inside the iteration, under
    `no_grad`/`inference_mode` (also when a caller disables gradients, or a guard held
    in a variable does), for statistics unpacked next to a loss from a function the file
    cannot see (`loss, items = compute_loss(...)`: only what reaches `backward()` is
    proven) or whose `return` detaches them (`return loss, parts.detach()` in another
    module, read from its text even past the budget of calls followed), and when the container is returned from a function that nothing in the
    file calls and its values were never backpropagated in the loop (the caller may
    backpropagate through them). It is also quiet in test code (a `test_*.py` module, a
    `test_*` function, a `TestCase`'s `test*` method): a test's few steps keep a few
    graphs, not a training run's. A graph known only from a parameter's name has low
    confidence and is reported one severity lower.
    """

    code = "TW001"
    name = "retained-graph"
    default_severity = Severity.ERROR
    summary = "A tensor that carries its autograd graph is stored beyond its loop iteration."

    VALID = (
        # .item() turns the loss into a float
        "import torch\ndef train(model, loader, opt, crit):\n    losses = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        losses.append(loss.item())\n        loss.backward()\n        opt.step()\n        opt.zero_grad()\n",
        # .detach() and float()
        "import torch\ndef train(model, loader, opt, crit):\n    total = 0.0\n    hist = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        loss.backward()\n        hist.append(loss.detach())\n        total += float(loss)\n",
        # under no_grad nothing carries a graph
        "import torch\ndef evaluate(model, loader):\n    outs = []\n    with torch.no_grad():\n        for x, y in loader:\n            outs.append(model(x))\n    return outs\n",
        # a decorated evaluation function
        "import torch\n@torch.no_grad()\ndef evaluate(model, loader):\n    outs = []\n    for x, y in loader:\n        outs.append(model(x))\n    return outs\n",
        # the container is created inside the loop body
        "import torch\ndef train(model, loader, opt, crit):\n    for x, y in loader:\n        parts = []\n        parts.append(crit(model(x), y))\n        sum(parts).backward()\n        opt.step()\n        opt.zero_grad()\n",
        # micro-batch losses summed and backwarded: the graph is meant to be kept
        "import torch\ndef train(model, loader, opt, crit):\n    for batch in loader:\n        losses = []\n        for x, y in batch:\n            losses.append(crit(model(x), y))\n        torch.stack(losses).mean().backward()\n        opt.step()\n        opt.zero_grad()\n",
        "import torch\ndef step(model, chunks, crit, opt):\n    losses = []\n    for x, y in chunks:\n        losses.append(crit(model(x), y))\n    total = sum(losses)\n    total.backward()\n",
        # a helper whose return is detached
        "import torch\ndef train_step(model, x, y, crit, opt):\n    loss = crit(model(x), y)\n    loss.backward()\n    opt.step()\n    opt.zero_grad()\n    return loss.item()\n\ndef train(model, loader, crit, opt):\n    history = []\n    for x, y in loader:\n        history.append(train_step(model, x, y, crit, opt))\n",
        # argmax / comparisons carry no graph
        "import torch\ndef train(model, loader, opt, crit):\n    correct = 0\n    preds = []\n    for x, y in loader:\n        out = model(x)\n        preds.append(out.argmax(dim=1))\n        correct += (out.argmax(1) == y).sum()\n        crit(out, y).backward()\n",
        # chunked losses returned for the caller's backward
        "import torch\ndef chunked_loss(model, chunks, targets, crit):\n    losses = []\n    for x, y in zip(chunks, targets):\n        losses.append(crit(model(x), y))\n    return losses\n\ndef step(model, loader, crit, opt):\n    for chunks, targets in loader:\n        torch.stack(chunked_loss(model, chunks, targets, crit)).mean().backward()\n        opt.step()\n        opt.zero_grad()\n",
        # backward and detach on one path, kept for the caller's backward on the other (sentence-transformers)
        "import torch\nclass CachedLoss:\n    def calculate_loss(self, model, loader, with_backward=False):\n        losses = []\n        for x in loader:\n            loss = model(x).sum()\n            if with_backward:\n                loss.backward()\n                loss = loss.detach()\n            losses.append(loss)\n        return sum(losses)\n    def forward(self, model, loader):\n        return self.calculate_loss(model, loader)\n",
        # an accumulated loss backpropagated once after the loop
        "def train(model, loader, opt):\n    total = 0\n    for x in loader:\n        total += model(x).sum()\n    total.backward()\n    opt.step()\n",
        # argsort and integer casts carry no graph
        "import torch\ndef train(model, loader, opt, crit):\n    ranks, labels = [], []\n    for x, y in loader:\n        out = model(x)\n        ranks.append(out.argsort(dim=1))\n        labels.append(out.long())\n        labels.append(out.to(torch.int64))\n        crit(out, y).backward()\n",
        # inference_mode and set_grad_enabled(False)
        "import torch\ndef run(model, loader):\n    a, b = [], []\n    with torch.inference_mode():\n        for x in loader:\n            a.append(model(x))\n    with torch.set_grad_enabled(False):\n        for x in loader:\n            b.append(model(x))\n    return a, b\n",
        # REINFORCE: log-probs stored during the episode are summed and backpropagated at its end
        "import torch\nimport torch.nn as nn\nfrom torch.distributions import Categorical\nclass Policy(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.head = nn.Linear(4, 2)\n        self.log_probs = []\n        self.rewards = []\n    def forward(self, x):\n        return torch.softmax(self.head(x), dim=-1)\npolicy = Policy()\nopt = torch.optim.Adam(policy.parameters())\ndef act(state):\n    dist = Categorical(policy(state))\n    action = dist.sample()\n    policy.log_probs.append(dist.log_prob(action))\n    return action.item()\ndef finish():\n    losses = []\n    for log_prob, ret in zip(policy.log_probs, policy.rewards):\n        losses.append(-log_prob * ret)\n    opt.zero_grad()\n    torch.stack(losses).sum().backward()\n    opt.step()\n    del policy.log_probs[:]\n    del policy.rewards[:]\ndef run(env, episodes):\n    for _ in range(episodes):\n        state, done = env.reset(), False\n        while not done:\n            state, reward, done, _ = env.step(act(state))\n            policy.rewards.append(reward)\n        finish()\n",
        # truncated backpropagation through time: the carried state is detached in place each step
        "import torch\nimport torch.distributed.autograd as dist_autograd\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.rnn = nn.LSTM(4, 8, 2)\n    def forward(self, x, hidden):\n        return self.rnn(x, hidden)\ndef train(loader, opt):\n    model = Net()\n    hidden = (torch.zeros(2, 4, 8), torch.zeros(2, 4, 8))\n    for x, y in loader:\n        with dist_autograd.context() as context_id:\n            hidden[0].detach_()\n            hidden[1].detach_()\n            out, hidden = model(x, hidden)\n            dist_autograd.backward(context_id, [out.sum()])\n            opt.step(context_id)\n",
    )
    INVALID = (
        # outputs returned to a caller in the file that never backpropagates them
        Invalid(
            "def collect(model, loader):\n    outs = []\n    for x in loader:\n        outs.append(model(x))\n    return outs\n\ndef main(model, loader):\n    print(len(collect(model, loader)))\n",
            line=4,
            fixed=None,  # not proven a tensor (a model output, an unknown criterion's result)
        ),
        # returned, but every stored loss was already backpropagated: no caller can use the graph
        Invalid(
            "def train_epoch(model, loader, opt, crit):\n    losses = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        losses.append(loss)\n        loss.backward()\n        opt.step()\n        opt.zero_grad()\n    return losses\n",
            line=5,
            fixed=None,  # not proven a tensor (a model output, an unknown criterion's result)
        ),
        Invalid(
            "import torch\ndef train(model, loader, opt, crit):\n    losses = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        losses.append(loss)\n        loss.backward()\n        opt.step()\n        opt.zero_grad()\n",
            Severity.ERROR,
            line=6,
            fixed=None,  # not proven a tensor (a model output, an unknown criterion's result)
        ),
        Invalid(
            "import torch\ndef train(model, loader, opt, crit):\n    total = 0\n    for x, y in loader:\n        loss = crit(model(x), y)\n        loss.backward()\n        total += loss\n        opt.step()\n        opt.zero_grad()\n    return total.item() / len(loader)\n",
            Severity.WARNING,
            line=7,
            fixed=None,  # not proven a tensor (a model output, an unknown criterion's result)
        ),
        # a Linear layer returns one tensor: `.detach()` is proven to work (unsafe: the
        # dict is a module global that other code may read)
        Invalid(
            "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 2)\nloader = torch.utils.data.DataLoader(range(8))\nhist = {}\nfor i, x in enumerate(loader):\n    out = model(x)\n    hist[i] = out\n",
            line=8,
            fixed=Fixed(
                "import torch\nimport torch.nn as nn\nmodel = nn.Linear(4, 2)\nloader = torch.utils.data.DataLoader(range(8))\nhist = {}\nfor i, x in enumerate(loader):\n    out = model(x)\n    hist[i] = out.detach()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self, model, loader):\n        self.model = model\n        self.loader = loader\n        self.losses = []\n    def fit(self):\n        for x, y in self.loader:\n            loss = self.model(x).sum()\n            self.losses.append(loss)\n            loss.backward()\n",
            line=10,
            fixed=None,  # not proven a tensor (a model output, an unknown criterion's result)
        ),
        # a criterion built here returns a tensor and the list is only counted: `.detach()` is proven safe
        Invalid(
            "import torch\ndef train(model, loader, opt):\n    crit = torch.nn.CrossEntropyLoss()\n    losses = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        losses.append(loss)\n        loss.backward()\n        opt.step()\n        opt.zero_grad()\n    print(len(losses))\n",
            line=7,
            fixed=Fixed(
                "import torch\ndef train(model, loader, opt):\n    crit = torch.nn.CrossEntropyLoss()\n    losses = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        losses.append(loss.detach())\n        loss.backward()\n        opt.step()\n        opt.zero_grad()\n    print(len(losses))\n",
                Applicability.SAFE,
            ),
        ),
        # the same, but the kept losses are summed later: they may reach a backward, so unsafe
        Invalid(
            "import torch\ndef train(model, loader, opt):\n    crit = torch.nn.CrossEntropyLoss()\n    losses = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        losses.append(loss)\n        loss.backward()\n    total = sum(losses)\n    return total\n",
            line=7,
            fixed=Fixed(
                "import torch\ndef train(model, loader, opt):\n    crit = torch.nn.CrossEntropyLoss()\n    losses = []\n    for x, y in loader:\n        loss = crit(model(x), y)\n        losses.append(loss.detach())\n        loss.backward()\n    total = sum(losses)\n    return total\n",
                Applicability.UNSAFE,
            ),
        ),
        # a namedtuple and a tuple hold graphs too, but have no .detach(): no fix
        Invalid(
            "import collections\nimport torch\nStep = collections.namedtuple('Step', ['loss', 'out'])\n"
            "def train(model, loader, opt):\n    crit = torch.nn.CrossEntropyLoss()\n    history = []\n"
            "    for x, y in loader:\n        out = model(x)\n        loss = crit(out, y)\n"
            "        history.append(Step(loss, out))\n        loss.backward()\n        opt.step()\n    print(len(history))\n",
            Severity.ERROR,
            line=10,
            fixed=None,
        ),
        # the carried state is never detached: each step chains onto the last one's graph; a tuple, no fix
        Invalid(
            "import torch\nimport torch.distributed.autograd as dist_autograd\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.rnn = nn.LSTM(4, 8, 2)\n    def forward(self, x, hidden):\n        return self.rnn(x, hidden)\ndef train(loader, opt):\n    model = Net()\n    hidden = (torch.zeros(2, 4, 8), torch.zeros(2, 4, 8))\n    for x, y in loader:\n        with dist_autograd.context() as context_id:\n            out, hidden = model(x, hidden)\n            dist_autograd.backward(context_id, [out.sum()])\n            opt.step(context_id)\n",
            Severity.ERROR,
            line=15,
            fixed=None,
        ),
    )

    def check(self, facts):
        created_at_store: dict[tuple[int, object], list[tuple]] = {}
        for trace, store in events(facts, EventKind.STORE):
            created_at_store.setdefault((id(trace), store.span), []).append(
                store.store.created_loops if store.store else ()
            )
        escaped = _escaping_locs(facts)
        reported: set = set()
        for trace, store in events(facts, EventKind.STORE):
            value = store.value
            if value is None or value.graph is None or not store.grad_enabled:
                continue
            created = store.store.created_loops if store.store else ()
            retained = [loop for loop in store.loops if loop not in created]
            if not retained or not is_iteration_loop(trace, retained[0]):
                continue
            if in_test_code(facts, trace):
                continue  # a test's few steps keep a few graphs: not a training run's leak
            # ``running_loss = 0`` / ``window.clear()`` inside the loop as well: reset every
            # update, so only the micro-steps between resets are kept; a bounded window.
            reset = any(retained[0] in loops for loops in created_at_store[(id(trace), store.span)])
            if store.loc in facts.backwarded_locs and (
                reset or not _chained_every_iteration(trace, store, retained[-1])
            ):
                continue  # the stored graphs are backpropagated later: kept on purpose
            if reset and value.backwarded is not None:
                continue  # graphs already freed by backward, held until the next reset: no leak
            later = trace.events[trace.events.index(store) + 1 :]
            backwarded_here = value.backwarded is not None or any(
                b.kind is EventKind.BACKWARD
                and retained[0] in b.loops
                and b.value is not None
                and b.value.graph == value.graph
                for b in later
            )
            if store.loc in escaped and not backwarded_here:
                continue  # returned (through any chain of calls) to a caller we cannot see
            container, stored = (
                (store.store.container, store.store.stored_text) if store.store else (None, None)
            )
            before_backward = value.backwarded is None
            if before_backward and backwarded_here:
                cost = (
                    "before its backward() has run: the backward later in the iteration frees the activations, "
                    "but every iteration's graph stays referenced and the saved tensors are kept until then"
                )
            elif before_backward:
                cost = "before any backward() has run on it, so every iteration's activations stay in GPU memory until it runs out"
            else:
                cost = "after backward(), so the graph's nodes and tensors stay alive for the rest of the loop"
            if value.proven_tensor:
                remedy = (
                    f"Store `{_called(stored, 'detach')}` instead "
                    f"(or `{_called(stored, 'item')}` for a scalar that is only logged)."
                )
            else:  # a tuple, a namedtuple or an output object has no .detach() of its own
                remedy = (
                    f"Store detached tensors instead: `{_called(stored, 'detach')}` for a tensor, "
                    "`.detach()` on each tensor of a tuple or output object "
                    "(or `.item()` for a scalar that is only logged)."
                )
            message = (
                f"`{stored}` still carries its autograd graph and is stored in `{container}`, which outlives "
                f"the loop iteration; it is stored {cost}. {remedy}"
            )
            evidence = [
                value.graph,
                Evidence(loop_header(trace, retained[0]), "the loop whose iterations it outlives"),
            ]
            if store.loc.line:
                evidence.insert(
                    1,
                    Evidence(
                        facts.lines.span_at(store.loc.line, store.loc.column),
                        f"`{store.loc.name}` is created outside that loop",
                    ),
                )
            if value.backwarded is not None:
                evidence.append(value.backwarded)
            if reset:
                message += f" (`{container}` is reset inside the loop, so only the iterations between resets are retained.)"
            site = store.span
            if store.via:
                # a store a helper makes into a container that outlives the call: reported
                # at the helper's statement, with the call inside the loop as evidence
                site = store.via[-1].span
                evidence.append(Evidence(store.span, "the call inside the loop that stores it"))
            if site in reported:
                continue
            reported.add(site)
            yield self.finding(
                site,
                message,
                evidence=evidence,
                confidence=value.graph_confidence,
                severity=Severity.ERROR if before_backward and not reset else Severity.WARNING,
                proofs=[Proof.STORED_TENSOR] if value.proven_tensor else [],
            )
