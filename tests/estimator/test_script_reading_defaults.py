"""Script reading: sizes kept outside the flags' own declarations.

A training script may keep its flags' defaults in a dict it builds, then extend it with
a function of its package that returns more (``defaults.update(model_defaults())``) and
hand the whole dict to a helper that declares one flag per key. The function's dict is
read as data — only values written as literals — so every default survives the update.
A ``Dataset`` class the script defines may pad or cut its examples to a length it is
built with: the training set's length is the job's sequence length.
"""

from __future__ import annotations

from torchward.analysis.job.runconfig import read_script, read_source

_DEFAULTS = '''\
def shape_defaults():
    """What the model is built with."""
    return dict(image_size=96, channels=64, attention="16,8", use_checkpoint=False)


def derived_defaults():
    found = shape_defaults()
    found["image_size"] = 192
    return found
'''

_SCRIPT = """\
import argparse
import torch
from pkg.defaults import {function}
from pkg.flags import add_dict_to_argparser


def parser_of():
    defaults = dict(batch_size=6, lr=1e-4)
    defaults.update({function}())
    parser = argparse.ArgumentParser()
    add_dict_to_argparser(parser, defaults)
    return parser


def main():
    args = parser_of().parse_args()
    model = build(args.image_size)
    opt = torch.optim.AdamW(model.parameters())
    for x in torch.utils.data.DataLoader(data(args.image_size), batch_size=args.batch_size):
        model(x).mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""

_FLAGS = """\
def add_dict_to_argparser(parser, default_dict):
    for k, v in default_dict.items():
        parser.add_argument(f"--{k}", default=v, type=type(v))
"""


def _project(tmp_path, function: str) -> str:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "defaults.py").write_text(_DEFAULTS)
    (tmp_path / "pkg" / "flags.py").write_text(_FLAGS)
    (tmp_path / "train.py").write_text(_SCRIPT.format(function=function))
    return str(tmp_path / "train.py")


def test_a_defaults_function_of_the_package_extends_the_flags(tmp_path):
    config, _ = read_script(_project(tmp_path, "shape_defaults"))
    assert config.batch_size is not None and config.batch_size.value == 6
    assert config.batch_size.confidence == "medium"  # a flag's default: a launch overrides
    assert config.image_size is not None and config.image_size.value == 96


def test_a_defaults_function_that_computes_its_dict_is_not_guessed(tmp_path):
    # the function changes its dict before returning it: not read as data, so the update
    # may change any key, and neither the batch nor the image size is claimed
    config, _ = read_script(_project(tmp_path, "derived_defaults"))
    assert config.image_size is None or config.image_size.source == "assumed"
    assert config.batch_size is None or config.batch_size.source == "assumed"


_PADDED = """\
import torch
from torch.utils.data import Dataset, DataLoader


class Reviews(Dataset):
    def __init__(self, path, max_length=None, pad=0):
        self.rows = read(path)
        self.max_length = max_length or max(len(r) for r in self.rows)

    def __getitem__(self, i):
        row = self.rows[i][: self.max_length]
        return torch.tensor(row + [0] * (self.max_length - len(row)))


context = {context}
train_set = Reviews("train.csv", max_length=context)
val_set = Reviews("val.csv", max_length=2 * context)
model = build()
opt = torch.optim.AdamW(model.parameters())
for x in DataLoader(train_set, batch_size=8):
    model(x).mean().backward()
    opt.step()
