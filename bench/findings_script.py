"""A deterministic training script with *many* findings, for the editor latency benchmark.

bench/synthetic_script.py is realistic code with a few findings per hundred lines — the
summary cache's best case. A file a user is cleaning up looks different: dozens of
training functions, each with a bug or two (a loss kept with its graph, softmax before
cross-entropy, sigmoid before BCEWithLogits, a missing ``zero_grad``). Every keystroke
then re-delivers ~140 findings, and whatever the server does per finding (conversion to
LSP, evidence, serialisation) shows. At 1,000 lines: ~70 functions, ~140 findings.

Run ``python bench/findings_script.py > /tmp/many.py`` to look at it.
"""

from __future__ import annotations

HEADER = '''\
"""Synthetic training code with many findings (bench/findings_script.py)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

'''

BLOCKS = (
    """
def train_softmax_{i}(model, loader, optimizer, device):
    # one epoch; returns the losses for the progress plot
    criterion = nn.CrossEntropyLoss()
    losses = []
    for inputs, targets in loader:
        optimizer.zero_grad()
        probs = F.softmax(model(inputs.to(device)), dim=1)
        loss = criterion(probs, targets.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses

""",
    """
def train_sigmoid_{i}(model, loader, device, lr=1e-3):
    # one epoch of the binary head; returns the summed loss
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    criterion = nn.BCEWithLogitsLoss()
    total = 0
    for inputs, labels in loader:
        scores = torch.sigmoid(model(inputs.to(device)).squeeze(-1))
        loss = criterion(scores, labels.float().to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss
    return total

""",
)

# The same functions with the bugs fixed: filler that keeps a larger file at ~140 findings.
CLEAN_BLOCKS = tuple(
    block.replace(
        "probs = F.softmax(model(inputs.to(device)), dim=1)", "probs = model(inputs.to(device))"
    )
    .replace("losses.append(loss)", "losses.append(loss.item())")
    .replace(
        "scores = torch.sigmoid(model(inputs.to(device)).squeeze(-1))",
        "scores = model(inputs.to(device)).squeeze(-1)",
    )
    .replace("total += loss\n", "total += loss.item()\n")
    .replace("def train_", "def clean_train_")
    for block in BLOCKS
)

FOOTER = """

def main():
    model = nn.Linear(64, 10)
    print(model)


if __name__ == "__main__":
    main()
"""


def findings_script(min_lines: int = 1000, buggy_pairs: int = 35) -> str:
    """Header, template pairs with fresh suffixes until ``min_lines``, then ``main``.

    The first ``buggy_pairs`` pairs carry two findings per function (~140 in all); the
    rest are the fixed versions, interleaved so the findings spread over the whole file.
    """
    pairs = 0
    lines = HEADER.count("\n") + FOOTER.count("\n")
    per_pair = sum(block.count("\n") for block in BLOCKS)
    while lines + pairs * per_pair < min_lines:
        pairs += 1
    every = max(1, pairs // max(buggy_pairs, 1))
    parts = [HEADER]
    buggy = 0
    for index in range(pairs):
        if buggy < buggy_pairs and index % every == 0:
            blocks, buggy = BLOCKS, buggy + 1
        else:
            blocks = CLEAN_BLOCKS
        parts.extend(block.format(i=index) for block in blocks)
    parts.append(FOOTER)
    return "".join(parts)


if __name__ == "__main__":
    print(findings_script(), end="")
