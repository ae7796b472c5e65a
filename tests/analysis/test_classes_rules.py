"""Every rule that applies to a trainer class, positive and negative (issue 15, classes).

One correct distributed, mixed-precision trainer with gradient accumulation — a loss
helper shared by training and evaluation, an update helper behind the accumulation
gate, ``fit`` calling ``train_epoch`` and ``evaluate`` each epoch — must be quiet for
every rule. Each case then breaks it in one place, the way such trainers go wrong, and
exactly that rule must report exactly the marked line.
"""

from __future__ import annotations

import textwrap

import pytest
from torchward.analysis import analyze_source

CORRECT_TRAINER = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Trainer:
        def __init__(self, model, train_set, val_set, rank, accum_steps=4):
            self.rank = rank
            self.model = DDP(model.to(rank), device_ids=[rank])
            self.sampler = DistributedSampler(train_set, shuffle=True)
            self.train_loader = DataLoader(train_set, batch_size=16, sampler=self.sampler)
            self.val_loader = DataLoader(val_set, batch_size=64)
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-4)
            self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, 1000)
            self.scaler = torch.amp.GradScaler("cuda")
            self.criterion = nn.CrossEntropyLoss()
            self.accum_steps = accum_steps
            self.history = []

        def compute_loss(self, batch):
            inputs, targets = batch
            with torch.autocast("cuda", dtype=torch.float16):
                logits = self.model(inputs.to(self.rank))
                return self.criterion(logits, targets.to(self.rank))

        def _update(self):
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad(set_to_none=True)
            self.scheduler.step()

        def train_epoch(self, epoch):
            self.model.train()
            self.sampler.set_epoch(epoch)
            total = 0.0
            for i, batch in enumerate(self.train_loader):
                loss = self.compute_loss(batch) / self.accum_steps
                self.scaler.scale(loss).backward()
                if (i + 1) % self.accum_steps == 0:
                    self._update()
                total += loss.item()
            self.history.append(total)

        @torch.no_grad()
        def evaluate(self):
            self.model.eval()
            total = 0.0
            for batch in self.val_loader:
                total += self.compute_loss(batch).item()
            self.model.train()
            return total

        def fit(self, epochs):
            for epoch in range(epochs):
                self.train_epoch(epoch)
                self.history.append(self.evaluate())
"""

# code -> edits [(old, new)] that introduce that rule's bug; a ``# expect`` marker in the
# new text says where the finding belongs
BROKEN = {
    "TW001": [
        (
            "                total += loss.item()",
            "                self.history.append(loss)  # expect: TW001",
        )
    ],
    "TW002": [
        ("        @torch.no_grad()\n        def evaluate", "        def evaluate"),
        (
            "            for batch in self.val_loader:",
            "            for batch in self.val_loader:  # expect: TW002",
        ),
    ],
    "TW003": [
        ("            self.optimizer.zero_grad(set_to_none=True)\n", ""),
        (
            "                    self._update()",
            "                    self._update()  # expect: TW003",
        ),
    ],
    "TW011": [
        ("            self.model.train()\n            return total", "            return total"),
        ("            self.model.train()\n            self.sampler", "            self.sampler"),
        (
            "                self.history.append(self.evaluate())",
            "                self.history.append(self.evaluate())  # expect: TW011",
        ),
    ],
    "TW012": [
        ("batch_size=16, sampler=self.sampler)", "batch_size=16, shuffle=True)  # expect: TW012")
    ],
    "TW014": [
        ("loss = self.compute_loss(batch) / self.accum_steps", "loss = self.compute_loss(batch)"),
        (
            "                self.scaler.scale(loss).backward()",
            "                self.scaler.scale(loss).backward()  # expect: TW014",
        ),
    ],
    "TW017": [
        (
            "                loss = self.compute_loss(batch) / self.accum_steps",
            "                self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-4)  # expect: TW017\n"
            "                loss = self.compute_loss(batch) / self.accum_steps",
        )
    ],
    "TW018": [
        ("            self.scheduler.step()\n", ""),
        (
            "            self.scaler.unscale_(self.optimizer)\n",
            "            self.scheduler.step()\n            self.scaler.unscale_(self.optimizer)\n",
        ),
        (
            "                    self._update()",
            "                    self._update()  # expect: TW018",
        ),
    ],
    "TW020": [
        ("            self.scaler.step(self.optimizer)\n", "            self.optimizer.step()\n"),
        (
            "                    self._update()",
            "                    self._update()  # expect: TW020",
        ),
    ],
    "TW021": [
        ("            self.sampler.set_epoch(epoch)\n", ""),
        (
            "                self.train_epoch(epoch)",
            "                self.train_epoch(epoch)  # expect: TW021",
        ),
    ],
}


def _apply(code: str) -> str:
    source = CORRECT_TRAINER
    for old, new in BROKEN[code]:
        assert source.count(old) == 1, (code, old)
        source = source.replace(old, new)
    return textwrap.dedent(source)


def _lines(source: str, code: str) -> list[int]:
    report = analyze_source(source, "trainer.py")
    return sorted(f.span.line for f in report.findings if f.code == code)


def _marked(source: str, code: str) -> list[int]:
    return [n for n, line in enumerate(source.splitlines(), 1) if f"# expect: {code}" in line]


def test_the_correct_trainer_is_quiet_for_every_rule():
    report = analyze_source(textwrap.dedent(CORRECT_TRAINER), "trainer.py")
    assert [(f.code, f.span.line) for f in report.findings] == []


@pytest.mark.parametrize("code", sorted(BROKEN))
def test_each_broken_trainer_is_reported_once_where_it_breaks(code):
    source = _apply(code)
    assert _marked(source, code), "each case marks its line"
    assert _lines(source, code) == _marked(source, code)


@pytest.mark.parametrize("code", sorted(BROKEN))
def test_each_break_reports_no_other_rule(code):
    source = _apply(code)
    report = analyze_source(source, "trainer.py")
    assert {f.code for f in report.findings} <= {code}
