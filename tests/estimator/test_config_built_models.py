"""A transformers model the script builds from a config it writes (trained from scratch).

Met on real code: DeepSpeed's BERT example builds ``RobertaModel(RobertaConfig.from_dict
({...}))`` in a helper whose sizes come from the entry point's defaults, and was "no model".
The shape is the config class's default checkpoint with the script's fields over it.
"""

from __future__ import annotations

from torchward.analysis.job.runconfig import read_source
from torchward.estimator.estimate import estimate
from torchward.estimator.hardware import lookup_hardware

GPT_FROM_SCRATCH = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel

config = GPT2Config(n_layer=6, n_embd=512, n_head=8)
model = GPT2LMHeadModel(config).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for batch in loader:
    model(batch, labels=batch).loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""

# GPT-2 with 6 layers of width 512 (the rest GPT2Config's defaults: GPT-2 small's vocabulary
# of 50,257 and 1,024 positions, tied head): embeddings 50,257·512 + 1,024·512; per layer
# 12·512² + 13·512 (attention and MLP weights and biases, two LayerNorms); final LayerNorm.
GPT_PARAMS = 50_257 * 512 + 1_024 * 512 + 6 * (12 * 512 * 512 + 13 * 512) + 2 * 512

ENCODER_IN_A_HELPER = """
import fire, torch
from transformers.models.roberta import RobertaConfig, RobertaModel

def create_model(layers, width):
    settings = {"hidden_size": width, "num_hidden_layers": layers,
                "num_attention_heads": 4, "intermediate_size": 4 * width}
    return RobertaModel(RobertaConfig.from_dict(settings))

def train(layers: int = 4, width: int = 128, batch_size: int = 16):
    model = create_model(layers=layers, width=width)
    optimizer = torch.optim.Adam(model.parameters())
    for batch in loader:
        model(**batch).last_hidden_state.sum().backward()
        optimizer.step()

if __name__ == "__main__":
    fire.Fire(train)
"""


def test_a_gpt2_config_written_in_the_script_gives_the_model_its_shape():
    config, _ = read_source(GPT_FROM_SCRATCH, "train.py")
    assert config.model.value == "GPT2LMHeadModel (GPT2Config)"
    assert config.pretrained.value is False
    result = estimate(config, lookup_hardware("a100-80gb").gpu)
    assert result.resolved.arch.params == GPT_PARAMS
    assert any("as its config class defaults" in note for note in result.notes)


def test_a_config_dict_built_in_a_helper_from_entry_point_defaults_is_followed():
    config, _ = read_source(ENCODER_IN_A_HELPER, "train.py")
    structure = config.structure.value
    assert structure["model_type"] == "roberta" and structure["defaults_of"] == "roberta-base"
    assert (structure["hidden_size"], structure["num_hidden_layers"]) == (128, 4)
    assert structure["intermediate_size"] == 512
    assert config.model.confidence == "medium"  # sizes from defaults a launch can change


def test_a_field_it_cannot_follow_is_named_and_lowers_the_confidence():
    source = GPT_FROM_SCRATCH.replace("n_head=8)", "n_head=8, vocab_size=len(tokenizer))")
    config, notes = read_source(source, "train.py")
    assert config.model.confidence == "low"
    assert "vocab_size" not in config.structure.value
    assert any("not followed: vocab_size" in note for note in notes)


def test_a_config_class_without_known_defaults_stays_unknown():
    source = GPT_FROM_SCRATCH.replace("GPT2Config", "FalconConfig").replace(
        "GPT2LMHeadModel", "FalconForCausalLM"
    )
    config, _ = read_source(source, "train.py")
    assert config.model is None and config.structure is None


def test_a_config_loaded_from_a_checkpoint_is_not_taken_for_one_written_here():
    source = GPT_FROM_SCRATCH.replace(
        "GPT2Config(n_layer=6, n_embd=512, n_head=8)", 'GPT2Config.from_pretrained("gpt2-medium")'
    )
    config, _ = read_source(source, "train.py")
    assert config.structure is None


def test_the_config_bound_on_the_path_a_plain_launch_takes_is_the_one_read():
    source = GPT_FROM_SCRATCH.replace(
        "config = GPT2Config(n_layer=6, n_embd=512, n_head=8)",
        "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--tiny', action='store_true')\nargs = parser.parse_args()\n"
        "if not args.tiny:\n    config = GPT2Config(n_layer=12, n_embd=768, n_head=12)\n"
        "else:\n    config = GPT2Config(n_layer=6, n_embd=512, n_head=8)",
    )
    config, _ = read_source(source, "train.py")
    assert config.structure.value["n_layer"] == 12  # --tiny is off by default
