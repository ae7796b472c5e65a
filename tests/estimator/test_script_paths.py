"""Script reading follows values to the path that runs by default (issue 12).

Each test restates, in its own words, a pattern met in real training scripts: values kept
in module constants and dicts, branches a flag turns on, evaluation passes, distributed-only
set-up, models chosen by name, entry-point and library defaults.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

from torchward.analysis.job.runconfig import read_source

from torchward.cli import main


def _read(source: str, path: str = "train.py"):
    config, notes = read_source(source, path)
    return config, {name: field.value for name, field in config.fields()}, notes


NANO = """
import os, torch
from torch.nn.parallel import DistributedDataParallel as DDP

class Loader:
    def __init__(self, B, T, split):
        self.B, self.T = B, T

ddp = int(os.environ.get('RANK', -1)) != -1
if ddp:
    torch.distributed.init_process_group(backend='nccl')
    world = int(os.environ['WORLD_SIZE'])
else:
    world = 1
tokens = 2 ** 19
B = 16
T = 2048
steps = tokens // (B * T * world)
train = Loader(B, T, split="train")
val = Loader(B=B * 4, T=T, split="val")
model = Net()
if ddp:
    model = DDP(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=use_fused)
for step in range(10):
    for micro in range(steps):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x)
        loss.backward()
    opt.step()
"""


def test_constants_a_local_loader_and_a_computed_accumulation_on_a_plain_launch():
    config, values, _ = _read(NANO)
    assert values["batch_size"] == 16 and values["seq_len"] == 2048
    assert values["accumulation"] == 16  # 2**19 // (16 * 2048 * 1): world is 1 without RANK
    assert values["dtype"] == "amp-bf16" and config.dtype.confidence == "high"
    assert values["optimizer"] == "adamw-fused"
    # DDP and init_process_group only run under torchrun: no sharding, one GPU (low)
    assert "sharding" not in values
    assert values["gpus"] == 1 and config.gpus.confidence == "low"


def test_a_branch_a_store_true_flag_turns_on_is_not_the_job():
    source = """
import argparse, torch
from peft import LoraConfig
p = argparse.ArgumentParser()
p.add_argument("--use_lora", action="store_true")
p.add_argument("--use_optimizer", action="store_true")
p.add_argument("--lora_r", type=int, default=8)
args = p.parse_args()
if args.use_lora:
    cfg = LoraConfig(r=args.lora_r)
if args.use_optimizer:
    opt = torch.optim.Adam(model.parameters())
else:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss.backward()
"""
    config, values, _ = _read(source)
    assert "lora_rank" not in values
    assert values["optimizer"] == "sgd" and config.optimizer.confidence == "high"
    on, values_on, _ = _read(
        source.replace('"--use_lora", action="store_true"', '"--use_lora", action="store_false"')
    )
    assert values_on["lora_rank"] == 8 and on.lora_rank.confidence == "medium"


def test_validation_autocast_loses_to_the_training_one_and_alone_is_low_confidence():
    source = """
import torch
def evaluate(model, loader):
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
        return model(x)
def train(model):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x)
    loss.backward()
train(model)
evaluate(model, None)
"""
    config, values, _ = _read(source)
    assert values["dtype"] == "amp-bf16" and config.dtype.confidence == "high"
    only_eval, values, _ = _read(source.replace("dtype=torch.bfloat16", "enabled=False"))
    assert values["dtype"] == "amp-fp16" and only_eval.dtype.confidence == "low"


def test_an_undecidable_condition_caps_confidence_at_medium():
    config, values, _ = _read(
        "import torch\nif torch.rand(1).item() > 0.5:\n"
        "    loader = torch.utils.data.DataLoader(ds, batch_size=64)\nloss.backward()\n"
    )
    assert values["batch_size"] == 64 and config.batch_size.confidence != "high"


def test_torchvision_builder_chosen_by_an_argparse_default():
    source = """
import argparse
import torchvision.models as models
p = argparse.ArgumentParser()
p.add_argument('-a', '--arch', default='resnet18')
p.add_argument('-b', '--batch-size', default=256, type=int)
args = p.parse_args()
model = models.__dict__[args.arch]()
loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size)
val_loader = torch.utils.data.DataLoader(vs, batch_size=1024)
loss.backward()
"""
    config, values, _ = _read(source)
    assert values["model"] == "resnet18" and config.model.confidence == "medium"
    assert values["batch_size"] == 256  # the training loader, not the evaluation one


def test_init_from_scratch_is_not_a_model_name():
    source = """
init_from = 'scratch'
if init_from == 'scratch':
    model = GPT(conf)
elif init_from.startswith('gpt2'):
    model = GPT.from_pretrained(init_from)
loss.backward()
"""
    _, values, _ = _read(source)
    assert values.get("model") != "scratch"


def test_an_entry_points_parameter_defaults_configure_qlora_in_pure_bf16():
    source = """
