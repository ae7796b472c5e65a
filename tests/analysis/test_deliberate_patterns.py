"""Deliberate patterns are quiet, and the findings that remain say exactly what they say.

TW001: losses kept for the episode's backward (REINFORCE, actor-critic) and a recurrent
state detached in place are not leaks; a tuple or namedtuple stored gets no `.detach()`.
TW007: a timing sync in a step that already syncs, and a rollout's per-step read, are
quiet. TW024: a model class of another project module without dropout or batch norm is
quiet. Each quiet case has a twin that still fires, so the tests can fail both ways.
"""

from __future__ import annotations

import textwrap

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.finding import Proof, Severity
from torchward.analysis.fixes import apply_edits, fixes_for


def _findings(source: str, code: str, path: str = "x.py"):
    return analyze_source(source, path, LintSettings(select=(code,))).findings


ACTOR_CRITIC = textwrap.dedent(
    """\
    from collections import namedtuple
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributions import Categorical

    Saved = namedtuple("Saved", ["log_prob", "value"])


    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 16)
            self.actor = nn.Linear(16, 2)
            self.critic = nn.Linear(16, 1)
            self.saved = []
            self.rewards = []

        def forward(self, x):
            h = F.relu(self.body(x))
            return F.softmax(self.actor(h), dim=-1), self.critic(h)


    net = ActorCritic()
    opt = torch.optim.Adam(net.parameters(), lr=3e-2)


    def choose(state):
        probs, value = net(torch.as_tensor(state))
        dist = Categorical(probs)
        action = dist.sample()
        net.saved.append(Saved(dist.log_prob(action), value))
        return action.item()


    def end_episode():
        actor_losses, critic_losses = [], []
        for (log_prob, value), ret in zip(net.saved, net.rewards):
            actor_losses.append(-log_prob * (ret - value.item()))
            critic_losses.append(F.smooth_l1_loss(value, torch.tensor([ret])))
        opt.zero_grad()
        (torch.stack(actor_losses).sum() + torch.stack(critic_losses).sum()).backward()
        opt.step()
        del net.saved[:]
        del net.rewards[:]


    def play(env, episodes):
        for _ in range(episodes):
            state, done = env.reset(), False
            while not done:
                state, reward, done, _ = env.step(choose(state))
                net.rewards.append(reward)
            end_episode()
    """
)


def test_tw001_actor_critic_values_backpropagated_at_the_episode_end_are_kept_on_purpose():
    assert _findings(ACTOR_CRITIC, "TW001") == ()


def test_tw001_the_same_store_never_backpropagated_is_a_leak_without_a_fix():
    """The twin: the episode's losses are only printed, so the stored namedtuples leak;
    ``.detach()`` on a namedtuple would raise, so no fix is offered."""
    source = ACTOR_CRITIC.replace(
        "(torch.stack(actor_losses).sum() + torch.stack(critic_losses).sum()).backward()",
        "print(len(actor_losses), len(critic_losses))",
    )
    (finding,) = _findings(source, "TW001")
    assert (finding.code, finding.span.line, finding.severity) == ("TW001", 32, Severity.ERROR)
    assert finding.message == (
        "`Saved(dist.log_prob(action), value)` still carries its autograd graph and is stored in "
        "`net.saved`, which outlives the loop iteration; it is stored before any backward() has run "
        "on it, so every iteration's activations stay in GPU memory until it runs out. Store detached "
        "tensors instead: `Saved(dist.log_prob(action), value).detach()` for a tensor, `.detach()` on "
        "each tensor of a tuple or output object (or `.item()` for a scalar that is only logged)."
    )
    assert Proof.STORED_TENSOR not in finding.proofs
    assert fixes_for(source, finding) == ()


def test_tw001_a_tuple_of_a_loss_and_an_output_gets_no_detach():
    source = textwrap.dedent(
        """\
        import torch
        def train(model, loader, opt):
            crit = torch.nn.CrossEntropyLoss()
            pairs = []
            for x, y in loader:
                out = model(x)
                loss = crit(out, y)
                pairs.append((loss, out))
                loss.backward()
                opt.step()
            print(len(pairs))
        """
    )
    (finding,) = _findings(source, "TW001")
    assert (finding.span.line, finding.severity) == (8, Severity.ERROR)
    assert fixes_for(source, finding) == ()


