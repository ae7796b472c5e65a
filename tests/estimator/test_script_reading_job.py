"""Script reading, issue 26: the job is the training path a plain launch reaches from the
script's entry — values of other entry points and unused helpers never leak into it."""

from __future__ import annotations

import pytest
from torchward.analysis.job.runconfig import read_source


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
        from torchward.analysis.job import runconfig, runconfig_memo

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


def test_a_statement_typed_in_an_unused_function_is_not_read_again(monkeypatch):
    reads = _CountingReads(monkeypatch)
    assert _values(_LAUNCHED)["batch_size"] == 24
    # what an unused function says, even naming another function, keeps nothing in use
    typed = _LAUNCHED.replace(
        "    # kept for reference; nothing calls it\n", "    total_steps = main\n"
    )
    assert _values(typed)["batch_size"] == 24
    assert reads.count == 1


def test_using_the_unused_function_is_read_again(monkeypatch):
    reads = _CountingReads(monkeypatch)
    assert _values(_LAUNCHED)["batch_size"] == 24
    called = _LAUNCHED.replace("    main()\n", "    main()\n    sweep_job(range(10))\n")
    assert _values(called)["batch_size"] in (24, 256)
    assert _values(called)["optimizer"] in ("adamw", "sgd-momentum")
    assert reads.count == 2
    # a line added inside it moves what follows: read again, at the new lines
    longer = _LAUNCHED.replace(
        "    # kept for reference; nothing calls it\n", "    # kept\n    # for reference\n"
    )
    before, _ = read_source(_LAUNCHED, "train.py")
    after, _ = read_source(longer, "train.py")
    assert reads.count == 3
    assert before.batch_size is not None and after.batch_size is not None
    line = int(before.batch_size.source.rsplit(":", 1)[1])
    assert after.batch_size.source == f"train.py:{line + 1}"


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


# --- argparse's set_defaults, read once: the reader's flags are the engine's parser ----

_PARSER_HEAD = "import argparse, torch\nfrom transformers import AutoModelForCausalLM\n"
_PARSER_TAIL = """
def main():
    args = get_args()
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    opt = torch.optim.AdamW(model.parameters())
    loader = torch.utils.data.DataLoader(range(64), batch_size=args.batch_size)
    for x in loader:
        model(x).loss.backward()
        opt.step()

if __name__ == "__main__":
    main()
"""

_PARSERS = {
    "set after the flag": (
        "def get_args():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--seq_len', type=int, default=512)\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n"
        "    p.set_defaults(seq_len=1024, batch_size=6)\n    return p.parse_args()\n",
        1024,
        6,
    ),
    "set before a flag without a default": (
        "def get_args():\n    p = argparse.ArgumentParser()\n"
        "    p.set_defaults(seq_len=1024)\n    p.add_argument('--seq_len', type=int)\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n    return p.parse_args()\n",
        1024,
        4,
    ),
    "set before a flag with its own default (argparse keeps the flag's)": (
        "def get_args():\n    p = argparse.ArgumentParser()\n"
        "    p.set_defaults(seq_len=1024)\n"
        "    p.add_argument('--seq_len', type=int, default=512)\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n    return p.parse_args()\n",
        512,
        4,
    ),
    "set on a parent parser": (
        "def get_args():\n    base = argparse.ArgumentParser(add_help=False)\n"
        "    base.add_argument('--seq_len', type=int, default=512)\n"
        "    base.set_defaults(seq_len=1024)\n"
        "    p = argparse.ArgumentParser(parents=[base])\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n    return p.parse_args()\n",
        1024,
        4,
    ),
    "set on the child for a parent's flag": (
        "def get_args():\n    base = argparse.ArgumentParser(add_help=False)\n"
        "    base.add_argument('--seq_len', type=int, default=512)\n"
        "    p = argparse.ArgumentParser(parents=[base])\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n"
        "    p.set_defaults(seq_len=1024)\n    return p.parse_args()\n",
        1024,
        4,
    ),
    "parse_known_args": (
        "def get_args():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--seq_len', type=int, default=512)\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n"
        "    p.set_defaults(seq_len=1024)\n    args, _ = p.parse_known_args()\n    return args\n",
        1024,
        4,
    ),
    "a dict unpacked": (
        "DEFAULTS = {'seq_len': 1024, 'batch_size': 2}\n"
        "def get_args():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--seq_len', type=int, default=512)\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n"
        "    p.set_defaults(**DEFAULTS)\n    return p.parse_args()\n",
        1024,
        2,
    ),
    "a module-level parser": (
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--seq_len', type=int, default=512)\n"
        "parser.add_argument('--batch_size', type=int, default=4)\n"
        "parser.set_defaults(seq_len=1024)\n"
        "def get_args():\n    return parser.parse_args()\n",
        1024,
        4,
    ),
}


