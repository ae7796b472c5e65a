"""Accelerate (the library-effects table's accelerator entries, analysis/effects/library.py).

Snippets follow Accelerate's quick tour: build an ``Accelerator``, ``prepare`` the model,
optimizer, loader and scheduler, replace ``loss.backward()`` by
``accelerator.backward(loss)``, wrap micro-steps in ``with accelerator.accumulate(model):``
and collect metrics with ``gather_for_metrics`` — restated in our words. A line a rule
must report ends with ``# expect: TWxxx``.
"""

from __future__ import annotations

from test_trust_classes import assert_exact, assert_quiet

QUICK_TOUR = """
    import torch
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    def main(model, train_set, eval_set):
        accelerator = Accelerator(gradient_accumulation_steps=2)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
        train_loader = DataLoader(train_set, batch_size=16, shuffle=True)
        eval_loader = DataLoader(eval_set, batch_size=32)
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer)
        model, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(
            model, optimizer, train_loader, eval_loader, scheduler
        )
        model = torch.nn.parallel.DistributedDataParallel(model)
        for epoch in range(3):
            model.train()
            for batch in train_loader:
                with accelerator.accumulate(model):
                    inputs, targets = batch
                    loss = torch.nn.functional.cross_entropy(model(inputs), targets)
                    accelerator.backward(loss)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
            model.eval()
            predictions = []
            for inputs, targets in eval_loader:
                with torch.no_grad():
                    logits = model(inputs)
                predictions.append(accelerator.gather_for_metrics(logits.argmax(dim=-1)))
"""

LOSSES_KEPT = """
    import torch
    from accelerate import Accelerator

    def train(model, optimizer, loader):
        accelerator = Accelerator()
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        losses = []
        gathered = []
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            losses.append(loss)  # expect: TW001
            gathered.append(accelerator.gather(loss))
            accelerator.backward(loss)
            optimizer.step()
"""

NEVER_ZEROED = """
    import torch
    from accelerate import Accelerator

    def train(model, optimizer, loader):
        accelerator = Accelerator()
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for inputs, targets in loader:
            loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            accelerator.backward(loss)
            optimizer.step()  # expect: TW003
"""

# accumulation by hand with the modulo gate: accelerator.backward divides the loss by
# gradient_accumulation_steps itself
MANUAL_GATE = """
    import torch
    from accelerate import Accelerator

    def train(model, optimizer, loader, steps=4):
        accelerator = Accelerator(gradient_accumulation_steps=steps)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for i, (inputs, targets) in enumerate(loader):
            loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            accelerator.backward(loss)
            if (i + 1) % steps == 0:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
"""

UNPREPARED_LOADER_UNDER_DDP = """
    import torch
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    def train(model, optimizer, dataset):
        accelerator = Accelerator()
        model = torch.nn.parallel.DistributedDataParallel(model)
        loader = DataLoader(dataset, batch_size=8, shuffle=True)  # expect: TW012
        for inputs, targets in loader:
            optimizer.zero_grad()
            accelerator.backward(model(inputs).sum())
            optimizer.step()
"""


# Lightning Fabric has the same shape: setup, setup_dataloaders (sharded), backward
FABRIC = """
    import torch
    import lightning as L

    def run(model, dataloader, num_epochs):
        fabric = L.Fabric(accelerator="cuda", devices=8, strategy="ddp")
        fabric.launch()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        model, optimizer = fabric.setup(model, optimizer)
        model = torch.nn.parallel.DistributedDataParallel(model)
        dataloader = fabric.setup_dataloaders(dataloader)
        history = []
        for epoch in range(num_epochs):
            for batch in dataloader:
                inputs, target = batch
                optimizer.zero_grad()
                loss = torch.nn.functional.nll_loss(model(inputs), target)
                fabric.backward(loss)
                optimizer.step()
                history.append(loss)  # expect: TW001
"""


def test_fabric_loops_read_like_accelerate_ones():
    assert_exact(FABRIC, "TW001")
    for code in ("TW003", "TW012"):
        assert_quiet(FABRIC, code)
    never_zeroed = FABRIC.replace("                optimizer.zero_grad()\n", "").replace(
        "                optimizer.step()\n", "                optimizer.step()  # expect: TW003\n"
    )
    assert_exact(never_zeroed, "TW003")


def test_the_quick_tour_loop_is_clean():
    for code in ("TW001", "TW003", "TW012", "TW014", "TW018", "TW019", "TW020"):
        assert_quiet(QUICK_TOUR, code)


def test_a_loss_kept_across_steps_is_reported_and_a_gathered_one_is_not():
    assert_exact(LOSSES_KEPT, "TW001")


def test_accelerator_backward_does_not_zero_the_gradients():
    assert_exact(NEVER_ZEROED, "TW003")


def test_accelerator_backward_scales_a_gated_accumulation():
    assert_quiet(MANUAL_GATE, "TW014")
    assert_quiet(MANUAL_GATE, "TW003")


def test_a_loader_accelerate_never_prepared_still_needs_a_sampler_under_ddp():
    assert_exact(UNPREPARED_LOADER_UNDER_DDP, "TW012")
