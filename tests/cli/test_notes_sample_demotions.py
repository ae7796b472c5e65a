"""The kinds of note the issue-28 sample judged not worth a user's time are hints now,
and the kinds it judged useful stay notes (docs/triage/notes-sample.md).

- TW015 over a dataset whose items nothing of the project reads or decodes (tokenised
  batches prepared by a library, a toy class that indexes tensors already in memory):
  a hint. Over the project's own class that opens an image per item: a note, even when
  the class lives in another module.
- TW023 where a notebook reloads the ``state_dict`` it saved itself a few cells
  earlier: a hint. The same load of a path nothing in the project writes: a warning.
"""

from __future__ import annotations

import json

from .projects import write

IMAGES = (
    "from PIL import Image\n"
    "from torch.utils.data import Dataset\n"
    "class Frames(Dataset):\n"
    "    def __init__(self, files):\n"
    "        self.files = files\n"
    "    def __len__(self):\n"
    "        return len(self.files)\n"
    "    def __getitem__(self, index):\n"
    "        return Image.open(self.files[index])\n"
)
LOADER_OVER_FRAMES = (
    "from torch.utils.data import DataLoader\n"
    "from frames import Frames\n"
    "class Setup:\n"
    "    def build(self, files):\n"
    "        self.frames = Frames(files)\n"
    "        self.loader = DataLoader(self.frames, 16, shuffle=True, pin_memory=True)\n"
)
LOADER_OVER_TOKENS = (
    "from torch.utils.data import DataLoader\n"
    "def loaders(tokenised, collate):\n"
    "    train = DataLoader(tokenised['train'], batch_size=8, collate_fn=collate, pin_memory=True)\n"
    "    return train\n"
)


IN_MEMORY = (
    "import torch\n"
    "from torch.utils.data import DataLoader, Dataset\n"
    "class Pairs(Dataset):\n"
    "    def __init__(self, xs, ys):\n"
    "        self.xs, self.ys = xs, ys\n"
    "    def __len__(self):\n"
    "        return len(self.ys)\n"
    "    def __getitem__(self, index):\n"
    "        return self.xs[index], self.ys[index]\n"
    "def loader():\n"
    "    pairs = Pairs(torch.randn(5, 2), torch.tensor([0, 1, 0, 1, 1]))\n"
    "    return DataLoader(pairs, batch_size=2, pin_memory=True)\n"
)


def _found(torchward, *args):
    findings = json.loads(torchward("check", "--no-cache", "--format", "json", *args).out)
    return sorted((f["path"], f["code"], f["line"], f["severity"]) for f in findings)


def test_pinning_without_workers_is_a_note_only_over_the_projects_own_item_builder(
    project, torchward
):
    write(project, "frames.py", IMAGES)
    write(project, "setup.py", LOADER_OVER_FRAMES)
    write(project, "text.py", LOADER_OVER_TOKENS)
    write(project, "toy.py", IN_MEMORY)
    assert _found(torchward, "--select", "TW015", ".") == [
        ("setup.py", "TW015", 6, "note"),
        ("text.py", "TW015", 3, "hint"),
        ("toy.py", "TW015", 12, "hint"),
    ]


def _notebook(*cells: str) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "source": cell, "outputs": []}
                for cell in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


TRAIN_CELL = (
    "import torch\n"
    "def fit(model, loader, opt, crit):\n"
    "    for x, y in loader:\n"
    "        opt.zero_grad()\n"
    "        crit(model(x), y).backward()\n"
    "        opt.step()\n"
    "    torch.save(model.state_dict(), 'sentiment-model.pt')\n"
)


def test_a_notebook_reloading_its_own_state_dict_is_a_hint_and_a_foreign_file_a_warning(
    project, torchward
):
    write(project, "requirements.txt", "torch>=2.0\n")
    write(
        project,
        "own.ipynb",
        _notebook(TRAIN_CELL, "model.load_state_dict(torch.load('sentiment-model.pt'))\n"),
    )
    write(
        project,
        "foreign.ipynb",
        _notebook(TRAIN_CELL, "model.load_state_dict(torch.load('downloaded-weights.pt'))\n"),
    )
    severities = {
        path: severity
        for path, code, _, severity in _found(torchward, "--select", "TW023", ".")
        if code == "TW023"
    }
    assert severities == {"own.ipynb": "hint", "foreign.ipynb": "warning"}