from fastcore.script import call_parse, Param
@call_parse()
def main(
    train_type: Param("", choices=["full", "lora", "qlora"]) = "qlora",
    batch_size: int = 2,
    context_length: int = 1024,
    precision: Param("", choices=["fp32", "bf16", "bf16_autocast"]) = "bf16",
    use_gradient_checkpointing: bool = True,
    lora_rank: int = 32,
    model_name: str = "meta-llama/Llama-2-7b-hf",
):
    loss.backward()
"""
    _, values, _ = _read(source)
    assert values["model"] == "meta-llama/Llama-2-7b-hf"
    assert values["batch_size"] == 2 and values["seq_len"] == 1024
    assert values["dtype"] == "bf16"  # "bf16" next to "bf16_autocast" is the pure choice
    assert values["lora_rank"] == 32 and values["quantize"] == "4bit"
    assert values["checkpointing"] is True


def test_sft_config_through_hf_argument_parser_brings_the_library_defaults():
    source = """
from dataclasses import dataclass, field
from transformers import HfArgumentParser
from trl import SFTConfig
@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="Qwen/Qwen2.5-0.5B")
parser = HfArgumentParser((ModelArguments, SFTConfig))
model_args, training_args = parser.parse_args_into_dataclasses()
"""
    config, values, _ = _read(source)
    assert values["model"] == "Qwen/Qwen2.5-0.5B" and values["mode"] == "train"
    assert values["batch_size"] == 8 and values["seq_len"] == 1024
    assert values["dtype"] == "amp-bf16" and values["checkpointing"] is True
    assert "SFTConfig default" in config.seq_len.source and config.seq_len.confidence == "medium"


def test_the_labels_tokenizer_length_is_not_the_sequence():
    source = """
def main():
    max_length = 64
    def preprocess(batch):
        inputs = tokenizer(batch["x"], max_length=max_length, padding="max_length")
        labels = tokenizer(batch["y"], max_length=2, padding="max_length")
        return inputs
    loss.backward()
main()
"""
    _, values, _ = _read(source)
    assert values["seq_len"] == 64


def test_a_test_mode_branch_does_not_size_the_model_and_dict_updates_apply():
    source = """
import argparse
import torch.nn as nn
class Net(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg["vocab"], cfg["dim"])
        self.head = nn.Linear(cfg["dim"], cfg["vocab"], bias=False)
p = argparse.ArgumentParser()
p.add_argument("--test_mode", action="store_true")
args = p.parse_args()
if args.test_mode:
    CFG = {"vocab": 10, "dim": 2}
else:
    CFG = {"vocab": 1000}
    sizes = {"small": {"dim": 64}, "large": {"dim": 128}}
    CFG.update(sizes["small"])
model = Net(CFG)
loss.backward()
"""
    config, values, _ = _read(source)
    assert values["model"] == "Net" and values["params"] == 2 * 1000 * 64


def test_config_dataclass_instances_and_weight_tying():
    source = """
from dataclasses import dataclass
import torch.nn as nn
@dataclass
class Conf:
    vocab: int = 1000
    dim: int = 32
class LM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.body = nn.ModuleDict(dict(wte=nn.Embedding(config.vocab, config.dim)))
        self.head = nn.Linear(config.dim, config.vocab, bias=False)
        self.body.wte.weight = self.head.weight
model = LM(Conf(vocab=500))
loss.backward()
"""
    _, values, _ = _read(source)
    assert values["params"] == 500 * 32  # one tensor shared by the embedding and the head


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["estimate", *args])
    return code, out.getvalue()


def test_a_script_without_a_sizable_model_reports_unknown_with_what_it_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import argparse, torch\np = argparse.ArgumentParser()\n"
        "p.add_argument('--model_name_or_path')\np.add_argument('--batch_size', type=int, default=4)\n"
        "args = p.parse_args()\nmodel = AutoModel.from_pretrained(args.model_name_or_path)\n"
        "loss.backward()\n"
    )
    code, out = _cli(str(script), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "unknown" and data["peak_bytes"] is None
    assert data["config"]["batch_size"]["value"] == 4
    assert data["notes"][0].startswith("unknown: ")


def test_unmodelled_activations_give_no_fit_no_smallest_gpu_no_max_batch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(1024, 1024)\n"
        "model = Net()\nopt = torch.optim.AdamW(model.parameters())\nloss.backward()\n"
    )
    code, out = _cli(str(script), "--gpu", "a100-80gb", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "unknown"
    assert data["smallest_gpu"] is None and data["max_batch_size"] is None
    assert any("activations of `Net` are not modelled" in n for n in data["notes"])
    assert data["peak_bytes"] > 1024 * 1024 * 4 * 4  # the lower bound: weights, grads, Adam


def test_longest_sequence_stays_within_the_models_positions():
    code, out = _cli("--model", "bert-base-uncased", "--gpu", "a100-80gb", "--format", "json")
    assert code == 0 and json.loads(out)["max_seq_len"] == 512
    code, out = _cli("--model", "gpt2", "--gpu", "h100", "--format", "json")
    assert json.loads(out)["max_seq_len"] == 1024


def test_no_lora_remedy_for_a_model_trained_from_scratch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom transformers import AutoConfig, AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained('gpt2'))\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=64)\nloss.backward()\n"
    )
    code, out = _cli(
        str(script), "--model", "gpt2-large", "--seq-len", "1024", "--gpu", "t4", "--format", "json"
    )
    data = json.loads(out)
    assert data["config"]["pretrained"]["value"] is False and data["verdict"] == "oom"
    titles = [r["title"] for r in data["remedies"]]
    assert titles and not any("LoRA" in t for t in titles)


def test_a_method_nobody_calls_is_not_the_default_path():
    source = """