"""


def test_the_length_a_dataset_class_pads_to_is_the_sequence_length():
    config, _ = read_source(_PADDED.format(context=192), "train.py")
    assert config.seq_len is not None and config.seq_len.value == 192  # not the val set's
    assert config.seq_len.source == "train.py:16" and config.seq_len.confidence == "medium"


def test_a_dataset_padding_to_its_longest_example_has_no_length_to_read():
    config, _ = read_source(_PADDED.format(context=None), "train.py")
    assert config.seq_len is None or config.seq_len.source == "assumed"


def test_a_required_flag_of_a_sibling_parser_is_undecided_not_none(tmp_path):
    # ``--dataset`` has no value on a plain launch: the branches it picks stay possible,
    # so the crop every branch applies is read (None would have switched them all off)
    (tmp_path / "options.py").write_text(
        "import argparse\n"
        "def get_argument_parser():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--dataset', required=True)\n"
        "    parser.add_argument('--side', type=int, default=48)\n"
        "    return parser\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch, torchvision\nimport torchvision.transforms as T\n"
        "from options import get_argument_parser\n"
        "def data(args):\n"
        "    if args.dataset == 'folder':\n"
        "        return torchvision.datasets.ImageFolder('x', transform=T.CenterCrop(args.side))\n"
        "    elif args.dataset == 'cifar10':\n"
        "        return torchvision.datasets.CIFAR10('x', transform=T.CenterCrop(args.side))\n"
        "def main():\n"
        "    args = get_argument_parser().parse_args()\n"
        "    model = torchvision.models.resnet18()\n"
        "    opt = torch.optim.Adam(model.parameters())\n"
        "    for x, y in torch.utils.data.DataLoader(data(args), batch_size=4):\n"
        "        model(x).sum().backward()\n        opt.step()\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    config, _ = read_script(str(tmp_path / "train.py"))
    assert config.image_size is not None and config.image_size.value == 48
    assert config.image_size.confidence == "medium"


_TRAINER = """\
import torch
from torch.optim import {optimizer}


class Loop:
    def __init__(self, model, data, lr=1e-3, momentum=0.0):
        self.model = model
        self.data = data
{build}

    def run(self):
        for x in self.data:
            self.model(x).mean().backward()
            self.opt.step()
"""

_LOOP_SCRIPT = """\
import torch
from pkg.trainer import Loop


def main():
    model = torch.nn.Linear(8, 8)
    Loop(model, data=range(3)).run()


if __name__ == "__main__":
    main()
"""


def _trainer_project(tmp_path, optimizer: str, build: str) -> str:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "trainer.py").write_text(_TRAINER.format(optimizer=optimizer, build=build))
    (tmp_path / "train.py").write_text(_LOOP_SCRIPT)
    return str(tmp_path / "train.py")


def test_the_optimizer_a_project_trainer_class_builds_is_the_jobs(tmp_path):
    path = _trainer_project(
        tmp_path, "SGD", "        self.opt = SGD(model.parameters(), lr=lr, momentum=0.9)"
    )
    config, _ = read_script(path)
    assert config.optimizer is not None and config.optimizer.value == "sgd-momentum"
    assert config.optimizer.confidence == "medium"
    assert config.optimizer.source.startswith(str(tmp_path / "pkg" / "trainer.py") + ":9 ")


def test_a_trainer_optimizer_chosen_by_a_branch_is_not_claimed(tmp_path):
    path = _trainer_project(
        tmp_path,
        "SGD, AdamW",
        "        if lr > 0.01:\n            self.opt = SGD(model.parameters(), lr=lr)\n"
        "        else:\n            self.opt = AdamW(model.parameters(), lr=lr)",
    )
    config, _ = read_script(path)
    assert config.optimizer is None or config.optimizer.source == "assumed"


_OWN_OPTIMIZER = """\
import torch


