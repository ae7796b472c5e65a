"""Trainer classes analysed as one program (issue 15, classes).

What ``__init__``, ``setup()`` or a builder method puts on ``self`` is what the step
methods read; what a method called on ``self`` does (a step, a reset, a store, a mode
switch) happens at the call; a subclass's override is what the inherited loop calls.
Each snippet is a trainer written the way such classes are usually written; a line the
rule must report ends with ``# expect: TWxxx``.
"""

from __future__ import annotations

import textwrap

from torchward.analysis import Severity, analyze_source


def findings(source: str, code: str):
    report = analyze_source(textwrap.dedent(source), "trainer.py")
    return [f for f in report.findings if f.code == code]


def flagged(source: str, code: str) -> list[int]:
    return sorted(f.span.line for f in findings(source, code))


def expected(source: str, code: str) -> list[int]:
    marker = f"# expect: {code}"
    lines = textwrap.dedent(source).splitlines()
    return [number for number, line in enumerate(lines, 1) if marker in line]


def assert_reported(source: str, code: str) -> None:
    want = expected(source, code)
    assert want, "a positive snippet needs an `# expect:` marker"
    assert flagged(source, code) == want


def assert_quiet(source: str, code: str) -> None:
    assert flagged(source, code) == []


# --- attributes built by setup(), not __init__ -------------------------------------------

BUILT_IN_SETUP = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader
    from torch.nn.parallel import DistributedDataParallel as DDP

    class Trainer:
        def __init__(self, cfg):
            self.cfg = cfg

        def setup(self):
            self.model = DDP(nn.Linear(32, 4).cuda())
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
            self.loader = DataLoader(self.cfg.dataset, batch_size=64, shuffle=True)  # expect: TW012
            self.criterion = nn.CrossEntropyLoss()

        def fit(self):
            self.setup()
            for epoch in range(self.cfg.epochs):
                for x, y in self.loader:
                    loss = self.criterion(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()  # expect: TW003
"""

BUILT_IN_SETUP_CORRECTLY = (
    BUILT_IN_SETUP.replace("  # expect: TW012", "")
    .replace("  # expect: TW003", "")
    .replace(
        "batch_size=64, shuffle=True)",
        "batch_size=64, sampler=DistributedSampler(self.cfg.dataset))",
    )
    .replace(
        "from torch.utils.data import DataLoader",
        "from torch.utils.data import DataLoader\n    from torch.utils.data.distributed import DistributedSampler",
    )
    .replace(
        "                    loss = self.criterion",
        "                    self.optimizer.zero_grad()\n                    loss = self.criterion",
    )
)


def test_attributes_built_by_a_setup_method_reach_the_loop():
    assert_reported(BUILT_IN_SETUP, "TW012")
    assert_reported(BUILT_IN_SETUP, "TW003")


def test_attributes_built_by_setup_used_correctly_are_quiet():
    assert "set_epoch" not in BUILT_IN_SETUP_CORRECTLY  # the sampler part is not TW021's
    assert_quiet(BUILT_IN_SETUP_CORRECTLY, "TW012")
    assert_quiet(BUILT_IN_SETUP_CORRECTLY, "TW003")


def test_a_setup_method_the_caller_runs_first_builds_what_the_entry_point_reads():
    # ``fit`` is called by another module, after ``trainer.setup()``: what setup builds
    # is what the loop sees, even when nothing in this file calls it
    called_elsewhere = BUILT_IN_SETUP.replace("            self.setup()\n", "")
    assert_reported(called_elsewhere, "TW012")


def test_a_builder_nobody_calls_is_not_assumed_to_run():
    never_called = BUILT_IN_SETUP.replace("            self.setup()\n", "").replace(
        "def setup(self):", "def rebuild(self):"
    )
    assert_quiet(never_called, "TW012")


BUILT_BY_A_HELPER_OF_INIT = """
    import torch

    class Trainer:
        def __init__(self, model, loader, epochs):
            self.model = model
            self.loader = loader
            self.epochs = epochs
            self._build_optimization()

        def _build_optimization(self):
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
            self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=30)

        def train(self):
            for epoch in range(self.epochs):
                self.scheduler.step()  # expect: TW018
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(self.model(x), y).backward()
                    self.optimizer.step()
"""

BUILT_BY_A_HELPER_OF_INIT_IN_ORDER = BUILT_BY_A_HELPER_OF_INIT.replace(
    "                self.scheduler.step()  # expect: TW018\n", ""
).replace(
    "                    self.optimizer.step()\n",
    "                    self.optimizer.step()\n                self.scheduler.step()\n",
)


def test_attributes_a_helper_of_init_builds_are_known():
    assert_reported(BUILT_BY_A_HELPER_OF_INIT, "TW018")


def test_scheduler_built_by_a_helper_stepped_after_the_epoch_is_quiet():
    assert_quiet(BUILT_BY_A_HELPER_OF_INIT_IN_ORDER, "TW018")


# --- containers that live on self ------------------------------------------------------------

HISTORY_ON_THE_TRAINER = """
    import torch
    import torch.nn as nn

    class Trainer:
        def __init__(self, model, loader):
            self.model = model.cuda()
            self.loader = loader
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=3e-4)
            self.criterion = nn.MSELoss()
            self.epoch_loss = 0.0
            self.losses = []

        def train_epoch(self):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                loss = self.criterion(self.model(x.cuda()), y.cuda())
                loss.backward()
                self.optimizer.step()
                self.epoch_loss += loss  # expect: TW001
                self.losses.append(loss)  # expect: TW001