import torch
class Trainer:
    def unused_fp16(self):
        with torch.autocast("cuda", dtype=torch.float16):
            pass
loss.backward()
"""
    config, values, _ = _read(source)
    assert values.get("dtype") == "amp-fp16" and config.dtype.confidence == "medium"


EVAL_AT_LARGER_BATCH = """
import argparse, torch
from transformers import AutoModelForSequenceClassification
p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--test-batch-size", type=int, default=256)
args = p.parse_args()
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
train_loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size)
test_loader = torch.utils.data.DataLoader(ts, batch_size=args.test_batch_size)
opt = torch.optim.AdamW(model.parameters())
for x in train_loader:
    model(**x).loss.backward()
    opt.step()
    opt.zero_grad()
"""


def test_an_evaluation_pass_at_a_larger_batch_is_its_own_phase_and_can_be_the_peak(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(EVAL_AT_LARGER_BATCH)
    code, out = _cli(str(script), "--seq-len", "512", "--format", "json")
    data = json.loads(out)
    assert data["config"]["batch_size"]["value"] == 8
    assert data["config"]["eval_batch_size"]["value"] == 256
    phases = {p["name"]: p["allocated_bytes"] for p in data["phases"]}
    assert data["peak_phase"] == "evaluation" and phases["evaluation"] > phases["forward"]
    script.write_text(EVAL_AT_LARGER_BATCH.replace("default=256", "default=8"))
    data = json.loads(_cli(str(script), "--seq-len", "512", "--format", "json")[1])
    assert data["peak_phase"] != "evaluation"  # at the training batch, training peaks


def test_frozen_modules_and_several_models_are_said_not_guessed():
    source = """
from diffusers import AutoencoderKL, UNet2DConditionModel
from transformers import CLIPTextModel
vae = AutoencoderKL.from_pretrained(name, subfolder="vae")
text = CLIPTextModel.from_pretrained(name, subfolder="text_encoder")
unet = UNet2DConditionModel.from_pretrained(name, subfolder="unet")
vae.requires_grad_(False)
text.requires_grad_(False)
loss.backward()
"""
    config, values, notes = _read(source)
    # typed facts now (tests/estimator/test_job_phases.py costs them): no model field was
    # read (``name`` is unknown), so all three are other models on the device, frozen or not
    others = {m.variable: m for m in values["device_models"]}
    assert set(others) == {"vae", "text", "unet"}
    assert others["vae"].name == "AutoencoderKL" and not others["vae"].trained
    assert "frozen" not in values  # the frozen modules belong to the other models


MNIST_NET = """
import torch, torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 1), nn.ReLU(),
            nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128),
            nn.ReLU(), nn.Linear(128, 10),
        )
model = Net()
loader = torch.utils.data.DataLoader(ds, batch_size=64)
opt = torch.optim.Adadelta(model.parameters())
loss.backward()
"""


def test_a_script_cnn_is_traced_from_its_constructors_and_gets_activations(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(MNIST_NET)
    code, out = _cli(str(script), "--image-size", "28", "--gpu", "t4", "--format", "json")
    data = json.loads(out)
    layers = data["config"]["structure"]["value"]["layers"]
    assert layers[0] == ["conv", 1, 32, 3, 1, 0] and ["maxpool", 2, 2, 0] in layers
    assert data["params"] == 1_199_882  # the PyTorch MNIST example's Net
    assert data["terms"]["activations"] > 0 and data["verdict"] == "fits"
    assert data["max_batch_size"] and data["max_batch_size"] > 64
    # a layer the trace does not know (a grouped convolution): no activation model
    script.write_text(
        MNIST_NET.replace("nn.Conv2d(32, 64, 3, 1)", "nn.Conv2d(32, 64, 3, 1, groups=2)")
    )
    data = json.loads(_cli(str(script), "--gpu", "t4", "--format", "json")[1])
    assert data["verdict"] == "unknown" and data["max_batch_size"] is None


def test_a_parameter_count_for_an_image_job_borrows_no_language_model_shapes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nimport torchvision.transforms as T\n"
        "tf = T.Compose([T.RandomResizedCrop(224)])\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=32)\nloss.backward()\n"
    )
    code, out = _cli(str(script), "--params", "1.3M", "--gpu", "rtx-4090", "--format", "json")
    data = json.loads(out)
    assert data["verdict"] == "unknown" and data["peak_bytes"] < 2**30  # weights + state
    assert not any("borrowed from" in n for n in data["notes"])


NEEDS_A_MODEL_FLAG = """
import argparse, torch
from torch.utils.data import DataLoader
from transformers import AutoConfig, AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path", type=str)
parser.add_argument("--tokenizer_name", type=str)
parser.add_argument("--debug", action="store_true")
args = parser.parse_args()

