"""Script reading: a job configured by an object of a settings class (issue 26).

The settings live as class-level fields, partly in base classes of another project module;
the script builds one instance, hands it a dict of overrides and calls a method whose
training step it inherits (labml-style experiments). Written for this reader, not copied.
"""

from __future__ import annotations

import textwrap

from torchward.analysis.job.runconfig import read_script

_BASE = """
import torch

class LoopSettings:
    epochs: int = 3
    device: str = "cuda"

    def run(self):
        for batch in self.loader:
            self.step(batch)


class TextSettings(LoopSettings):
    batch_size: int = 12
    seq_len: int = 256
    optimizer: object
    model: object

    def step(self, batch):
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
"""

_SCRIPT = """
from framework import experiment
from settings_base import TextSettings


class Settings(TextSettings):
    d_model: int = 128


def main():
    conf = Settings()
    experiment.configs(conf, {OVERRIDES})
    conf.run()


if __name__ == "__main__":
    main()
"""


def _read(tmp_path, overrides: str, base: str = _BASE, script: str = _SCRIPT):
    (tmp_path / "settings_base.py").write_text(textwrap.dedent(base))
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(script).replace("OVERRIDES", overrides))
    config, notes = read_script(str(path))
    return dict(config.fields()), notes


def test_fields_come_from_inherited_defaults_and_the_override_dict(tmp_path):
    fields, _ = _read(tmp_path, "'batch_size': 48, 'optimizer.optimizer': 'Adam'")
    assert fields["batch_size"].value == 48  # the override beats the base's 12
    assert fields["batch_size"].source.endswith("train.py:12")
    assert fields["seq_len"].value == 256  # the base class's default
    assert fields["optimizer"].value == "adam"  # a nested settings object's field
    assert fields["batch_size"].confidence == "medium"  # a launch could override it


def test_an_inherited_training_step_makes_the_run_call_a_training_loop(tmp_path):
    fields, _ = _read(tmp_path, "'batch_size': 48")
    assert fields["mode"].value == "train"
    assert fields["mode"].source.endswith("train.py:13 (a training loop)")
    assert fields["dtype"].value == "fp32"
    assert fields["accumulation"].value == 1 and fields["gpus"].value == 1


def test_an_override_that_is_not_a_literal_leaves_the_field_unknown(tmp_path):
    fields, _ = _read(tmp_path, "'batch_size': 48, 'seq_len': compute_length()")
    assert fields["batch_size"].value == 48
    assert "seq_len" not in fields  # never the stale default of 256


def test_a_dict_of_other_keys_is_not_an_override(tmp_path):
    fields, _ = _read(tmp_path, "'batch_size': 48, 'unrelated_key': 1")
    assert fields["batch_size"].value == 12  # the class default, the dict not applied


def test_an_inherited_step_under_autocast_claims_no_precision(tmp_path):
    base = _BASE.replace(
        "        loss = self.model(batch).mean()",
        "        with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "            loss = self.model(batch).mean()",
    )
    fields, _ = _read(tmp_path, "'batch_size': 48", base=base)
    assert fields["batch_size"].value == 48
    assert "mode" not in fields and "dtype" not in fields  # not followed there: no fp32 claim


def test_a_settings_object_built_in_a_helper_does_not_override_the_driven_one(tmp_path):
    script = _SCRIPT.replace(
        "def main():",
        "class OptimizerSettings:\n"
        "    optimizer: str = 'SGD'\n"
        "    batch_size: int = 1\n\n\n"
        "def make_optimizer(c):\n"
        "    opt = OptimizerSettings()\n"
        "    opt.optimizer = 'Adam'\n"
        "    return opt\n\n\n"
        "def main():",
    ).replace("    conf.run()", "    make_optimizer(conf)\n    conf.run()")
    fields, _ = _read(tmp_path, "'seq_len': 64", script=script)
    assert fields["batch_size"].value == 12  # the driven object's, not the helper's 1
    assert fields["optimizer"].value == "adam"  # a field only the helper's object sets


def test_a_network_with_class_attributes_is_not_a_settings_object(tmp_path):
    script = (
        "import torch.nn as nn\n\n"
        "class Net(nn.Module):\n"
        "    batch_size = 512\n\n"
        "    def forward(self, x):\n"
        "        return x\n\n"
        "net = Net()\n"
        "configure(net, {'batch_size': 64})\n"
        "net.train()\n"
    )
    fields, _ = _read(tmp_path, "", script=script)
    assert fields["batch_size"].value != 64  # no settings object: the dict is not applied