@pytest.mark.parametrize("case", list(_PARSERS))
def test_set_defaults_as_argparse_applies_it(case):
    declared, seq_len, batch = _PARSERS[case]
    values = _values(_PARSER_HEAD + declared + _PARSER_TAIL)
    assert values.get("seq_len") == seq_len
    assert values["batch_size"] == batch  # through the loader: the engine's fold


def test_set_defaults_from_a_mapping_nobody_can_read_leaves_the_flags_unknown():
    declared = (
        "def get_args(config):\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--seq_len', type=int, default=512)\n"
        "    p.add_argument('--batch_size', type=int, default=4)\n"
        "    p.set_defaults(**vars(config))\n    return p.parse_args()\n"
    )
    source = _PARSER_HEAD + declared + _PARSER_TAIL.replace("get_args()", "get_args(load())")
    values = _values(source)
    assert values.get("seq_len") is None
    assert values.get("batch_size") != 4


# --- branches under the defaults: a library dataclass's fields decide its gates --------

_HF_GATED = """
import torch
from dataclasses import dataclass, field
from transformers import HfArgumentParser, AutoModelForCausalLM, Trainer
from {module} import {arguments}

@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")

def main():
    parser = HfArgumentParser((ModelArguments, {arguments}))
    model_args, training_args = parser.parse_args_into_dataclasses()
    dtype = torch.float32
    if training_args.bf16:
        dtype = torch.bfloat16
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype=dtype)
    if training_args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    Trainer(model=model, args=training_args).train()

if __name__ == "__main__":
    main()
"""


def test_a_flag_a_library_dataclass_leaves_off_keeps_its_branch_off():
    values = _values(_HF_GATED.format(module="transformers", arguments="TrainingArguments"))
    assert values.get("checkpointing") is not True
    assert values["dtype"] == "fp32"


def test_a_flag_a_library_dataclass_turns_on_runs_its_branch():
    # TRL's SFTConfig checkpoints by default: the gated call is the job's
    values = _values(_HF_GATED.format(module="trl", arguments="SFTConfig"))
    assert values["checkpointing"] is True