if args.debug:
    raise SystemExit("debug runs are not supported")  # not taken without flags
if args.tokenizer_name:
    tokenizer = load(args.tokenizer_name)
elif args.model_name_or_path:
    tokenizer = load(args.model_name_or_path)
else:
    raise ValueError("give --tokenizer_name or --model_name_or_path")

if args.model_name_or_path:
    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
else:
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model("gpt2"))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = DataLoader(data, batch_size=16)
"""


def test_past_a_raise_a_plain_launch_reaches_nothing_is_read_with_high_confidence():
    """Found on a LoftQ fine-tune: without flags the script raises before it builds the
    model, yet 'trained from scratch' was read with high confidence from the branch the
    missing flag would have skipped. Past that raise the defaults describe no launch."""
    config, values, notes = _read(NEEDS_A_MODEL_FLAG)
    assert values["pretrained"] is False and values["optimizer"] == "adamw"
    assert all(field.confidence != "high" for _, field in config.fields()), config
    assert config.pretrained.confidence == "medium"
    line = NEEDS_A_MODEL_FLAG.splitlines().index(
        '    raise ValueError("give --tokenizer_name or --model_name_or_path")'
    )
    assert [n for n in notes if "plain launch raises" in n] == [
        f"train.py:{line + 1}: a plain launch raises here, so what follows runs only with "
        "flags the defaults leave unset: what is read there is not high confidence"
    ]


def test_a_raise_on_a_branch_a_plain_launch_skips_changes_nothing():
    source = NEEDS_A_MODEL_FLAG.replace(
        '    raise ValueError("give --tokenizer_name or --model_name_or_path")',
        '    tokenizer = load("gpt2")',
    )
    config, _, notes = _read(source)
    assert config.optimizer.confidence == "high"  # the debug branch's raise is not taken
    assert not [n for n in notes if "a plain launch" in n]


NEEDS_A_CHECKPOINT_DIR = """
import fire, torch
from transformers import RobertaConfig, RobertaForMaskedLM


def train(checkpoint_dir: str = None, load_checkpoint_dir: str = None, h_dim: int = 256):
    if checkpoint_dir is None and load_checkpoint_dir is None:
        print("Need to specify one of checkpoint_dir or load_checkpoint_dir")
        return
    model = RobertaForMaskedLM(RobertaConfig(hidden_size=h_dim))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    for step in range(10):
        optimizer.step()
    return checkpoint_dir


if __name__ == "__main__":
    fire.Fire(train)
"""


def test_past_an_early_return_a_plain_launch_reaches_nothing_is_high_and_a_note_says_why():
    """Found on DeepSpeed's HelloDeepSpeed BERT: without flags ``train`` logs an error and
    returns before it builds anything, so what follows is the job of a launch with flags
    the defaults do not describe — as after a raise. The final ``return`` is no stop."""
    config, values, notes = _read(NEEDS_A_CHECKPOINT_DIR)
    assert values["optimizer"] == "adam" and config.optimizer.confidence != "high"
    assert [n for n in notes if "a plain launch" in n] == [
        "train.py:9: a plain launch returns from `train` here, so the rest of `train` runs "
        "only with flags the defaults leave unset: what is read there is not high confidence"
    ]
    given = NEEDS_A_CHECKPOINT_DIR.replace("(checkpoint_dir: str = None", '(checkpoint_dir="out"')
    config, _, notes = _read(given)
    assert config.optimizer.confidence == "high"
    assert not [n for n in notes if "a plain launch" in n]


TYPER_QLORA = """
import typer

app = typer.Typer()

@app.command()
def main(
    model_name: str = typer.Option("Qwen/Qwen2.5-0.5B", "--model-name", "-m"),
    max_length: int = typer.Option(512, "--max-length"),
    batch_size: int = typer.Option(default=2),
    output_dir: str = typer.Option(..., "--output-dir"),
    quantization_bits: int = typer.Option(4, "--bits"),
    lora_r: int = typer.Option(32, "--lora-r"),
):
    trainer = build_trainer(model_name, max_length, batch_size, quantization_bits, lora_r)
    trainer.train()

