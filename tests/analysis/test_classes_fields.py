"""Trainer state declared in the class body, and trainers the script builds and runs
(issue 15, classes).

A dataclass trainer has no ``__init__`` to read: its fields (``losses: list =
field(default_factory=list)``, ``model: nn.Module``) are what ``self`` holds, and the
constructor's arguments bind to them in order. A script that builds the trainer and
calls ``trainer.train()`` runs the trainer's own ``train`` method, not a model's mode
switch. A subclass's ``super().__init__(...)`` builds the base class's state on it.
"""

from __future__ import annotations

import textwrap

from torchward.analysis import analyze_source


def flagged(source: str, code: str) -> list[int]:
    report = analyze_source(textwrap.dedent(source), "trainer.py")
    return sorted(f.span.line for f in report.findings if f.code == code)


def marked(source: str, code: str) -> list[int]:
    lines = textwrap.dedent(source).splitlines()
    return [n for n, line in enumerate(lines, 1) if f"# expect: {code}" in line]


DATACLASS_TRAINER = """
    import torch
    import torch.nn as nn
    from collections import deque
    from dataclasses import dataclass, field
    from torch.utils.data import DataLoader

    @dataclass
    class Trainer:
        model: nn.Module
        optimizer: torch.optim.Optimizer
        loader: DataLoader
        losses: list = field(default_factory=list)
        recent: deque = field(default_factory=lambda: deque(maxlen=50))
        running: float = 0.0

        def train(self, epochs: int):
            for epoch in range(epochs):
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    loss = nn.functional.cross_entropy(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
                    self.losses.append(loss)  # expect: TW001
                    self.running += loss  # expect: TW001
"""

DATACLASS_TRAINER_LOGGING_NUMBERS = DATACLASS_TRAINER.replace(
    "self.losses.append(loss)  # expect: TW001", "self.losses.append(loss.item())"
).replace("self.running += loss  # expect: TW001", "self.running += loss.item()")


def test_dataclass_fields_are_containers_and_accumulators_on_self():
    assert flagged(DATACLASS_TRAINER, "TW001") == marked(DATACLASS_TRAINER, "TW001")


def test_dataclass_fields_holding_numbers_are_quiet():
    assert flagged(DATACLASS_TRAINER_LOGGING_NUMBERS, "TW001") == []


CLASS_ATTRIBUTE_HISTORY = """
    import torch

    class Trainer:
        history = []

        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

        def fit(self):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                self.history.append(loss)  # expect: TW001
"""


def test_a_class_attribute_container_outlives_every_iteration():
    assert flagged(CLASS_ATTRIBUTE_HISTORY, "TW001") == marked(CLASS_ATTRIBUTE_HISTORY, "TW001")


def test_a_class_attribute_container_of_numbers_is_quiet():
    numbers = CLASS_ATTRIBUTE_HISTORY.replace(
        "self.history.append(loss)  # expect: TW001", "self.history.append(loss.item())"
    )
    assert flagged(numbers, "TW001") == []


BUILT_AND_RUN_BY_THE_SCRIPT = """
    import torch
    import torch.nn as nn
    from dataclasses import dataclass
    from torch.utils.data import DataLoader
    from torch.nn.parallel import DistributedDataParallel as DDP

    @dataclass
    class Trainer:
        model: nn.Module
        optimizer: torch.optim.Optimizer
        loader: DataLoader

        def train(self, epochs: int):
            for epoch in range(epochs):
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    nn.functional.cross_entropy(self.model(x), y).backward()
                    self.optimizer.step()

    def main(dataset, rank):
        model = DDP(nn.Linear(16, 4).to(rank), device_ids=[rank])
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(dataset, batch_size=8, shuffle=True)  # expect: TW012
        trainer = Trainer(model, optimizer, loader)
        trainer.train(10)
"""