"""

HISTORY_ON_THE_TRAINER_AS_NUMBERS = HISTORY_ON_THE_TRAINER.replace(
    "self.epoch_loss += loss  # expect: TW001", "self.epoch_loss += loss.item()"
).replace("self.losses.append(loss)  # expect: TW001", "self.losses.append(loss.detach())")

WINDOW_RESET_EACH_EPOCH = """
    import torch

    class Trainer:
        def __init__(self, model, loader, optimizer):
            self.model = model
            self.loader = loader
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def start_epoch(self):
            self.window = []

        def fit(self, epochs):
            for epoch in range(epochs):
                self.start_epoch()
                for x, y in self.loader:
                    self.optimizer.zero_grad()
                    loss = torch.nn.functional.l1_loss(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
                    self.window.append(loss)  # expect: TW001
"""

PARTS_RESET_EACH_STEP = """
    import torch

    class Trainer:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def start_step(self):
            self.terms = []

        def fit(self):
            for x, y in self.loader:
                self.start_step()
                self.optimizer.zero_grad()
                out = self.model(x)
                self.terms.append(torch.nn.functional.l1_loss(out, y))
                self.terms.append(out.pow(2).mean())
                sum(self.terms).backward()
                self.optimizer.step()
"""


def test_stores_into_containers_on_self_outlive_the_iteration():
    assert_reported(HISTORY_ON_THE_TRAINER, "TW001")


def test_numbers_and_detached_tensors_on_self_are_quiet():
    assert_quiet(HISTORY_ON_THE_TRAINER_AS_NUMBERS, "TW001")


def test_a_container_a_method_creates_once_per_epoch_outlives_the_batch():
    assert_reported(WINDOW_RESET_EACH_EPOCH, "TW001")


def test_a_container_a_method_creates_every_step_does_not_outlive_it():
    assert_quiet(PARTS_RESET_EACH_STEP, "TW001")


# --- a subclass overriding the step ------------------------------------------------------------

OVERRIDDEN_STEP = """
    import torch
    import torch.nn.functional as F

    class BaseTrainer:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.optimizer = torch.optim.AdamW(model.parameters())
            self.seen = []

        def training_step(self, batch):
            raise NotImplementedError

        def fit(self, epochs):
            for epoch in range(epochs):
                for batch in self.loader:
                    self.optimizer.zero_grad()
                    loss = self.training_step(batch)
                    loss.backward()
                    self.optimizer.step()

    class ClassifierTrainer(BaseTrainer):
        def training_step(self, batch):
            images, labels = batch
            loss = F.cross_entropy(self.model(images), labels)
            self.seen.append(loss)  # expect: TW001
            return loss
"""

OVERRIDDEN_STEP_LOGGING_NUMBERS = OVERRIDDEN_STEP.replace(
    "self.seen.append(loss)  # expect: TW001", "self.seen.append(loss.item())"
)

OVERRIDDEN_INIT_WITHOUT_RESET = """
    import torch

    class BaseTrainer:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.build()

        def build(self):
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

        def fit(self):
            for x, y in self.loader:
                self.before_step()
                torch.nn.functional.mse_loss(self.model(x), y).backward()
                self.optimizer.step()  # expect: TW003

        def before_step(self):
            self.optimizer.zero_grad()

    class NoResetTrainer(BaseTrainer):
        def before_step(self):
            pass
"""


def test_the_inherited_loop_calls_the_subclass_override():
    assert_reported(OVERRIDDEN_STEP, "TW001")
    assert_reported(OVERRIDDEN_INIT_WITHOUT_RESET, "TW003")


def test_an_override_that_stores_numbers_is_quiet():
    assert_quiet(OVERRIDDEN_STEP_LOGGING_NUMBERS, "TW001")


def test_the_base_class_alone_is_quiet():
    base_only = OVERRIDDEN_INIT_WITHOUT_RESET.split("    class NoResetTrainer")[0]
    assert_quiet(base_only, "TW003")


# --- mode switches through methods -------------------------------------------------------------

EVALUATE_LEAVES_EVAL = """
    import torch
    import torch.nn as nn

    class Trainer:
        def __init__(self, model, train_loader, val_loader):
            self.model = model
            self.train_loader = train_loader
            self.val_loader = val_loader
            self.optimizer = torch.optim.Adam(model.parameters())
            self.criterion = nn.CrossEntropyLoss()

        def train_epoch(self):
            for x, y in self.train_loader:
                self.optimizer.zero_grad()
                self.criterion(self.model(x), y).backward()
                self.optimizer.step()

        @torch.no_grad()
        def evaluate(self):
            self.model.eval()
            return sum(self.criterion(self.model(x), y).item() for x, y in self.val_loader)

        def train(self, epochs):
            for epoch in range(epochs):
                self.train_epoch()
                self.evaluate()  # expect: TW011
"""

EVALUATE_THEN_TRAIN_MODE = EVALUATE_LEAVES_EVAL.replace("  # expect: TW011", "").replace(
    "        def train_epoch(self):\n",
    "        def train_epoch(self):\n            self.model.train()\n",
)


def test_evaluation_method_leaving_eval_mode_is_reported_at_its_call():
    assert_reported(EVALUATE_LEAVES_EVAL, "TW011")


def test_train_epoch_that_switches_back_is_quiet():
    assert_quiet(EVALUATE_THEN_TRAIN_MODE, "TW011")


def test_class_findings_keep_their_severity():
    (finding,) = findings(HISTORY_ON_THE_TRAINER, "TW001")[:1]
    assert finding.severity in (Severity.ERROR, Severity.WARNING)