if __name__ == "__main__":
    app()
"""


def test_a_typer_entry_points_option_defaults_are_its_flags_defaults():
    """Found on a QLoRA SFT script: every option is ``typer.Option(DEFAULT, "--flag")``,
    and nothing was read (no model); the trainer lives in the project's package."""
    config, values, _ = _read(TYPER_QLORA)
    assert values["model"] == "Qwen/Qwen2.5-0.5B"
    assert (values["seq_len"], values["batch_size"]) == (512, 2)
    assert config.model.confidence == "medium"


def test_a_declared_lora_rank_and_quantisation_bits_make_it_qlora():
    _, values, _ = _read(TYPER_QLORA)
    assert (values["lora_rank"], values["quantize"]) == (32, "4bit")


def test_a_lora_flag_that_is_off_wins_over_a_declared_rank():
    source = TYPER_QLORA.replace(
        '    lora_r: int = typer.Option(32, "--lora-r"),',
        '    lora_r: int = typer.Option(32, "--lora-r"),\n'
        '    use_lora: bool = typer.Option(False, "--use-lora"),',
    )
    _, values, _ = _read(source)
    assert "lora_rank" not in values and "quantize" not in values


def test_autocasts_dtype_given_positionally_is_read():
    """Found on a real GPT script: ``autocast("cuda", torch.bfloat16)`` (``from torch.amp
    import autocast``) was read as fp16 — CUDA's default — with high confidence."""
    source = (
        "import torch\nfrom torch.amp import autocast\n"
        "for x, y in loader:\n"
        "    with autocast('cuda', torch.bfloat16):\n"
        "        loss = model(x, y)\n"
        "    loss.backward()\n"
    )
    config, values, _ = _read(source)
    assert values["dtype"] == "amp-bf16" and config.dtype.confidence == "high"
    config, values, _ = _read(source.replace("torch.bfloat16", "DTYPE"))
    assert "dtype" not in values or config.dtype.confidence != "high"  # not followed: not fp16


DEEPSPEED_FROM_FLAGS = """
import deepspeed, fire

def train(batch_size: int = 8, precision: str = "bf16"):
    settings = {
        "train_micro_batch_size_per_gpu": batch_size,
        precision: {"enabled": True},
        "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}},
    }
    engine, _, _, _ = deepspeed.initialize(model=model, config=settings)
    for batch in loader:
        engine.backward(engine(batch))
        engine.step()

if __name__ == "__main__":
    fire.Fire(train)
"""


def test_a_deepspeed_config_filled_from_flag_defaults_is_read_at_medium():
    """Found on DeepSpeed's BERT example: a config dict built from the entry point's
    parameters gave its batch size and precision with high confidence; a launch can
    change both."""
    config, values, _ = _read(DEEPSPEED_FROM_FLAGS)
    assert (values["batch_size"], values["dtype"], values["sharding"]) == (8, "bf16", "zero-1")
    assert all(
        getattr(config, name).confidence == "medium"
        for name in ("batch_size", "dtype", "sharding", "offload")
    )


def test_a_deepspeed_config_written_in_place_keeps_high_confidence():
    source = DEEPSPEED_FROM_FLAGS.replace(
        "config=settings", 'config={"zero_optimization": {"stage": 2}}'
    )
    config, values, _ = _read(source)
    assert values["sharding"] == "zero-2" and config.sharding.confidence == "high"


def test_a_weights_flag_saying_how_to_initialise_is_not_a_model_name():
    """Found on a GPT classification fine-tune: ``--weights`` (default "pretrained", or
    "random") was read as the model's name."""
    source = (
        "import argparse, torch\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--weights', type=str, default='pretrained')\n"
        "args = parser.parse_args()\n"
        "for x, y in loader:\n"
        "    torch.nn.functional.cross_entropy(model(x), y).backward()\n"
    )
    _, values, _ = _read(source)
    assert "model" not in values
    _, values, _ = _read(source.replace("'pretrained'", "'resnet50.pth'"))
    assert values["model"] == "resnet50"  # a checkpoint file still names its model


def test_a_model_chosen_by_a_string_test_on_a_flag_is_followed():
    """Found on a PEFT GLUE example: the model is picked by ``"roberta-large" in
    str(args.output_dir).lower()``; the string method left it unknown."""
    source = (
        "import argparse\nfrom transformers import AutoModelForSequenceClassification\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--output_dir', default='./runs/Roberta-Large-cola')\n"
        "args = parser.parse_args()\n"
        "if 'roberta-large' in str(args.output_dir).lower():\n"
        "    name = 'roberta-large'\n"
        "else:\n"
        "    name = 'roberta-base'\n"
        "model = AutoModelForSequenceClassification.from_pretrained(name)\n"
    )
    _, values, _ = _read(source)
    assert values["model"] == "roberta-large"
    _, values, _ = _read(source.replace("Roberta-Large", "base"))
    assert values["model"] == "roberta-base"


