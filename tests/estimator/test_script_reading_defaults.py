"""Script reading: defaults a project module's function returns, merged into the flags.

A training script may keep its flags' defaults in a dict it builds, then extend it with
a function of its package that returns more (``defaults.update(model_defaults())``) and
hand the whole dict to a helper that declares one flag per key. The function's dict is
read as data — only values written as literals — so every default survives the update.
"""

from __future__ import annotations

from torchward.analysis.runconfig import read_script

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
