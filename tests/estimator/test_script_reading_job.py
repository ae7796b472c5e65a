"""Script reading, issue 26: the job is the training path a plain launch reaches from the
script's entry — values of other entry points and unused helpers never leak into it."""

from __future__ import annotations

from torchward.analysis.runconfig import read_source


def _values(source: str, path: str = "train.py") -> dict:
    config, _notes = read_source(source, path)
    return {name: field.value for name, field in config.fields()}


_LAUNCHED = """
import torch
from torch.utils.data import DataLoader
from torchvision.models import resnet18

def sweep_job(dataset):
    # kept for reference; nothing calls it
    model = resnet18().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(dataset, batch_size=256)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        for x, y in loader:
            model(x).sum().backward()
            opt.step()

def main():
    model = resnet18().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(range(100), batch_size=24)
    for x, y in loader:
        model(x).sum().backward()
        opt.step()

if __name__ == "__main__":
    main()
"""


def test_a_function_nothing_names_is_not_the_job():
    values = _values(_LAUNCHED)
    assert values["batch_size"] == 24
    assert values["optimizer"] == "adamw"
    assert values["dtype"] == "fp32"


def test_a_function_the_launch_names_is_the_job():
    # the same helper, now called from the entry: its values are the job's
    called = _LAUNCHED.replace("    main()\n", "    sweep_job(range(10))\n")
    values = _values(called)
    assert values["batch_size"] == 256
    assert values["optimizer"] == "sgd-momentum"
    assert values["dtype"] == "amp-bf16"


def test_without_a_main_guard_every_function_may_be_the_entry():
    # a module a framework drives (no ``__main__`` block): nothing is left out
    library = _LAUNCHED.split('if __name__ == "__main__":')[0].replace("def main", "def other")
    values = _values(library)
    assert values.get("batch_size") in (24, 256)


def test_a_function_passed_as_a_callback_still_counts():
    passed = _LAUNCHED.replace("    main()\n", "    run = [main, sweep_job]\n    run[0]()\n")
    values = _values(passed)
    # both are named: neither is left out (the reader cannot tell which one runs)
    assert "optimizer" in values