def _training_on_loader(indent: str = "", lr: str = "0.1") -> str:
    """A model, its optimizer and a loop over ``loader`` that steps it: what makes the
    small scripts below training scripts (their questions are about ``loader``)."""
    lines = (
        "model = torch.nn.Linear(4, 4).cuda()",
        f"opt = torch.optim.SGD(model.parameters(), lr={lr})",
        "for x in loader:",
        "    model(x).sum().backward()",
        "    opt.step()",
    )
    return "".join(f"{indent}{line}\n" for line in lines)


# --- where the reader and the engine's launch disagreed (bench/fold_agreement.py) -------


def test_a_modules_forward_runs_when_only_an_off_by_default_method_calls_it_by_name():
    """Found on llm.c's LLaMA script: ``generate`` (run only with a sampling flag) calls
    ``self.forward(...)``; the reader took that call for the only way into every class's
    ``forward`` and read all of them as off, so what a forward does was never read. A
    module's forward runs where the module is called, as far as a plain launch goes where
    it is built."""
    source = (
        "import argparse, torch\nimport torch.nn as nn\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--sample', action='store_true')\n"
        "args = parser.parse_args()\n"
        "class Layer(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(256, 256)\n"
        "    def forward(self, x):\n"
        "        return checkpoint(self.proj, x, use_reentrant=False)\n"
        "class Stack(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleList([Layer() for _ in range(3)])\n"
        "    def forward(self, x):\n"
        "        for layer in self.layers:\n"
        "            x = layer(x)\n"
        "        return x\n"
        "    def generate(self, x):\n"
        "        return self.forward(x)\n"
        "model = Stack().cuda()\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "for step in range(10):\n"
        "    model(torch.randn(8, 256)).sum().backward()\n"
        "    opt.step()\n"
        "if args.sample:\n"
        "    model.generate(torch.randn(1, 256))\n"
    )
    _, values, _ = _read(source)
    assert values["checkpointing"] is True
    # a module class only an off-by-default branch builds: its forward stays off
    off = source.replace(
        "model = Stack().cuda()",
        "model = torch.nn.Linear(256, 256)\nif args.sample:\n    model = Stack()",
    )
    _, values, _ = _read(off)
    assert "checkpointing" not in values


def test_the_nearest_assignment_is_the_last_before_the_use_in_the_file_not_the_deepest():
    """The reader listed assignments breadth-first, so ``batch = 16`` inside an ``if`` came
    after the later top-level ``batch = 32`` and was read as the loader's batch."""
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "def main():\n"
        "    batch = 8\n"
        "    if True:\n"
        "        batch = 16\n"
        "    batch = 32\n"
        "    loader = DataLoader(range(64), batch_size=batch)\n"
        + _training_on_loader("    ")
        + "main()\n"
    )
    _, values, _ = _read(source)
    assert values["batch_size"] == 32
    _, values, _ = _read(source.replace("    batch = 32\n", ""))
    assert values["batch_size"] == 16  # the branch a plain launch takes


def test_an_augmented_assignment_rebinds_the_name():
    """``batch *= 2`` was invisible: the value before it was read as the loader's batch."""
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "batch = 4\n"
        "batch *= 2\n"
        "loader = DataLoader(range(64), batch_size=batch)\n" + _training_on_loader()
    )
    _, values, _ = _read(source)
    assert values["batch_size"] == 8
    # rebound by a loop's variable: no value of the job
    _, values, _ = _read(source.replace("batch *= 2\n", "for batch in (1, 2):\n    pass\n"))
    assert "batch_size" not in values


def test_a_gate_on_a_step_counter_opens_every_n_steps():
    """rasbt's training loop: ``global_step = -1`` before the loop, ``global_step += 1`` in
    it, then ``if global_step % eval_freq == 0:``. The reader folded the test with -1 and
    read the evaluation branch as off; the counter changes each iteration, and a gate
    every N steps runs during a launch."""
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "model = torch.nn.Linear(4, 4).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "eval_freq = 5\n"
        "global_step = -1\n"
        "for x in DataLoader(range(64), batch_size=16):\n"
        "    model(x).sum().backward()\n"
        "    opt.step()\n"
        "    global_step += 1\n"
        "    if global_step % eval_freq == 0:\n"
        "        val_loader = DataLoader(range(64), batch_size=64)\n"
    )
    _, values, _ = _read(source)
    assert values["batch_size"] == 16 and values["eval_batch_size"] == 64
    # a test a counter does not drive is still decided: off stays off
    _, values, _ = _read(source.replace("global_step % eval_freq == 0", "eval_freq % 2 == 0"))
    assert "eval_batch_size" not in values


