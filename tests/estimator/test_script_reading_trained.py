"""Script reading: which modules the default launch trains, and how many parameters that is.

Sizes a class body reads from module-level names the launch computes (an argparse
default converted with ``int``), two networks each with an optimizer of its own (a GAN:
the job holds both), and a bare ``nn`` layer trained as the model.
"""

from __future__ import annotations

from torchward.analysis.runconfig import read_source

_GAN = """\
import argparse
import torch
import torch.nn as nn
import torch.optim as optim

parser = argparse.ArgumentParser()
parser.add_argument('--width', type=int, default=32)
parser.add_argument('--latent', type=int, default=16)
opt = parser.parse_args()
width = int(opt.width)
latent = int(opt.latent)


class Maker(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent, width), nn.ReLU(), nn.Linear(width, 784))

    def forward(self, z):
        return self.net(z)


class Judge(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, x):
        return self.net(x)


maker = Maker().to('cuda')
judge = Judge().to('cuda')
opt_judge = optim.Adam(judge.parameters(), lr=2e-4)
opt_maker = optim.Adam(maker.parameters(), lr=2e-4)
for real in loader:
    judge.zero_grad()
    loss_j = judge(real).mean() - judge(maker(torch.randn(64, latent)).detach()).mean()
    loss_j.backward()
    opt_judge.step()
    maker.zero_grad()
    loss_m = -judge(maker(torch.randn(64, latent))).mean()
    loss_m.backward()
    opt_maker.step()
"""

MAKER = (16 * 32 + 32) + (32 * 784 + 784)
JUDGE = (784 * 32 + 32) + (32 * 1 + 1)


def _one_optimizer(source: str) -> str:
    """The GAN with the judge's optimizer gone: only the maker is trained."""
    return source.replace("opt_judge = optim.Adam(judge.parameters(), lr=2e-4)\n", "")


def test_sizes_a_class_reads_from_launch_computed_globals():
    # ``width = int(opt.width)`` is an argparse default a launch can override: counted,
    # at medium confidence, not high
    config, _ = read_source(_one_optimizer(_GAN))
    assert config.model is not None and config.model.value == "Maker"
    assert config.params is not None and config.params.value == MAKER
    assert config.params.confidence == "medium"
    # the same sizes written as literals are read where they are written: high
    literal = _GAN.replace("int(opt.width)", "32").replace("int(opt.latent)", "16")
    config, _ = read_source(_one_optimizer(literal))
    assert config.params is not None and (config.params.value, config.params.confidence) == (
        MAKER,
        "high",
    )


def test_two_networks_each_with_an_optimizer_are_both_the_job():
    config, notes = read_source(_GAN)
    assert config.model is not None and config.model.value == "Maker"  # the larger one
    assert config.params is not None and config.params.value == MAKER + JUDGE
    assert "Maker's and Judge's layers" in config.params.source
    assert any("the optimizers also train Judge" in n for n in notes), notes


def test_a_network_no_optimizer_trains_is_not_added():
    config, notes = read_source(_one_optimizer(_GAN))
    assert config.params is not None and config.params.value == MAKER
    assert "Judge" not in config.params.source
    assert not any("the optimizers also train" in n for n in notes)
