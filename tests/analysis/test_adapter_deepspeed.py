"""DeepSpeed adapter (analysis/adapters/deepspeed.py).

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