def test_a_module_flag_a_function_rebinds_as_global_is_not_its_first_value():
    """llm.c's pattern: ``FLASH = 0`` at the top, ``global FLASH; FLASH = args.flash`` in
    ``main``, ``if FLASH:`` in the model's forward. The module's first value was read in
    the forward, whatever the flag's default; a function that runs after ``main`` sees the
    flag's value, so the module's own is no longer the job's."""
    source = (
        "import argparse, torch\nimport torch.nn as nn\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "CHECKPOINT = False\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(64, 64)\n"
        "    def forward(self, x):\n"
        "        if CHECKPOINT:\n"
        "            return checkpoint(self.proj, x, use_reentrant=False)\n"
        "        return self.proj(x)\n"
        "def main():\n"
        "    global CHECKPOINT\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--checkpoint', type=int, default=1)\n"
        "    args = parser.parse_args()\n"
        "    CHECKPOINT = args.checkpoint\n"
        "    model = Net().cuda()\n"
        "    opt = torch.optim.AdamW(model.parameters())\n"
        "    for step in range(10):\n"
        "        model(torch.randn(8, 64)).sum().backward()\n"
        "        opt.step()\n"
        "main()\n"
    )
    config, values, _ = _read(source)
    assert values.get("checkpointing") is True
    # the engine follows the rebinding to the flag's default where ``main`` builds the
    # model: the field is as sure as a ``checkpoint`` gated on the flag directly
    direct, _, _ = _read(
        source.replace("        if CHECKPOINT:\n", "        if True:\n").replace(
            "def main():\n    global CHECKPOINT\n", "def main():\n"
        )
    )
    assert (
        dict(config.fields())["checkpointing"].confidence
        == dict(direct.fields())["checkpointing"].confidence
    )
    # without the ``global``, ``main``'s CHECKPOINT is its own: the forward reads False
    _, values, _ = _read(source.replace("    global CHECKPOINT\n", ""))
    assert "checkpointing" not in values


def test_a_class_built_by_its_own_factory_method_runs_its_forward():
    """llm.c's GPT-2 script builds ``GPT(config)`` inside ``GPT.from_pretrained`` (the
    default path) and directly only for ``--model d12``-style flags (off). Construction
    sites inside the class were left out, so every forward was read as off."""
    source = (
        "import argparse, torch\nimport torch.nn as nn\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, width):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(width, width)\n"
        "    def forward(self, x):\n"
        "        return checkpoint(self.proj, x, use_reentrant=False)\n"
        "    @classmethod\n"
        "    def from_name(cls, name):\n"
        "        return Net({'small': 64, 'large': 256}[name])\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--model', default='small')\n"
        "args = parser.parse_args()\n"
        "if args.model.startswith('d'):\n"
        "    model = Net(int(args.model[1:]))\n"
        "else:\n"
        "    model = Net.from_name(args.model)\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "for step in range(10):\n"
        "    model(torch.randn(8, 64)).sum().backward()\n"
        "    opt.step()\n"
    )
    _, values, _ = _read(source)
    assert values["checkpointing"] is True


def test_a_module_level_use_reads_the_assignment_before_it_not_a_later_one():
    """At the top level a later assignment has not run yet when a statement reads the
    name (a function called later does see it)."""
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "batch = 4\n"
        "loader = DataLoader(range(64), batch_size=batch)\n"
        "batch = 8\n" + _training_on_loader()
    )
    _, values, _ = _read(source)
    assert values["batch_size"] == 4


def test_a_key_the_script_sets_in_its_dict_of_flags_is_read_not_the_flags_default():
    """fsdp_qlora's pattern: the flags become a dict, then ``if lora_target_modules ==
    "all": args["lora_target_modules"] = [...]``; the worker reads
    ``args["lora_target_modules"]``. The flag's default ("all") was read instead."""
    source = (
        "import argparse, torch\nfrom peft import LoraConfig, get_peft_model\n"
        "from transformers import AutoModelForCausalLM\n"
        "def worker(args):\n"
        "    model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
        "    config = LoraConfig(r=args['lora_rank'], target_modules=args['lora_target_modules'])\n"
        "    model = get_peft_model(model, config)\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--lora_rank', type=int, default=8)\n"
        "    parser.add_argument('--lora_target_modules', default='all')\n"
        "    args = vars(parser.parse_args())\n"
        "    if args['lora_target_modules'] == 'all':\n"
        "        args['lora_target_modules'] = ['q_proj', 'v_proj']\n"
        "    worker(args)\n"
        "main()\n"
    )
    _, values, _ = _read(source)
    assert values["lora_targets"] == ("q_proj", "v_proj")
    # set under a flag that is off by default: the default stands
    _, values, _ = _read(source.replace("== 'all'", "== 'none'"))
    assert values["lora_targets"] == "all"