BUILT_AND_RUN_WITH_A_SAMPLER = (
    BUILT_AND_RUN_BY_THE_SCRIPT.replace(
        "batch_size=8, shuffle=True)  # expect: TW012",
        "batch_size=8, sampler=DistributedSampler(dataset))",
    )
    .replace(
        "from torch.utils.data import DataLoader",
        "from torch.utils.data import DataLoader, DistributedSampler",
    )
    .replace(
        "            for epoch in range(epochs):\n",
        "            for epoch in range(epochs):\n                self.loader.sampler.set_epoch(epoch)\n",
    )
)


def test_the_constructor_arguments_of_a_dataclass_reach_its_train_method():
    # the loader and the DDP model are only known through Trainer(model, optimizer, loader)
    assert flagged(BUILT_AND_RUN_BY_THE_SCRIPT, "TW012") == marked(
        BUILT_AND_RUN_BY_THE_SCRIPT, "TW012"
    )


def test_the_constructor_arguments_with_a_distributed_sampler_are_quiet():
    assert flagged(BUILT_AND_RUN_WITH_A_SAMPLER, "TW012") == []
    assert flagged(BUILT_AND_RUN_WITH_A_SAMPLER, "TW021") == []


KEYWORD_CONSTRUCTED_PLAIN_TRAINER = """
    import torch
    import torch.nn as nn

    class Trainer:
        def __init__(self, model, optimizer, loader):
            self.model = model
            self.optimizer = optimizer
            self.loader = loader

        def train(self):
            for x, y in self.loader:
                nn.functional.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()  # expect: TW003

    def main(loader):
        net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
        trainer = Trainer(model=net, optimizer=torch.optim.Adam(net.parameters()), loader=loader)
        trainer.train()
"""


def test_trainer_train_is_the_trainers_loop_not_a_mode_switch():
    source = KEYWORD_CONSTRUCTED_PLAIN_TRAINER
    assert flagged(source, "TW003") == marked(source, "TW003")
    report = analyze_source(textwrap.dedent(source), "trainer.py")
    (finding,) = [f for f in report.findings if f.code == "TW003"]
    # through main's call the optimizer is the torch.optim.Adam built there
    assert finding.confidence.value == "high"


# --- state the base class's __init__ builds through super().__init__ ---------------------

AMP_SUBCLASS = """
    import torch
    import torch.nn as nn

    class BaseTrainer:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            self.history = []

        def fit(self, epochs):
            for epoch in range(epochs):
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    loss = self.step(x, y)
                    self.history.append(loss)  # expect: TW001

    class AmpTrainer(BaseTrainer):
        def __init__(self, model, loader):
            super().__init__(model, loader)
            self.scaler = torch.amp.GradScaler("cuda")

        def step(self, x, y):
            with torch.autocast("cuda"):
                loss = nn.functional.mse_loss(self.model(x), y)
            self.scaler.scale(loss).backward()
            self.optimizer.step()  # expect: TW020
            self.scaler.update()
            return loss
"""


def test_super_init_builds_the_base_state_on_the_subclass_instance():
    assert flagged(AMP_SUBCLASS, "TW001") == marked(AMP_SUBCLASS, "TW001")


def test_a_loss_backpropagated_through_the_scaler_is_stored_after_its_backward():
    report = analyze_source(textwrap.dedent(AMP_SUBCLASS), "trainer.py")
    (finding,) = [f for f in report.findings if f.code == "TW001"]
    assert "after backward()" in finding.message


def test_a_bare_step_in_the_helper_is_reported_once_inside_it():
    # the helper's own trace has scale, backward and step in order; the loop calling it
    # must not report the same step again at the call
    assert flagged(AMP_SUBCLASS, "TW020") == marked(AMP_SUBCLASS, "TW020")


def test_the_subclass_stepping_through_the_scaler_is_quiet():
    fixed = AMP_SUBCLASS.replace(
        "self.optimizer.step()  # expect: TW020", "self.scaler.step(self.optimizer)"
    ).replace("self.history.append(loss)  # expect: TW001", "self.history.append(loss.item())")
    report = analyze_source(textwrap.dedent(fixed), "trainer.py")
    assert [f.code for f in report.findings] == []
