"""A deterministic, realistic ~1,000-line training script for the in-process timing.

Why synthetic: the latency target is about *one typical file the size of a real training
script* (what the language server re-lints on every keystroke), so the text has to look
like training code — models, loaders, optimizers, train/eval/accumulation/DDP loops,
helpers that return losses — not random Python. Real scripts of that size are rarely one
file we may commit, so the script is assembled from templates, each repeated with distinct
names so that no two functions are identical (a summary cache keyed by body text would
otherwise make the figure look better than it is).

A mix of correct and buggy shapes is deliberate: rules must do their full work (dataflow,
reachability, helper summaries) rather than bail out early on a clean file.

Run ``python bench/synthetic_script.py > /tmp/train.py`` to look at it.
"""

from __future__ import annotations

HEADER = '''\
"""Synthetic training script used by torchward's benchmark (bench/synthetic_script.py)."""

import argparse
import math
import os
import random

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class ToyDataset(Dataset):
    def __init__(self, n, dim, classes):
        self.x = torch.randn(n, dim)
        self.y = torch.randint(0, classes, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index], self.y[index]

'''

# Each block is formatted with ``i`` (a distinct suffix). Between them they cover the
# shapes the rules reason about: epoch loops with validation, accumulation gates, helpers
# returning detached or live losses, DDP setup, BCE/CE heads, containers of losses.
BLOCKS = (
    """
class Classifier{i}(nn.Module):
    def __init__(self, dim=64, hidden=128, classes=10):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(dim, hidden),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))

""",
    """
def compute_loss_{i}(model, batch, criterion, device):
    inputs, targets = batch
    inputs = inputs.to(device, non_blocking=True)
    targets = targets.to(device, non_blocking=True)
    logits = model(inputs)
    return criterion(logits, targets)

""",
    """
def train_one_epoch_{i}(model, loader, optimizer, criterion, device, scheduler=None):
    model.train()
    running = 0.0
    history = []
    for step, batch in enumerate(loader):
        optimizer.zero_grad(set_to_none=True)
        loss = compute_loss_{i}(model, batch, criterion, device)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        running += loss.item()
        history.append(loss.detach())
        if step % 50 == 0:
            print(f"step {{step}} loss {{running / (step + 1):.4f}}")
    return running / max(len(loader), 1), history

""",
    """
@torch.no_grad()
def evaluate_{i}(model, loader, criterion, device):
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        logits = model(inputs)
        loss_sum += criterion(logits, targets).item() * targets.size(0)
        correct += (logits.argmax(dim=1) == targets).sum().item()
        total += targets.size(0)
    return loss_sum / max(total, 1), correct / max(total, 1)

""",
    """
def validate_inline_{i}(model, val_loader, device):
    model.eval()
    predictions = []
    for inputs, _ in val_loader:
        outputs = model(inputs.to(device))
        predictions.append(outputs.argmax(dim=-1))
    return torch.cat(predictions)

""",
    """
def train_accumulating_{i}(model, loader, optimizer, device, accumulation_steps=4):
    criterion = nn.CrossEntropyLoss()
    model.train()
    losses = []
    for step, (inputs, targets) in enumerate(loader):
        logits = model(inputs.to(device))
        loss = criterion(logits, targets.to(device))
        loss.backward()
        losses.append(loss)
        if (step + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    return losses

""",
    """
def train_scaled_accumulation_{i}(model, loader, optimizer, device, accum=8):
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    scaler = torch.cuda.amp.GradScaler()
    for step, (inputs, targets) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(inputs.to(device)), targets.to(device)) / accum
        scaler.scale(loss).backward()
        if (step + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)

""",
    """
def fit_{i}(model, train_loader, val_loader, optimizer, device, epochs=3):
    criterion = nn.CrossEntropyLoss()
    best = math.inf
    for epoch in range(epochs):
        for inputs, targets in train_loader:
            optimizer.zero_grad()
            probs = F.softmax(model(inputs.to(device)), dim=1)
            loss = criterion(probs, targets.to(device))
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = 0.0
            for inputs, targets in val_loader:
                val_loss += criterion(model(inputs.to(device)), targets.to(device)).item()
        if val_loss < best:
            best = val_loss
            torch.save(model.state_dict(), f"best_{{epoch}}.pt")
    return best

""",
    """
def train_binary_head_{i}(model, loader, optimizer, device):
    criterion = nn.BCEWithLogitsLoss()
    for inputs, labels in loader:
        logits = model(inputs.to(device)).squeeze(-1)
        scores = torch.sigmoid(logits)
        loss = criterion(scores, labels.float().to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

""",
    """
def train_without_reset_{i}(model, loader, device, lr=1e-3):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    total_loss = 0
    for inputs, targets in loader:
        loss = F.cross_entropy(model(inputs.to(device)), targets.to(device))
        loss.backward()
        optimizer.step()
        total_loss += loss
    return total_loss

""",
    """
def setup_distributed_{i}(dataset, model, batch_size=32):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    model = DDP(model.cuda(rank), device_ids=[rank])
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=4,
                        pin_memory=True)
    plain = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=4,
                       pin_memory=True)
    return model, loader, plain, sampler

""",
)

FOOTER = """
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=3e-4)
    args = parser.parse_args()
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = ToyDataset(4096, 64, 10)
    train_loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=2)
    val_loader = DataLoader(dataset, batch_size=256, num_workers=2)
    model = Classifier0().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        train_one_epoch_0(model, train_loader, optimizer, criterion, device)
        print(evaluate_0(model, val_loader, criterion, device))


if __name__ == "__main__":
    main()
"""


def training_script(min_lines: int = 1000) -> str:
    """Return the script: header, template rounds with fresh suffixes, then ``main``.

    Whole rounds are added until the text reaches ``min_lines``, so the result is a little
    over the target rather than a cut-off function.
    """
    parts = [HEADER]
    lines = HEADER.count("\n") + FOOTER.count("\n")
    index = 0
    while lines < min_lines:
        for block in BLOCKS:
            text = block.format(i=index)
            parts.append(text)
            lines += text.count("\n")
        index += 1
    parts.append(FOOTER)
    return "".join(parts)


if __name__ == "__main__":
    print(training_script(), end="")
