"""Issue 26: parameter counts from the model's own constructor, evaluated with the call's
arguments — layers appended in loops, ``nn.Sequential(*layers)``, ``ModuleList`` built
in loops and comprehensions, a config dataclass whose defaults the call overrides — and
an honest low confidence when a count cannot be completed."""

from __future__ import annotations

import io
import json
import textwrap
from contextlib import redirect_stdout
from pathlib import Path

from torchward.cli import main

SCRIPTS = Path(__file__).parent / "scripts"


def _estimate(path: Path | str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["estimate", str(path), "--format", "json"]) == 0
    return json.loads(out.getvalue())


def _script(tmp_path: Path, model: str, build: str = "Net()") -> Path:
    path = tmp_path / "train.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        + textwrap.dedent(model)
        + textwrap.dedent(
            f"""
            model = {build}.cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 64, device="cuda")).sum()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """
        )
    )
    return path


def test_a_loop_built_sequential_counts_every_layer():
    # four hidden Linear(1024, 1024): 4 × (1024·1024 + 1024) = 4,198,400; the head
    # Linear(1024, 10): 10,250; total 4,208,650 (it had been read as 10,250, high)
    data = _estimate(SCRIPTS / "loop_mlp.py")
    assert data["params"] == 4_208_650
    assert data["config"]["params"]["confidence"] == "high"


def test_a_list_grown_with_plus_is_counted(tmp_path):
    path = _script(
        tmp_path,
        """
        class Net(nn.Module):
            def __init__(self, width=256):
                super().__init__()
                layers = [nn.Linear(64, width)]
                layers = layers + [nn.ReLU(), nn.Linear(width, width)]
                self.body = nn.Sequential(*layers)
        """,
    )
    # Linear(64, 256) = 16,640; Linear(256, 256) = 65,792; total 82,432
    assert _estimate(path)["params"] == 82_432


def test_a_module_list_appended_in_a_loop_with_sizes_from_the_index(tmp_path):
    path = _script(
        tmp_path,
        """
        class Net(nn.Module):
            def __init__(self, base=64, stages=3):
                super().__init__()
                self.blocks = nn.ModuleList()
                for i in range(stages):
                    self.blocks.append(nn.Linear(base * 2**i, base * 2 ** (i + 1)))
        """,
        "Net(stages=3)",
    )
    # Linear(64, 128) = 8,320; Linear(128, 256) = 33,024; Linear(256, 512) = 131,584
    assert _estimate(path)["params"] == 172_928


def test_a_module_list_comprehension_with_the_calls_arguments(tmp_path):
    path = _script(
        tmp_path,
        """
        class Net(nn.Module):
            def __init__(self, depth, width):
                super().__init__()
                self.h = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
                self.norm = nn.LayerNorm(width)
        """,
        "Net(6, width=128)",
    )
    # 6 × (128·128 + 128) = 99,072; LayerNorm(128) = 256; total 99,328
    assert _estimate(path)["params"] == 99_328


