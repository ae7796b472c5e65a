"""Small models, written for these tests, in the shapes real training code takes.

Each is source text: the tests write it into a project folder and profile it there, as a
user's own file would be.
"""

from __future__ import annotations

TINY_GPT = """\
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=512, d=64, layers=2, heads=4, context=256):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets=None):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def make_gpt(layers=2, d=64):
    return TinyGPT(layers=layers, d=d)
"""

SMALL_CNN = """\
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self, classes=10, width=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def make_cnn(width=16):
    return SmallCNN(width=width)
"""

MLP_AND_LSTM = """\
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_in=128, hidden=256, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


class Tagger(nn.Module):
    def __init__(self, d_in=32, hidden=64, tags=8):
        super().__init__()
        self.rnn = nn.LSTM(d_in, hidden, batch_first=True)
        self.out = nn.Linear(hidden, tags)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.out(y)


def make_mlp():
    return MLP()


def make_tagger():
    return Tagger()
"""

# A training script whose model the static reader finds; running anything beyond the
# model's construction writes MARKER (the profile must not).
TRAIN_SCRIPT = """\
import argparse
import pathlib

import torch

from gpt import TinyGPT

LAYERS = 2
WIDTH = 64
pathlib.Path({marker!r}).write_text("the script's top level ran")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=LAYERS)
    args = parser.parse_args()
    model = TinyGPT(d=WIDTH, layers=args.layers)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(100):
        pathlib.Path({marker!r}).write_text("the training loop ran")
        x = torch.randint(0, 512, (4, 128))
        logits, loss = model(x, x)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""