class Scaled(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if not state:
{buffers}
                p.add_(p.grad, alpha=-group["lr"])


model = torch.nn.Linear(8, 8)
opt = Scaled(model.parameters(), lr=0.01)
for x in data:
    model(x).sum().backward()
    opt.step()
"""


def _with_buffers(*names: str) -> str:
    lines = "\n".join(f"                    state[{n!r}] = torch.zeros_like(p)" for n in names)
    return _OWN_OPTIMIZER.format(buffers=lines or "                    pass")


def test_an_optimizer_class_of_the_script_is_read_by_the_state_it_keeps():
    for names, expected in (((), "sgd"), (("mu",), "sgd-momentum"), (("m", "v"), "adam")):
        config, _ = read_source(_with_buffers(*names), "train.py")
        assert config.optimizer is not None, names
        assert (config.optimizer.value, config.optimizer.confidence) == (expected, "medium")
        assert "(Scaled of train.py: per-parameter state" in config.optimizer.source


def test_an_optimizer_keeping_more_state_than_any_known_one_is_not_guessed():
    config, _ = read_source(_with_buffers("m", "v", "u"), "train.py")
    assert config.optimizer is None or config.optimizer.source == "assumed"


def test_an_optimizer_class_of_a_project_module(tmp_path):
    (tmp_path / "opt").mkdir()
    (tmp_path / "opt" / "__init__.py").write_text("")
    module = _with_buffers("mu").split("\n\nmodel = ")[0]
    (tmp_path / "opt" / "lars.py").write_text(module + "\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport opt.lars\n"
        "model = torch.nn.Linear(8, 8)\n"
        "optimizer = opt.lars.Scaled(model.parameters(), 0.1)\n"
        "for x in data:\n    model(x).sum().backward()\n    optimizer.step()\n"
    )
    config, _ = read_script(str(tmp_path / "train.py"))
    assert config.optimizer is not None and config.optimizer.value == "sgd-momentum"


_FACTORY = """\
import torch


def make_optimizer(model, name="Adam", lr=0.001, momentum=0.9):
    groups = list(model.parameters())
    if name == "Adam":
        optimizer = torch.optim.Adam(groups, lr=lr, betas=(momentum, 0.999))
    elif name == "SGD":
        optimizer = torch.optim.SGD(groups, lr=lr, momentum=momentum, nesterov=True)
    else:
        raise NotImplementedError(name)
    return optimizer
"""


def _factory_project(tmp_path, flag_default: str, momentum: str) -> str:
    (tmp_path / "tools.py").write_text(_FACTORY)
    (tmp_path / "train.py").write_text(
        "import argparse, torch\nfrom tools import make_optimizer\n"
        f"p = argparse.ArgumentParser()\np.add_argument('--optimizer', default='{flag_default}')\n"
        "opt = p.parse_args()\n"
        "def main():\n"
        "    model = torch.nn.Linear(4, 4)\n"
        f"    optimizer = make_optimizer(model, opt.optimizer, 0.01, {momentum})\n"
        "    for x in data:\n        model(x).sum().backward()\n        optimizer.step()\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    return str(tmp_path / "train.py")


def test_a_factory_builds_the_optimizer_its_name_argument_picks(tmp_path):
    config, _ = read_script(_factory_project(tmp_path, "SGD", "0.9"))
    assert config.optimizer is not None and config.optimizer.value == "sgd-momentum"
    assert config.optimizer.source.startswith(str(tmp_path / "tools.py") + ":9 ")
    assert config.optimizer.confidence == "medium"


def test_a_momentum_the_factory_is_handed_but_the_launch_cannot_fold_is_low(tmp_path):
    config, _ = read_script(_factory_project(tmp_path, "SGD", "hyp['momentum']"))
    assert config.optimizer is not None
    assert (config.optimizer.value, config.optimizer.confidence) == ("sgd-momentum", "low")


def test_a_factory_name_the_launch_cannot_fold_is_not_claimed(tmp_path):
    path = _factory_project(tmp_path, "SGD", "0.9")
    text = open(path).read().replace("opt.optimizer", "pick()")
    open(path, "w").write(text)
    config, _ = read_script(path)
    assert config.optimizer is None or config.optimizer.source == "assumed"


_HAND_PADDED = """\
import torch
from transformers import AutoModelForCausalLM


def main():
    width = {width}
    model = AutoModelForCausalLM.from_pretrained("gpt2")

    def evaluate_prepare(example):
        ids = example["ids"]
        example["ids"] = ids + [0] * (4 * width - len(ids))
        return example

    def prepare(example):
        ids = example["ids"]
        example["ids"] = [0] * (width - len(ids)) + ids
        return example

    data = load().map(prepare)
    opt = torch.optim.AdamW(model.parameters())
    for batch in torch.utils.data.DataLoader(data, batch_size=4):
        model(**batch).loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_examples_padded_by_hand_give_the_sequence_length():
    config, _ = read_source(_HAND_PADDED.format(width=96), "train.py")
    assert config.seq_len is not None and config.seq_len.value == 96  # not the evaluation's
    assert config.seq_len.source == "train.py:16" and config.seq_len.confidence == "medium"


def test_a_padding_length_the_launch_cannot_fold_is_not_claimed():
    config, _ = read_source(_HAND_PADDED.format(width="longest(data)"), "train.py")
    assert config.seq_len is None or config.seq_len.source == "assumed"