def test_tw001_a_proven_tensor_still_gets_its_fix():
    source = textwrap.dedent(
        """\
        import torch
        def train(model, loader, opt):
            crit = torch.nn.CrossEntropyLoss()
            losses = []
            for x, y in loader:
                loss = crit(model(x), y)
                losses.append(loss)
                loss.backward()
                opt.step()
            print(len(losses))
        """
    )
    (finding,) = _findings(source, "TW001")
    assert finding.message.endswith(
        "Store `loss.detach()` instead (or `loss.item()` for a scalar that is only logged)."
    )
    (fix,) = fixes_for(source, finding)
    assert "        losses.append(loss.detach())\n" in apply_edits(source, fix.edits)


ROLLOUT = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn
    def train(env, episodes):
        policy = nn.Linear(4, 2)
        opt = torch.optim.Adam(policy.parameters())
        for _ in range(episodes):
            state, done = env.reset(), False
            log_probs, rewards = [], []
            while not done:
                probs = torch.softmax(policy(torch.as_tensor(state)), -1)
                action = torch.multinomial(probs, 1)
                log_probs.append(torch.log(probs[action]))
                state, reward, done, _ = env.step(action.item())
                rewards.append(reward)
            loss = -torch.stack(log_probs).sum() * sum(rewards)
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
)


def test_tw007_a_rollout_hands_each_action_to_the_environment():
    assert _findings(ROLLOUT, "TW007") == ()


def test_tw007_a_per_element_read_of_one_output_still_fires():
    """The twin: the inner loop runs no model, it reads one batch's output element by element."""
    source = textwrap.dedent(
        """\
        import torch
        def train(model, loader, opt, crit):
            correct = 0
            for x, y in loader:
                out = model(x)
                loss = crit(out, y)
                loss.backward()
                opt.step()
                for i in range(len(y)):
                    correct += out[i].argmax().item() == y[i]
        """
    )
    (finding,) = _findings(source, "TW007")
    assert (finding.code, finding.span.line, finding.severity) == ("TW007", 10, Severity.WARNING)
    assert finding.message == (
        "this reads a tensor back to the host once per iteration of a loop inside the training step: "
        "each read waits for the GPU to finish all queued work, so the device idles while Python "
        "catches up. Read once per step (vectorise, then one `.item()`), or only every N steps."
    )


STEP_WITH_NAN_CHECK = textwrap.dedent(
    """\
    import torch
    def train(model, loader, opt, crit):
        for x, y in loader:
            loss = crit(model(x), y)
            if torch.isnan(loss).item():
                raise RuntimeError("nan")
            loss.backward()
            opt.step()
            opt.zero_grad()

            torch.cuda.synchronize()
            print(loss)
    """
)


def test_tw007_a_sync_in_a_step_that_already_waits_is_quiet():
    assert _findings(STEP_WITH_NAN_CHECK, "TW007") == ()


def test_tw007_a_sync_in_a_step_that_never_waits_still_fires():
    source = STEP_WITH_NAN_CHECK.replace(
        '        if torch.isnan(loss).item():\n            raise RuntimeError("nan")\n', ""
    )
    (finding,) = _findings(source, "TW007")
    assert (finding.span.line, finding.severity) == (9, Severity.WARNING)
    assert finding.message.startswith("`torch.cuda.synchronize()` runs on every training step: ")


MODELS = textwrap.dedent(
    """\
    import torch.nn as nn
    from blocks import Block


    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x):
            return self.fc2(self.fc1(x).relu())


    class Dropping(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            return self.drop(self.fc(x))


    class Stacked(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x)
    """
)
TRAIN = textwrap.dedent(
    """\
    import torch
    from models import {name}


    def main(train_loader, val_loader):
        model = {name}()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            model.train()
            for x, y in train_loader:
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
                opt.zero_grad()
            with torch.no_grad():
                for x, y in val_loader:
                    print(model(x).argmax(1))
    """
)


@pytest.mark.parametrize("name, flagged", [("Plain", False), ("Dropping", True), ("Stacked", True)])
def test_tw024_reads_the_model_class_in_the_module_that_defines_it(tmp_path, name, flagged):
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "blocks.py").write_text(
        "import torch.nn as nn\nclass Block(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.norm = nn.BatchNorm1d(4)\n"
    )
    source = TRAIN.format(name=name)
    script = tmp_path / "train.py"
    script.write_text(source)
    found = _findings(source, "TW024", str(script))
    if not flagged:
        assert found == ()
        return
    (finding,) = found
    assert (finding.code, finding.span.line, finding.severity) == ("TW024", 15, Severity.WARNING)
    assert finding.message == (
        "this evaluation pass runs the model in training mode: dropout stays on and batch norm "
        "normalises with (and updates its statistics from) the evaluation batches. `no_grad()` "
        "does not change the mode: call `model.eval()` before the pass and `model.train()` after."
    )
