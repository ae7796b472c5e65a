"""TW008 reads only the statements, at any depth, whose lines can name a seed or a global
random call (an editor keystroke must not walk the whole tree, and a script's whole
``__main__`` block is one top-level statement): what it finds, and which call it cites,
is what a walk of every node finds, aliases included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from torchward.analysis import analyze_source
from torchward.analysis.rules.unseeded_run import seeding_of
from torchward.analysis.syntax.names import ImportTable
from torchward.analysis.syntax.positions import LineIndex

ROOT = Path(__file__).resolve().parents[2]
ALIASED = """\
import torch
from torch import manual_seed as pin
from random import shuffle as mix
import numpy.random as npr


@decorate(pin)
def helper():
    return 1


def train(model, loader, opt):
    pin(0)
    items = list(range(10))
    mix(items)
    noise = npr.rand(3)
    for x in loader:
        model(x).sum().backward()
        opt.step()
"""
NESTED_MAIN = """\
import random
import numpy as np
import torch

if __name__ == "__main__":
    parser = make_parser()
    args = parser.parse_args()
    if args.deterministic:
        torch.manual_seed(args.seed)
        if args.all:
            np.random.seed(args.seed)
    model = build(args)
    for epoch in range(args.epochs):
        for step, batch in enumerate(loader):
            if step % 10 == 0:
                crop = random.randint(0, 8)
            loss = model(batch).sum()
            loss.backward()
        with torch.no_grad():
            noise = np.random.rand(4)
    torch.manual_seed(1)
"""
SOURCES = [
    *sorted((ROOT / "examples").glob("*.py")),
    *sorted((Path(__file__).parent / "fixtures").glob("*.py")),
]


def _seeding(source: str, filtered: bool):
    tree = ast.parse(source)
    lines = LineIndex(source).lines if filtered else None
    found = seeding_of(tree, ImportTable(tree), lines)
    return (
        {lib: ast.dump(call, include_attributes=True) for lib, call in found.seeded.items()},
        {lib: ast.dump(call, include_attributes=True) for lib, call in found.used.items()},
        found.opaque,
    )


@pytest.mark.parametrize(
    "source",
    [ALIASED, NESTED_MAIN, *(p.read_text() for p in SOURCES)],
    ids=["aliased", "nested-main", *(p.stem for p in SOURCES)],
)
def test_the_filtered_walk_finds_what_the_full_walk_finds(source):
    assert _seeding(source, True) == _seeding(source, False)


def test_aliases_without_seed_or_random_in_their_name_still_count():
    seeded, used, opaque = _seeding(ALIASED, True)
    assert set(seeded) == {"torch"} and set(used) == {"random", "numpy"} and not opaque
    codes = [f.code for f in analyze_source(ALIASED, "train.py").findings]
    assert codes.count("TW008") == 2
