"""A model the script loads by a name it leaves to its launch: the reader says which
expression, and which flag, the name would come from (issue 26, "say what is unknown"),
instead of only that no model was found."""

from __future__ import annotations

from torchward.analysis.job.runconfig import read_source

_LOADS_BY_FLAG = """
import argparse
from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--base_checkpoint", type=str{default})
parser.add_argument("--batch_size", type=int, default=4)
args = parser.parse_args()
net = AutoModelForCausalLM.from_pretrained(args.base_checkpoint)
net.train()
"""


def test_a_required_flag_names_the_expression_and_the_flag():
    config, notes = read_source(_LOADS_BY_FLAG.format(default=", required=True"), "tune.py")
    assert config.model is None
    said = [n for n in notes if "args.base_checkpoint" in n]
    assert len(said) == 1
    assert "tune.py:9" in said[0] and "--base_checkpoint" in said[0]


def test_a_flag_with_a_default_is_read_and_not_reported_unknown():
    config, notes = read_source(_LOADS_BY_FLAG.format(default=', default="gpt2"'), "tune.py")
    assert config.model is not None and config.model.value == "gpt2"
    assert not any("args.base_checkpoint" in n for n in notes)


def test_a_name_from_a_plain_variable_is_named_without_a_flag():
    source = (
        "import sys\nfrom transformers import AutoModel\n"
        "checkpoint = sys.argv[1]\nnet = AutoModel.from_pretrained(checkpoint)\nnet.train()\n"
    )
    config, notes = read_source(source, "tune.py")
    assert config.model is None
    said = [n for n in notes if "`checkpoint`" in n]
    assert len(said) == 1 and "--" not in said[0].split("give")[0]
