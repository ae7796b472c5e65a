"""Script reading: counting a script's own network whose layers a loop over known sizes
builds, and staying honest when the count may be only part of the job (issue 26)."""

from __future__ import annotations

import textwrap

from torchward.analysis.job.runconfig import read_source

_MLP = """
import torch
import torch.nn as nn


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        widths = [32, 64, 16]
        blocks = []
        width = 10
        for out in widths:
            blocks = blocks + [nn.Linear(width, out), nn.ReLU()]
            width = out
        self.body = nn.Sequential(*blocks, nn.Linear(width, 2))

    def forward(self, x):
        return self.body(x)

"""

_TRAIN = """
model = Tower()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(4, 10)).sum()
loss.backward()
optimizer.step()
"""

# 10*32+32 + 32*64+64 + 64*16+16 + 16*2+2
_TOWER = 352 + 2112 + 1040 + 34


def _fields(source: str) -> tuple[dict, list[str]]:
    config, notes = read_source(textwrap.dedent(source), "train.py")
    return dict(config.fields()), notes


def test_a_loop_over_a_list_of_widths_is_counted_pass_by_pass():
    fields, _ = _fields(_MLP + _TRAIN)
    assert fields["params"].value == _TOWER
    assert fields["params"].confidence != "low"


def test_a_size_rebound_in_a_loop_the_counter_cannot_follow_is_not_reused_after_it():
    unknown_widths = _MLP.replace("widths = [32, 64, 16]", "widths = load_widths()")
    fields, notes = _fields(unknown_widths + _TRAIN)
    # the head must not be sized by the ``width = 10`` from before the loop (22 parameters
    # presented as the network's): nothing is counted, and the read says why
    assert "params" not in fields
    assert any("nn.Linear(...) (sizes not traced)" in note for note in notes)


def test_a_second_network_whose_training_is_not_read_lowers_the_count_to_low():
    source = (
        _MLP
        + _MLP.split("class Tower", 1)[0]
        + "class Critic(nn.Module):\n"
        + "    def __init__(self):\n"
        + "        super().__init__()\n"
        + "        self.head = nn.Linear(10, 1)\n\n"
        + "build = {'tower': lambda: Tower(), 'critic': lambda: Critic()}\n"
        + "loss = build['tower']()(torch.randn(4, 10)).sum()\n"
        + "loss.backward()\n"
    )
    fields, notes = _fields(source)
    assert fields["params"].value == _TOWER
    assert fields["params"].confidence == "low"
    assert any("also builds Critic (11 parameters)" in note for note in notes)


_PARTS = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)


class Block(nn.Module):
    def __init__(self, *, width, attn):
        super().__init__()
        self.attn = attn
        self.norm = nn.LayerNorm(width)


class Stack(nn.Module):
    def __init__(self, block, depth):
        super().__init__()
        self.blocks = nn.ModuleList([block for _ in range(depth)])

"""


def test_modules_built_in_nested_argument_lists_are_counted_inside_their_holder():
    source = _PARTS + (
        "model = Stack(Block(width=8, attn=Attention(8)), 3)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model(torch.randn(2, 8)).sum().backward()\n"
    )
    fields, notes = _fields(source)
    block = (8 * 24 + 24) + 2 * 8  # the attention the block holds, and its norm
    assert fields["model"].value == "Stack"
    assert fields["params"].value == 3 * block  # before: the attention was left out
    assert not any("also builds" in note for note in notes)  # its parts are not others


def test_a_part_of_a_model_whose_size_is_unknown_is_never_the_model():
    source = _PARTS + (
        "class Outer(nn.Module):\n"
        "    def __init__(self, vocab, stack):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(vocab, 8)\n"
        "        self.stack = stack\n\n"
        "model = Outer(read_vocab(), Stack(Block(width=8, attn=Attention(8)), 3))\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model(torch.randn(2, 8)).sum().backward()\n"
    )
    fields, _ = _fields(source)
    # the vocabulary is unknown: the count is partial (the stack: 3 blocks of 232) and
    # says so; the block deep inside is never named as the model (it was, with 232)
    assert fields["model"].value == "Outer"
    assert fields["params"].value == 3 * 232 and fields["params"].confidence == "low"


def test_a_network_another_training_function_trains_is_another_job():
    source = _MLP + (
        "class Critic(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = nn.Linear(10, 1)\n\n\n"
        "def train_tower():\n"
        "    model = Tower()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model(torch.randn(4, 10)).sum().backward()\n"
        "    optimizer.step()\n\n\n"
        "def train_critic():\n"
        "    critic = Critic()\n"
        "    optimizer = torch.optim.SGD(critic.parameters(), lr=0.1)\n"
        "    critic(torch.randn(4, 10)).sum().backward()\n"
        "    optimizer.step()\n\n\n"
        "train_tower()\n"
        "train_critic()\n"
    )
    fields, notes = _fields(source)
    assert fields["params"].value == _TOWER
    assert fields["params"].confidence != "low"
    assert not any("also builds" in note for note in notes)


_PYRAMID = """
import torch
import torch.nn as nn


class Pyramid(nn.Module):
    def __init__(self, widths=(8, 16, 32)):
        super().__init__()
        self.convs = nn.ModuleList()
        for index, (c_in, c_out) in enumerate(zip(widths[:-1], widths[1:])):
            self.convs.append(nn.Conv2d(c_in, c_out, 3))
            if index != len(widths) - 2:
                self.convs.append(nn.BatchNorm2d(c_out))
        for width in reversed(list(widths)):
            self.convs.append(nn.Conv2d(width, width, 1, bias=False))


model = Pyramid()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(2, 8, 16, 16)).sum().backward()
optimizer.step()
"""


def test_loops_over_enumerate_zip_slices_and_reversed_sizes_are_counted():
    fields, notes = _fields(_PYRAMID)
    convs = (8 * 16 * 9 + 16) + (16 * 32 * 9 + 32)  # zip(widths[:-1], widths[1:])
    norm = 2 * 16  # only after the first: len(widths) - 2 == 1
    pointwise = 32 * 32 + 16 * 16 + 8 * 8  # reversed(list(widths)), no bias
    assert fields["params"].value == convs + norm + pointwise
    assert fields["params"].confidence != "low", notes
