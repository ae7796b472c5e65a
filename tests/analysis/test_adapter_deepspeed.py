"""DeepSpeed adapter (analysis/effects/deepspeed.py).

Snippets follow DeepSpeed's getting-started page: ``deepspeed.initialize`` returns the
engine, optimizer, loader and scheduler; the loop calls ``model_engine(inputs)``,
``model_engine.backward(loss)`` and ``model_engine.step()`` — restated in our words. A
line a rule must report ends with ``# expect: TWxxx``.
"""

from __future__ import annotations

from test_trust_classes import assert_exact, assert_quiet

GETTING_STARTED = """
    import argparse
    import deepspeed

    def main(net, trainset, criterion):
        parser = argparse.ArgumentParser()
        parser = deepspeed.add_config_arguments(parser)
        cmd_args = parser.parse_args()
        model_engine, optimizer, trainloader, lr_scheduler = deepspeed.initialize(
            args=cmd_args, model=net, model_parameters=net.parameters(), training_data=trainset
        )
        for epoch in range(2):
            running_loss = 0.0
            for step, (inputs, labels) in enumerate(trainloader):
                inputs = inputs.to(model_engine.local_rank)
                outputs = model_engine(inputs)
                loss = criterion(outputs, labels)
                model_engine.backward(loss)
                model_engine.step()
                running_loss += loss.item()
"""

LOSS_HISTORY = GETTING_STARTED.replace(
    "                running_loss += loss.item()\n",
    "                history.append(loss)  # expect: TW001\n",
).replace("            running_loss = 0.0\n", "            history = []\n")

# micro-steps gated by hand: engine.backward divides by the configured accumulation
# steps, so the loss needs no division (a plain loop's backward would, TW014)
GATED_BY_HAND = GETTING_STARTED.replace(
    "                model_engine.step()\n",
    "                if (step + 1) % 4 == 0:\n                    model_engine.step()\n",
)


# the engine's train() switches the module it wraps back to training mode (the
# DeepSpeedExamples compression script evaluates the bare model between epochs)
ENGINE_SWITCHES_BACK = """
    import torch
    import deepspeed

    def test(model, loader):
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct

    def main(args, model, criterion, train_loader, test_loader):
        model_engine, optimizer, _, _ = deepspeed.initialize(
            args=args, model=model, model_parameters=model.parameters()
        )
        for epoch in range(3):
            for x, y in train_loader:
                model_engine.train()
                loss = criterion(model(x), y)
                model_engine.backward(loss)
                model_engine.step()
            test(model, test_loader)
"""

NOTHING_SWITCHES_BACK = ENGINE_SWITCHES_BACK.replace(
    "                model_engine.train()\n", ""
).replace(
    "            test(model, test_loader)\n",
    "            test(model, test_loader)  # expect: TW011\n",
)


def test_the_engine_train_switch_counts_as_switching_back():
    assert_quiet(ENGINE_SWITCHES_BACK, "TW011")
    assert_exact(NOTHING_SWITCHES_BACK, "TW011")


def test_the_getting_started_loop_is_clean():
    # the engine zeroes, scales the accumulated loss and steps its scheduler itself
    for code in ("TW001", "TW003", "TW012", "TW014", "TW018", "TW019"):
        assert_quiet(GETTING_STARTED, code)


def test_a_loss_kept_after_the_engine_backward_is_reported():
    assert_exact(LOSS_HISTORY, "TW001")


def test_a_gated_engine_step_needs_no_scaled_loss():
    assert "% 4" in GATED_BY_HAND
    assert_quiet(GATED_BY_HAND, "TW014")
    assert_quiet(GATED_BY_HAND, "TW003")