def test_layers_built_where_the_counter_cannot_follow_lower_the_confidence(tmp_path):
    path = _script(
        tmp_path,
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(64, 10)
                layers = []
                while len(layers) < 4:
                    layers.append(nn.Linear(64, 64))
                self.body = nn.Sequential(*layers)
        """,
    )
    data = _estimate(path)
    # the head alone (650) is a partial count: never at high confidence, and said
    assert data["params"] == 650
    assert data["config"]["params"]["confidence"] == "low"
    assert any("while" in note and "not followed" in note for note in data["notes"])


def test_a_config_dataclass_overridden_by_the_calls_keywords():
    # GPTConfig's defaults (bias=True) overridden through GPTConfig(**model_args), bias=False:
    # per block: ln_1 768 + qkv 768·2304 = 1,769,472 + out 768·768 = 589,824 + ln_2 768 +
    # up 768·3072 = 2,359,296 + down 3072·768 = 2,359,296 → 7,079,424; × 12 = 84,953,088;
    # wte 50304·768 = 38,633,472; wpe 1024·768 = 786,432; ln_f 768; the head is tied to
    # wte (not counted twice): total 124,373,760
    data = _estimate(SCRIPTS / "gpt_single_file.py")
    assert data["model"] == "GPT"
    assert data["params"] == 124_373_760
    structure = data["config"]["structure"]["value"]
    assert (structure["n_layer"], structure["n_embd"], structure["vocab_size"]) == (12, 768, 50304)


def test_the_config_dataclass_defaults_when_the_call_gives_none(tmp_path):
    text = (SCRIPTS / "gpt_single_file.py").read_text()
    assert "model = GPT(GPTConfig(**model_args))" in text
    path = tmp_path / "train.py"
    path.write_text(text.replace("GPT(GPTConfig(**model_args))", "GPT(GPTConfig())"))
    # the defaults keep bias=True: + 12 × (768 + 2304 + 768 + 768 + 3072 + 768) = 101,376
    # bias parameters + ln_f's 768: 124,373,760 + 102,144 = 124,475,904
    assert _estimate(path)["params"] == 124_475_904


def test_the_config_bound_to_a_name_from_a_dict_changed_in_place(tmp_path):
    # the trainer's own flow: vocab_size left None in the dict, set under the branch that
    # runs on a plain launch, the config bound to a name and handed to the model
    text = (SCRIPTS / "gpt_single_file.py").read_text()
    assert "    vocab_size=50304,\n" in text and "model = GPT(GPTConfig(**model_args))\n" in text
    text = text.replace("    vocab_size=50304,\n", "    vocab_size=None,\n").replace(
        "model = GPT(GPTConfig(**model_args))\n",
        "init_from = 'scratch'\n"
        "meta_vocab_size = None\n"
        "if init_from == 'scratch':\n"
        "    model_args['vocab_size'] = meta_vocab_size if meta_vocab_size is not None else 50304\n"
        "    gptconf = GPTConfig(**model_args)\n"
        "    model = GPT(gptconf)\n",
    )
    path = tmp_path / "train.py"
    path.write_text(text)
    assert _estimate(path)["params"] == 124_373_760  # as above: bias=False, tied head


def test_sizes_grown_in_a_loop_size_the_layers_after_it(tmp_path):
    path = _script(
        tmp_path,
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                dims = [64]
                c = 64
                for i in range(2):
                    c *= 2
                    dims += [c]
                self.layers = nn.ModuleList([nn.Linear(dims[i], dims[i + 1]) for i in range(2)])
        """,
    )
    # dims = [64, 128, 256]: Linear(64, 128) = 8,320; Linear(128, 256) = 33,024
    data = _estimate(path)
    assert data["params"] == 41_344 and data["config"]["params"]["confidence"] == "high"


def test_recurrent_cells_are_counted_like_their_torch_parameters(tmp_path):
    # nn.LSTMCell(1, 51): weight_ih 4·51×1, weight_hh 4·51×51, two biases 4·51 each
    # = 204 + 10,404 + 408 = 11,016; LSTMCell(51, 51): 10,404 · 2 + 408 = 21,216;
    # GRUCell(8, 4, bias=False): 3·4·(8 + 4) = 144; RNNCell(4, 4): 16 + 16 + 8 = 40;
    # Linear(51, 1): 52. It had been read as 52 (the cells "not sized").
    path = _script(
        tmp_path,
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm1 = nn.LSTMCell(1, 51)
                self.lstm2 = nn.LSTMCell(51, 51)
                self.gru = nn.GRUCell(8, 4, bias=False)
                self.rnn = nn.RNNCell(input_size=4, hidden_size=4)
                self.linear = nn.Linear(51, 1)
        """,
    )
    data = _estimate(path)
    assert data["params"] == 11_016 + 21_216 + 144 + 40 + 52
    assert data["config"]["params"]["confidence"] == "high"
