"""Mixed precision (the library-effects table's scaler entries): ``GradScaler`` in every spelling.

Snippets follow PyTorch's AMP recipe: ``scaler.scale(loss).backward()``, then
``scaler.unscale_(optimizer)`` before clipping, ``scaler.step(optimizer)`` and
``scaler.update()``, under ``torch.autocast`` — with the scaler imported from
``torch.amp``, ``torch.cuda.amp`` or ``torch``; restated in our words. A line a rule must
report ends with ``# expect: TWxxx``.
"""

from __future__ import annotations

import pytest
from test_trust_classes import assert_exact, assert_quiet

RECIPE = """
    import torch

    def train(net, loader, opt, loss_fn, epochs):
        scaler = torch.amp.GradScaler("cuda")
        for epoch in range(epochs):
            for inputs, target in loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    output = net(inputs)
                    loss = loss_fn(output, target)
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
"""

BARE_STEP = RECIPE.replace(
    "                scaler.step(opt)\n", "                opt.step()  # expect: TW020\n"
)

SPELLINGS = (
    ("import torch\n", "import torch\n    from torch.cuda.amp import GradScaler, autocast\n"),
    ("import torch\n", "import torch\n    from torch.amp import GradScaler\n"),
    ("import torch\n", "import torch\n    from torch import GradScaler\n"),
)


@pytest.mark.parametrize(("old", "new"), SPELLINGS)
def test_every_spelling_of_the_scaler_is_one_scaler(old, new):
    recipe = RECIPE.replace(old, new, 1).replace('torch.amp.GradScaler("cuda")', "GradScaler()")
    bare = BARE_STEP.replace(old, new, 1).replace('torch.amp.GradScaler("cuda")', "GradScaler()")
    assert "GradScaler()" in recipe
    assert_quiet(recipe, "TW020")
    assert_quiet(recipe, "TW003")
    assert_exact(bare, "TW020")


def test_the_recipe_is_clean_and_a_bare_step_is_reported():
    assert_quiet(RECIPE, "TW020")
    assert_exact(BARE_STEP, "TW020")


def test_a_scaler_step_is_the_optimizer_step_for_zeroing():
    never_zeroed = RECIPE.replace("                opt.zero_grad(set_to_none=True)\n", "").replace(
        "                scaler.step(opt)\n", "                scaler.step(opt)  # expect: TW003\n"
    )
    assert_exact(never_zeroed, "TW003")
