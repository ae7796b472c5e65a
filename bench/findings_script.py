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

FOOTER = """

def main():
    model = nn.Linear(64, 10)
    print(model)


if __name__ == "__main__":
    main()
"""


def findings_script(min_lines: int = 1000) -> str:
    """Header, template pairs with fresh suffixes until ``min_lines``, then ``main``."""
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
    print(findings_script(), end="")