def test_training_arguments_built_in_the_script_decide_their_gates():
    source = (
        "import torch\nfrom transformers import AutoModelForCausalLM, TrainingArguments, Trainer\n"
        "def main():\n"
        "    args = TrainingArguments(output_dir='out', per_device_train_batch_size=2)\n"
        "    model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "    if args.gradient_checkpointing:\n        model.gradient_checkpointing_enable()\n"
        "    Trainer(model=model, args=args).train()\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    values = _values(source)
    assert values.get("checkpointing") is not True
    assert values["batch_size"] == 2
    turned_on = source.replace("per_device_train_batch_size=2", "gradient_checkpointing=True")
    assert _values(turned_on)["checkpointing"] is True


# --- imports: a config dataclass and a model from the script's sibling module ----------

_MODEL_FILE = """
from dataclasses import dataclass
import torch.nn as nn

@dataclass
class GPTConfig:
    vocab_size: int = 50304
    n_layer: int = 12
    n_embd: int = 768

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.mix = nn.Linear(config.n_embd, config.n_embd)

class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
"""

_TRAIN_FILE = """
import torch
{imports}

model_args = dict(n_layer=2, n_embd=8, vocab_size=None)
model_args["vocab_size"] = 100
model = GPT(GPTConfig(**model_args))
optimizer = torch.optim.AdamW(model.parameters())
for step in range(10):
    model(torch.zeros(4, 16, dtype=torch.long)).sum().backward()
    optimizer.step()
"""


@pytest.mark.parametrize(
    "imports", ["from model import *", "from model import GPTConfig, GPT", "from .model import *"]
)
def test_a_model_and_its_config_dataclass_from_a_sibling_module(tmp_path, imports):
    (tmp_path / "model.py").write_text(_MODEL_FILE)
    (tmp_path / "train.py").write_text(_TRAIN_FILE.format(imports=imports))
    from torchward.analysis.job.runconfig import read_script

    config, _notes = read_script(str(tmp_path / "train.py"))
    assert config.model is not None and config.model.value == "GPT"
    # embedding 100 x 8, two 8 x 8 + 8 blocks, head 8 x 100: the config's fields, the
    # script's **dict over the dataclass's defaults
    assert config.params is not None and config.params.value == 800 + 2 * 72 + 800


# --- the training step in another module of the project: its autocast is the job's ----

_ENGINE = """
import torch

def train_one_epoch(model, loader, optimizer, amp=True):
    model.train()
    for x, y in loader:
        with {autocast}:
            loss = model(x).sum()
        loss.backward()
        optimizer.step()

@torch.no_grad()
def evaluate(model, loader):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            model(x)
"""

_MAIN = """
import torch
import torchvision
{imports}

def main():
    model = torchvision.models.resnet18().cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    loader = torch.utils.data.DataLoader(range(10), batch_size=32)
    for epoch in range(3):
        {prefix}train_one_epoch(model, loader, optimizer)
        {prefix}evaluate(model, loader)

if __name__ == "__main__":
    main()
"""


def _read_project(tmp_path, autocast: str, style: str) -> dict:
    from torchward.analysis.job.runconfig import read_script

    imports, prefix = (
        ("from engine import train_one_epoch, evaluate", "")
        if style == "names"
        else ("import engine", "engine.")
    )
    (tmp_path / "engine.py").write_text(_ENGINE.format(autocast=autocast))
    (tmp_path / "main.py").write_text(_MAIN.format(imports=imports, prefix=prefix))
    config, _notes = read_script(str(tmp_path / "main.py"))
    return dict(config.fields())


@pytest.mark.parametrize("style", ["names", "module"])
def test_an_autocast_in_the_called_training_step_is_the_jobs_precision(tmp_path, style):
    fields = _read_project(tmp_path, "torch.cuda.amp.autocast()", style)
    assert fields["dtype"].value == "amp-fp16"
    assert "engine.py:7" in fields["dtype"].source
    fields = _read_project(tmp_path, 'torch.autocast("cuda", dtype=torch.bfloat16)', style)
    assert fields["dtype"].value == "amp-bf16"


def test_an_autocast_the_caller_decides_or_only_evaluation_enters_says_nothing(tmp_path):
    # enabled by a parameter: the caller's value, not read as amp
    fields = _read_project(tmp_path, "torch.cuda.amp.autocast(enabled=amp)", "names")
    assert fields["dtype"].value == "fp32" or fields["dtype"].confidence == "low"
    # only the evaluation function casts to bf16: the training job stays fp32
    fields = _read_project(tmp_path, "torch.enable_grad()", "names")
    assert fields["dtype"].value == "fp32"


def test_a_job_that_trains_then_samples_is_a_training_job():
    # the training loop lives in a module the reader does not see: only the call says so
    source = (
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "from previous_chapters import train_model_simple\n"
        "def main():\n"
        "    model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "    optimizer = torch.optim.AdamW(model.parameters())\n"
        "    loader = torch.utils.data.DataLoader(range(8), batch_size=4)\n"
        "    train_model_simple(model, loader, optimizer)\n"
        "    print(model.generate(torch.zeros(1, 4, dtype=torch.long), max_new_tokens=32))\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    assert _values(source)["mode"] == "train"
    sampling_only = source.replace("    train_model_simple(model, loader, optimizer)\n", "")
    assert _values(sampling_only)["mode"] == "generate"


def test_a_deepspeed_config_without_a_micro_batch_and_its_optimizer():
    source = (
        "import deepspeed, torch, torchvision\n"
        "def main():\n"
        "    model = torchvision.models.resnet18()\n"
        "    config = {'train_batch_size': 16, 'gradient_accumulation_steps': 2,\n"
        "              'optimizer': {'type': 'Adam', 'params': {'lr': 0.001}}}\n"
        "    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config,\n"
        "                                                   model_parameters=model.parameters())\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    values = _values(source)
    assert values["batch_size"] == 8  # 16 over 2 accumulation steps on one GPU
    assert values["optimizer"] == "adam"
    assert values["accumulation"] == 2


@pytest.mark.parametrize(
    "main",
    [
        "    args = get_argument_parser().parse_args()\n",
        "    parser = argparse.ArgumentParser('x', parents=[get_argument_parser()])\n"
        "    args = parser.parse_args()\n",
    ],
)
def test_a_parser_a_sibling_module_builds_and_returns(tmp_path, main):
    from torchward.analysis.job.runconfig import read_script

    (tmp_path / "options.py").write_text(
        "import argparse\n"
        "def get_argument_parser():\n"
        "    parser = argparse.ArgumentParser(add_help=False)\n"
        "    parser.add_argument('--batchSize', type=int, default=48)\n"
        "    return parser\n"
    )
    (tmp_path / "train.py").write_text(
        "import argparse, torch, torchvision\nfrom options import get_argument_parser\n"
        "def main():\n" + main + "    model = torchvision.models.resnet18()\n"
        "    opt = torch.optim.Adam(model.parameters())\n"
        "    for x in torch.utils.data.DataLoader(range(9), batch_size=args.batchSize):\n"
        "        model(x).sum().backward()\n        opt.step()\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    config, _notes = read_script(str(tmp_path / "train.py"))
    assert config.batch_size is not None and config.batch_size.value == 48


def test_what_an_off_flag_guards_is_named_as_an_alternative():
    config, notes = read_source(
        _HF_GATED.format(module="transformers", arguments="TrainingArguments"), "train.py"
    )
    assert config.checkpointing is None or config.checkpointing.value is not True
    named = [n for n in notes if "gradient checkpointing" in n]
    assert len(named) == 1 and "train.py:19" in named[0] and "--checkpointing" in named[0]
    # on by default (TRL): the job's, no alternative to name
    _config, notes = read_source(_HF_GATED.format(module="trl", arguments="SFTConfig"), "t.py")
    assert not [n for n in notes if "gradient checkpointing" in n]