def test_a_declared_dataset_name_gives_the_stored_image_side_at_low_confidence(tmp_path):
    script = (
        "import argparse\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--dataset', default='cifar10')\n"
        "args = parser.parse_args()\n"
        "loss.backward()\n"
    )
    fields, _ = _read(tmp_path, "", script=script)
    assert fields["image_size"].value == 32 and fields["image_size"].confidence == "low"
    resized = script + "import torchvision.transforms as T\nT.Resize(224)\n"
    fields, _ = _read(tmp_path, "", script=resized)
    assert fields["image_size"].value == 224  # what the script builds wins over the name


_BLOCKS = """
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, width: int, depth: int, classes: int):
        super().__init__()
        self.stem = nn.Linear(16, width)
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.head = nn.Linear(width, classes)
"""

_BUILT_BY_OPTION = """
from framework import experiment, option
from settings_base import TextSettings


class Settings(TextSettings):
    width: int = 32
    depth: int = 3


@option(Settings.model)
def _model(c: Settings):
    from blocks import Mixer

    return Mixer(c.width, c.depth, 10)


def main():
    conf = Settings()
    experiment.configs(conf, {OVERRIDES})
    conf.run()


if __name__ == "__main__":
    main()
"""


def _mixer_params(width: int, depth: int) -> int:
    return (16 * width + width) + depth * (width * width + width) + (width * 10 + 10)


def test_a_model_built_from_the_settings_object_in_a_decorated_function_is_counted(tmp_path):
    (tmp_path / "blocks.py").write_text(textwrap.dedent(_BLOCKS))
    fields, _ = _read(tmp_path, "'depth': 5", script=_BUILT_BY_OPTION)
    assert fields["model"].value == "Mixer"
    # the override (depth 5) and the class default (width 32), read through ``c: Settings``
    assert fields["params"].value == _mixer_params(32, 5)
    assert fields["params"].confidence == "medium"  # a launch can override the settings


def test_a_setting_overridden_with_an_unknown_value_leaves_the_model_unsized(tmp_path):
    (tmp_path / "blocks.py").write_text(textwrap.dedent(_BLOCKS))
    fields, _ = _read(tmp_path, "'depth': pick_depth()", script=_BUILT_BY_OPTION)
    # the stem and head are counted; the blocks, sized by the unknown depth, are not, and
    # the count says so at low confidence (never the class default's depth 3)
    assert fields["params"].value == _mixer_params(32, 0)
    assert fields["params"].confidence == "low"


def test_a_string_naming_a_builder_function_is_not_the_fields_value(tmp_path):
    (tmp_path / "blocks.py").write_text(textwrap.dedent(_BLOCKS))
    script = _BUILT_BY_OPTION.replace(
        "    depth: int = 3\n", "    depth: int = 3\n    model: object = '_model'\n"
    )
    fields, _ = _read(tmp_path, "'depth': 5", script=script)
    # ``'_model'`` picks the function that builds the model: not a model named "_model"
    assert fields["model"].value == "Mixer"
    assert fields["params"].value == _mixer_params(32, 5)


def test_a_dataset_with_class_attributes_is_not_a_settings_object(tmp_path):
    script = (
        "import torch\n"
        "from torch.utils.data import Dataset\n\n"
        "class Pairs(Dataset):\n"
        "    seq_len = 4096\n\n"
        "    def __len__(self):\n"
        "        return 10\n\n"
        "def main():\n"
        "    data = Pairs()\n"
        "    configure(data, {'seq_len': 64})\n"
        "    data.prepare()\n"
        "    loss.backward()\n\n"
        "main()\n"
    )
    fields, _ = _read(tmp_path, "", script=script)
    assert fields.get("seq_len") is None or fields["seq_len"].value != 64


def test_an_autocast_in_a_helper_beside_the_inherited_step_claims_no_precision(tmp_path):
    base = _BASE.replace(
        "        loss = self.model(batch).mean()",
        "        with mixed():\n            loss = self.model(batch).mean()",
    ) + ("\n\ndef mixed():\n    return torch.autocast('cuda', dtype=torch.float16)\n")
    fields, _ = _read(tmp_path, "'batch_size': 48", base=base)
    assert fields["batch_size"].value == 48
    assert "mode" not in fields and "dtype" not in fields
