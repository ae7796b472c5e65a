"""Configurator-style scripts (nanoGPT): ``exec(open('configurator.py').read())`` with
config files that override module globals — real files on disk, read as data.

A plain launch passes no arguments, so the script's constants are the job; arguments given
to the reader (the CLI's ``--script-args``) are applied as the configurator applies them:
config files in order, then ``--key=value`` over an existing global of the same type.
"""

from __future__ import annotations

import json
import os

import pytest
from torchward.analysis.job.runconfig import read_script

from torchward.cli import main

# nanoGPT's configurator, restated: config files are executed, --key=value replaces a global
CONFIGURATOR = """\
import sys
from ast import literal_eval
for arg in sys.argv[1:]:
    if '=' not in arg:
        assert not arg.startswith('--')
        config_file = arg
        exec(open(config_file).read())
    else:
        assert arg.startswith('--')
        key, val = arg.split('=')
        key = key[2:]
        if key in globals():
            try:
                attempt = literal_eval(val)
            except (SyntaxError, ValueError):
                attempt = val
            assert type(attempt) == type(globals()[key])
            globals()[key] = attempt
        else:
            raise ValueError(f"Unknown config key: {key}")
"""

TRAIN = """\
import torch
batch_size = 12
block_size = 1024
gradient_accumulation_steps = 5 * 8
dtype = 'bfloat16'
exec(open('configurator.py').read())  # overrides from command line or config file
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = torch.amp.autocast(device_type='cuda', dtype=ptdtype)
model = GPT(GPTConfig(block_size=block_size))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for it in range(10):
    for micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
        loss.backward()
    optimizer.step()
"""

SMALL = """\
# a small run on one GPU
batch_size = 32
block_size = 256
gradient_accumulation_steps = 1
dtype = 'float16'
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "configurator.py").write_text(CONFIGURATOR)
    (tmp_path / "config" / "train_small.py").write_text(SMALL)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def _read(path, argv=()):
    config, notes = read_script(str(path), tuple(argv))
    shown = {
        name: (field.value, field.source.replace(str(path.parent) + os.sep, ""))
        for name, field in config.fields()
    }
    return shown, notes


def test_plain_launch_keeps_the_scripts_constants_and_says_why(project):
    fields, notes = _read(project / "train.py")
    assert fields["batch_size"] == (12, "train.py:2")
    assert fields["seq_len"] == (1024, "train.py:3")
    assert fields["accumulation"][0] == 40  # 5 * 8, computed by the script
    assert fields["dtype"][0] == "amp-bf16"
    assert any("configurator.py applies command-line overrides" in n for n in notes), notes


def test_a_config_file_on_the_command_line_overrides_and_is_cited(project):
    fields, notes = _read(project / "train.py", ["config/train_small.py"])
    assert fields["batch_size"] == (32, "config/train_small.py:2")
    assert fields["seq_len"] == (256, "config/train_small.py:3")
    assert fields["accumulation"] == (1, "config/train_small.py:4")
    assert fields["dtype"][0] == "amp-fp16"  # the autocast follows the overridden global
    assert not any("plain launch" in n for n in notes)


def test_key_value_overrides_apply_after_the_config_file(project):
    fields, _ = _read(project / "train.py", ["config/train_small.py", "--batch_size=4"])
    assert fields["batch_size"] == (4, "command line `--batch_size=4`")
    assert fields["seq_len"][0] == 256


def test_unknown_keys_and_other_types_are_refused_as_the_configurator_does(project):
    fields, notes = _read(project / "train.py", ["--nope=3", "--batch_size=4.5"])
    assert fields["batch_size"] == (12, "train.py:2")
    assert any("`nope` is not a global" in n for n in notes), notes
    assert any("`batch_size` is a int" in n for n in notes), notes


def test_a_missing_config_file_is_named_not_guessed(project):
    fields, notes = _read(project / "train.py", ["config/absent.py"])
    assert fields["batch_size"] == (12, "train.py:2")
    assert any("config/absent.py: config file not found" in n for n in notes), notes


def test_script_assignments_after_the_exec_win_again(project):
    text = TRAIN.replace(
        "exec(open('configurator.py').read())  # overrides from command line or config file\n",
        "exec(open('configurator.py').read())\nbatch_size = 2\n",
    )
    (project / "train.py").write_text(text)
    fields, _ = _read(project / "train.py", ["config/train_small.py"])
    assert fields["batch_size"] == (2, "train.py:7")
    assert fields["seq_len"] == (256, "config/train_small.py:3")


def test_a_config_file_executed_by_default(project):
    """No configurator: the script itself executes a config file its constant names."""
    text = TRAIN.replace(
        "exec(open('configurator.py').read())  # overrides from command line or config file\n",
        "config_file = 'config/train_small.py'\nexec(open(config_file).read())\n",
    )
    (project / "train.py").write_text(text)
    fields, notes = _read(project / "train.py")
    assert fields["batch_size"] == (32, "config/train_small.py:2")
    assert fields["accumulation"] == (1, "config/train_small.py:4")
    assert not any("command-line overrides" in n for n in notes)


def test_a_configurator_with_a_default_config_file(project):
    """``config_file = sys.argv[1] if given, else the default``: both launches."""
    (project / "config" / "base.py").write_text("batch_size = 6\n")
    (project / "configurator.py").write_text(
        "import sys\nconfig_file = 'config/base.py'\n"
        "if len(sys.argv) > 1:\n    config_file = sys.argv[1]\n"
        "exec(open(config_file).read())\n"
    )
    fields, _ = _read(project / "train.py")
    assert fields["batch_size"] == (6, "config/base.py:1")
    fields, _ = _read(project / "train.py", ["config/train_small.py"])
    assert fields["batch_size"] == (32, "config/train_small.py:2")


def test_an_exec_of_a_file_nobody_can_name_is_said(project):
    text = TRAIN.replace("exec(open('configurator.py').read())", "exec(open(pick()).read())")
    (project / "train.py").write_text(text)
    fields, notes = _read(project / "train.py")
    assert fields["batch_size"] == (12, "train.py:2")
    assert any("which file it names is not known" in n for n in notes), notes


def test_the_cli_passes_the_scripts_arguments(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code = main(
        [
            "estimate",
            "train.py",
            "--params",
            "124M",
            "--format",
            "json",
            "--script-args=config/train_small.py --batch_size=8",
        ]
    )
    assert code == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert config["batch_size"]["value"] == 8
    assert config["seq_len"] == {
        "value": 256,
        "source": "config/train_small.py:3",
        "confidence": "medium",
    }
    code = main(["estimate", "train.py", "--params", "124M", "--format", "json"])
    assert json.loads(capsys.readouterr().out)["config"]["batch_size"]["value"] == 12
