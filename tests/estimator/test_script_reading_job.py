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


# --- the memo: a read is reused until an edit touches what the job depends on ---------


class _CountingReads:
    def __init__(self, monkeypatch):
        from torchward.analysis import runconfig, runconfig_memo

        runconfig_memo.forget()
        self.count = 0
        read = runconfig._read

        def counted(*args):
            self.count += 1
            return read(*args)

        monkeypatch.setattr(runconfig, "_read", counted)


def test_a_number_typed_in_an_unused_function_is_not_read_again(monkeypatch):
    reads = _CountingReads(monkeypatch)
    first = _values(_LAUNCHED)
    edited = _values(_LAUNCHED.replace("batch_size=256", "batch_size=2561"))
    assert reads.count == 1
    assert first == edited and edited["batch_size"] == 24


def test_an_edit_in_the_job_is_read_again(monkeypatch):
    reads = _CountingReads(monkeypatch)
    assert _values(_LAUNCHED)["batch_size"] == 24
    assert _values(_LAUNCHED.replace("batch_size=24", "batch_size=48"))["batch_size"] == 48
    assert reads.count == 2


def test_naming_the_unused_function_is_read_again(monkeypatch):
    reads = _CountingReads(monkeypatch)
    assert _values(_LAUNCHED)["batch_size"] == 24
    # an edit inside the unused function that names another function changes what is
    # unused: a word, not a number
    renamed = _LAUNCHED.replace("    # kept for reference; nothing calls it\n", "    main\n")
    assert _values(renamed)["batch_size"] == 24
    assert reads.count == 2
    called = _LAUNCHED.replace("    main()\n", "    main()\n    sweep_job(range(10))\n")
    assert _values(called)["batch_size"] in (24, 256)
    assert reads.count == 3


def test_a_config_file_the_job_reads_is_checked_again(monkeypatch, tmp_path):
    reads = _CountingReads(monkeypatch)
    config = tmp_path / "cfg.json"
    config.write_text('{"batch_size": 12}')
    script = (
        "import json, torch\nfrom torch.utils.data import DataLoader\n"
        "from torchvision.models import resnet18\n"
        "def main():\n"
        "    cfg = json.load(open('cfg.json'))\n"
        "    model = resnet18().cuda()\n"
        "    opt = torch.optim.AdamW(model.parameters())\n"
        "    for x in DataLoader(range(9), batch_size=cfg['batch_size']):\n"
        "        model(x).sum().backward()\n        opt.step()\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    path = str(tmp_path / "train.py")
    assert _values(script, path)["batch_size"] == 12
    assert _values(script, path)["batch_size"] == 12
    assert reads.count == 1
    config.write_text('{"batch_size": 7}')
    import os

    os.utime(config, ns=(10**18, 10**18))  # a later modification time, whatever the clock
    assert _values(script, path)["batch_size"] == 7
    assert reads.count == 2
