"""``torchward.guard``: one step of the live model measured before training (needs torch)."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip(
    "torch",
    reason="torch is the profile extra's dependency (pip install 'torchward[profile]'); "
    "not installed in this environment",
)

from torchward.guard import VRAMError, VRAMGuard, check_vram  # noqa: E402
from torchward.profile.request import ModelRecipe, ProfileJob  # noqa: E402
from torchward.profile.worker import measure  # noqa: E402

from .models import TINY_GPT  # noqa: E402


@pytest.fixture
def gpt(tmp_path, monkeypatch):
    (tmp_path / "gpt.py").write_text(TINY_GPT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import gpt

    yield gpt
    sys.modules.pop("gpt", None)


def test_the_guard_projects_what_a_real_step_of_the_live_model_holds(gpt):
    model = gpt.make_gpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    report = check_vram(model, optimizer, (2, 64))
    real = measure(
        ModelRecipe(kind="factory", target="gpt.py:make_gpt", label="gpt"),
        ProfileJob(batch_size=2, seq_len=64),
        device="cpu",
        fake=False,
    )
    assert report.projected_allocated == real.allocated_bytes
    assert report.peak_phase == real.peak_phase
    assert report.available is None and report.verdict is None  # a CPU model: no device limit
    # the live model and optimizer are untouched: no gradients, no state, same weights
    assert all(p.grad is None for p in model.parameters())
    assert len(optimizer.state) == 0


def test_inference_without_an_optimizer_projects_less(gpt):
    model = gpt.make_gpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train = check_vram(model, optimizer, (2, 64))
    infer = check_vram(model, None, (2, 64))
    assert infer.projected_allocated < train.projected_allocated
    assert infer.peak_phase == "forward"


def test_it_raises_only_when_it_cannot_fit_unless_strict(gpt):
    model = gpt.make_gpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    report = check_vram(model, optimizer, (2, 64))
    with pytest.raises(VRAMError, match="cannot fit") as caught:
        check_vram(model, optimizer, (2, 64), available_bytes=report.projected_low - 1)
    assert caught.value.report.verdict == "oom"
    between = (report.projected_low + report.projected_high) // 2
    tight = check_vram(model, optimizer, (2, 64), available_bytes=between)
    assert tight.verdict == "tight"  # likely to fail, but not certain: a warning, not an error
    with pytest.raises(VRAMError, match="strict"):
        check_vram(model, optimizer, (2, 64), available_bytes=between, strict=True)
    roomy = check_vram(model, optimizer, (2, 64), available_bytes=10 * report.projected_high)
    assert roomy.verdict == "fits"


def test_the_context_manager_reports_and_accepts_an_example_batch(gpt):
    model = gpt.make_gpt()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    lines = []
    example = torch.randint(0, 512, (2, 64))
    with VRAMGuard(model, optimizer, example_inputs=(example, example), report=lines.append):
        pass
    assert len(lines) == 1 and "projected peak" in lines[0]
    shaped = check_vram(model, optimizer, (2, 64))
    from_example = check_vram(model, optimizer, example_inputs=(example, example))
    # the example passes targets, so the model computes its own loss: the same step
    assert abs(from_example.projected_allocated - shaped.projected_allocated) < 0.05 * (
        shaped.projected_allocated
    )