def test_a_dict_changed_in_place_after_it_is_built_is_read_changed():
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "def main():\n"
        "    settings = {'batch_size': 4, 'lr': 1e-3}\n"
        "    settings['batch_size'] = 32\n"
        "    loader = DataLoader(range(64), batch_size=settings['batch_size'])\n"
        + _training_on_loader("    ", lr="settings['lr']")
        + "main()\n"
    )
    _, values, _ = _read(source)
    assert values["batch_size"] == 32
    _, values, _ = _read(source.replace("= 32", "= compute()"))
    assert "batch_size" not in values  # set to something not followed: unknown, not 4


def test_trls_parser_over_a_named_tuple_of_configs_brings_the_configs_defaults():
    """TRL's own training scripts: ``dataclass_types = (ScriptArguments, GRPOConfig,
    ModelConfig)`` then ``TrlParser(dataclass_types)``. Neither the parser (a subclass of
    ``HfArgumentParser``) nor the name of the tuple was followed, nor TRL's configs beyond
    SFT and DPO, so the job was read as fp32 without checkpointing; TRL's configs turn
    both on by default (TRL >= 0.20)."""
    source = (
        "from trl import GRPOConfig, GRPOTrainer, ModelConfig, ScriptArguments, TrlParser\n"
        "def main(script_args, training_args, model_args):\n"
        "    trainer = GRPOTrainer(model=model_args.model_name_or_path, args=training_args)\n"
        "    trainer.train()\n"
        "def make_parser():\n"
        "    dataclass_types = (ScriptArguments, GRPOConfig, ModelConfig)\n"
        "    return TrlParser(dataclass_types)\n"
        "if __name__ == '__main__':\n"
        "    parser = make_parser()\n"
        "    main(*parser.parse_args_and_config())\n"
    )
    _, values, _ = _read(source)
    assert values["dtype"] == "amp-bf16"
    assert values["checkpointing"] is True
    assert values["mode"] == "train"
    assert "seq_len" not in values  # GRPO's length is its prompt plus what it generates
    _, values, _ = _read(
        source.replace("GRPOConfig", "KTOConfig").replace("GRPOTrainer", "KTOTrainer")
    )
    assert values["seq_len"] == 1024


def test_no_fp32_is_claimed_when_the_script_picks_its_precision_at_launch():
    """torchtune's recipes: ``self._dtype = training.get_dtype(cfg.dtype, device=...)`` from
    the YAML config a launch names (bf16 in every shipped config). With no autocast and no
    16-bit weights in sight the job was read as fp32 (medium); it is left unknown now, with
    a note asking for ``--dtype``."""
    source = (
        "import torch\nfrom torchtune import config, training\n"
        "class Recipe:\n"
        "    def __init__(self, cfg):\n"
        "        self._dtype = training.get_dtype(cfg.dtype, device=torch.device('cuda'))\n"
        "    def train(self):\n"
        "        for batch in self._loader:\n"
        "            self._model(batch).sum().backward()\n"
        "            self._optimizer.step()\n"
        "@config.parse\n"
        "def recipe_main(cfg):\n"
        "    recipe = Recipe(cfg)\n"
        "    recipe.train()\n"
        "if __name__ == '__main__':\n"
        "    recipe_main()\n"
    )
    _, values, notes = _read(source)
    assert values["mode"] == "train" and "dtype" not in values
    assert any("the precision is chosen at launch" in note for note in notes), notes
    # a dtype the reader can follow says nothing against the default
    _, values, _ = _read(
        source.replace(
            "training.get_dtype(cfg.dtype, device=torch.device('cuda'))", "torch.float32"
        )
    )
    assert values["dtype"] == "fp32"


QUIET_STOPS = """
import psutil, torch


def service_running(name):
    running = False
    for process in psutil.process_iter(["name"]):
        if name in process.info["name"]:
            running = True
            break
    return running


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def report(prefix=""):
    total = torch.cuda.mem_get_info()[1] if service_running("nvidia-persistenced") else 0
    if total == 0:
        print(prefix, "no GPU")
        return
    print(prefix, total)


def main():
    if not service_running("ollama"):
        raise RuntimeError("start ollama first")
    device = pick_device()
    report()
    model = torch.nn.Linear(8, 8).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


if __name__ == "__main__":
    main()
"""


def test_no_stop_note_for_a_helpers_control_flow_or_a_test_on_computed_values():
    """Found on real code (an Ollama evaluation script, a VRAM report helper, a device
    picker): a helper returning early is its own control flow, and a gate on what the
    script computes (a process scan the engine folds to its first value, a memory total)
    is the engine's guess from the default path — neither is "a plain launch gives up
    without flags", so no note says so. Only gates on flags and parameters get one."""
    _, _, notes = _read(QUIET_STOPS)
    assert not [n for n in notes if "a plain launch raises" in n or "returns from" in n], notes
