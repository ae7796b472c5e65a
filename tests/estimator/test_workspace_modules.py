"""nn.Module classes in the workspace: a static parameter count from their layer constructors.

Expected counts are computed by hand from torch's layer definitions (weights + biases;
BatchNorm running statistics are buffers, not parameters), each written out below.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

from torchward.analysis.job.runconfig import read_script, read_source

from torchward.cli import main

TRANSFORMER = """
import torch
import torch.nn as nn

HIDDEN = 256

class Block(nn.Module):
    def __init__(self, d, mult=4):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 8, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, d * mult), nn.GELU(), nn.Linear(d * mult, d))

class Net(nn.Module):
    def __init__(self, vocab=1000, d=HIDDEN, layers=4):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, self.d)
        self.pos = nn.Parameter(torch.zeros(1, 128, d))
        self.blocks = nn.ModuleList([Block(d) for _ in range(layers)])
        self.head = nn.Linear(d, vocab, bias=False)
        self.scale = d ** -0.5

model = Net(layers=6)
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    model(x).sum().backward()
    opt.step()
"""
# Block(256): LayerNorm 2·256 = 512; MultiheadAttention 4·256² + 4·256 = 263,168;
# MLP 256·1024 + 1024 + 1024·256 + 256 = 525,568 → 789,248.
# Net: embedding 256,000 + pos 32,768 + 6 blocks 4,735,488 + head 256,000 = 5,280,256.
NET_PARAMS = 5_280_256

CNN = """
import torch
from torch import nn

class Small(nn.Module):
    def __init__(self, classes):
        super().__init__()
        layers = []
        for i in range(3):
            layers.append(nn.Conv2d(3 if i == 0 else 16, 16, kernel_size=3, padding=1))
            layers.append(nn.BatchNorm2d(16))
            layers.append(nn.ReLU())
        self.features = nn.Sequential(*layers)
        self.rnn = nn.LSTM(16, 32, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(64, classes)

net = Small(classes=NUM_CLASSES)
"""
# convs 448 + 2·2,320; BatchNorm 3·32; LSTM (bidirectional, 2 layers):
# 2·(4·32·(16+32) + 2·4·32) + 2·(4·32·(64+32) + 2·4·32) = 12,800 + 25,088; fc 64·10 + 10.


def test_a_script_trained_custom_transformer_is_counted_exactly_with_its_source():
    config, notes = read_source(TRANSFORMER, "train.py")
    assert config.model.value == "Net" and config.model.source == "train.py:24"
    assert config.params.value == NET_PARAMS and config.params.confidence == "high"
    assert config.params.source == "train.py:24 (Net's layers)" and not notes


def test_loops_conditional_sizes_rnns_and_constants_are_followed():
    config, notes = read_source("NUM_CLASSES = 10\n" + CNN, "train.py")
    assert config.params.value == 448 + 2 * 2_320 + 96 + 12_800 + 25_088 + 650
    assert not notes


def test_untraceable_layers_are_named_and_lower_the_confidence_never_invented():
    source = TRANSFORMER.replace(
        "self.head = nn.Linear(d, vocab, bias=False)",
        "self.head = nn.Linear(d, config.vocab)\n        self.extra = Backbone(pretrained=True)",
    )
    config, notes = read_source(source, "train.py")
    assert config.params.value == NET_PARAMS - 256_000 and config.params.confidence == "low"
    assert any("nn.Linear(...) (sizes not traced)" in n and "Backbone(...)" in n for n in notes)


def test_unknown_argument_leaves_the_layers_it_sizes_unknown():
    config, notes = read_source(
        "NUM = 10\n" + CNN.replace("NUM_CLASSES", "args.classes"), "train.py"
    )
    assert config.params.confidence == "low" and any(
        "fc" not in n and "nn.Linear" in n for n in notes
    )


def test_a_catalog_model_named_by_the_script_wins_over_its_wrapper_class():
    source = (
        "import torch.nn as nn\nfrom transformers import AutoModel\n"
        "class Classifier(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.bert = AutoModel.from_pretrained('bert-base-uncased')\n"
        "        self.head = nn.Linear(768, 2)\n"
        "model = Classifier()\n"
    )
    config, _ = read_source(source, "train.py")
    assert config.model.value == "bert-base-uncased" and config.params is None


def test_classes_imported_from_a_sibling_file_are_counted(tmp_path):
    body = TRANSFORMER.split("model = Net")[0]
    (tmp_path / "models.py").write_text(body)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom models import Net\nmodel = Net(d=128, layers=2)\n"
        "loss = model(x).sum()\nloss.backward()\n"
    )
    config, _ = read_script(str(tmp_path / "train.py"))
    # Block(128): 256 + (4·128² + 4·128) + (128·512 + 512 + 512·128 + 128) = 198,016
    assert config.params.value == 128_000 + 128 * 128 + 2 * 198_016 + 128_000


def test_estimate_uses_the_count_and_widens_for_unsized_layers(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRANSFORMER)
    exact = _json("estimate", str(script), "--gpu", "t4", "--batch-size", "4")
    assert exact["model"] == "Net" and exact["params"] == NET_PARAMS
    assert exact["terms"]["weights"] == NET_PARAMS * 4 and exact["max_batch_size"] is None
    assert any("not modelled" in n for n in exact["notes"]) and exact["confidence"] == "low"
    script.write_text(TRANSFORMER.replace("self.scale = d ** -0.5", "self.extra = Mystery(d)"))
    widened = _json("estimate", str(script), "--gpu", "t4", "--batch-size", "4")
    assert widened["params"] == NET_PARAMS and widened["config"]["params"]["confidence"] == "low"
    assert widened["high_bytes"] > exact["high_bytes"] * 1.2


def _json(*argv: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*argv, "--format", "json"]) == 0
    return json.loads(out.getvalue())


RECURRENT = """
import torch
from torch import nn

class Tagger(nn.Module):
    def __init__(self, width=32, layers=2, dropout=0.3, pad=PAD):
        super().__init__()
        self.conv = nn.Conv1d(8, width, kernel_size=3, padding=pad)
        # the usual guard: nn.LSTM warns about dropout on a single layer
        self.rnn = nn.LSTM(width, width, num_layers=layers,
                           dropout=dropout if layers > 1 else 0, bidirectional=True)
        self.out = nn.Linear(width * 2 if layers >= 2 else width, 5)

model = Tagger()
"""
# conv 8·32·3 + 32 = 800; LSTM: 2·(4·32·(32+32) + 8·32) + 2·(4·32·(64+32) + 8·32)
# = 16,896 + 25,088; out 64·5 + 5 = 325.
RECURRENT_PARAMS = 800 + 16_896 + 25_088 + 325


def test_an_argument_that_sizes_nothing_may_be_unknown():
    """Found on a real LSTM classifier: its dropout, chosen by ``layers > 1``, left the
    whole LSTM unsized; a conv's padding read from the command line sizes nothing."""
    config, notes = read_source("PAD = args.pad\n" + RECURRENT, "train.py")
    assert config.params.value == RECURRENT_PARAMS, notes
    assert not any("not sized" in n for n in notes)


def test_an_unknown_argument_that_sizes_the_layer_still_leaves_it_unsized():
    source = RECURRENT.replace(
        "nn.Linear(width * 2 if layers >= 2 else width, 5)",
        "nn.Linear(width * 2 if layers >= LIMIT else width, 5)",
    )
    config, notes = read_source("PAD = 1\n" + source, "train.py")
    assert config.params.value == RECURRENT_PARAMS - 325 and config.params.confidence == "low"
    assert any("nn.Linear(...) (sizes not traced)" in n for n in notes)


ENCODER_DECODER = """
import torch
from torch import nn

class Pair(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.a = nn.Conv2d(i, o, 3, padding=1)
        self.b = nn.Conv2d(o, o, 3, padding=1)

class Net(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.down = nn.ModuleList([Pair(i, o) for i, o in [(channels, 16), (16, 32), (32, 64)]])
        self.up = nn.ModuleList([nn.ConvTranspose2d(64 // 2**k, 32 // 2**k, 2, stride=2)
                                 for k in range(2)])

model = Net(CHANNELS)
"""


def _pair(i: int, o: int) -> int:
    return (i * o * 9 + o) + (o * o * 9 + o)


# up: ConvTranspose2d(64, 32, 2) 64·32·4 + 32 = 8,224 and (32, 16, 2) 32·16·4 + 16 = 2,064
UP = 8_224 + 2_064


def test_a_comprehension_over_size_pairs_counts_each_element_with_its_own_sizes():
    """Found on a real UNet: ``[DoubleConvolution(i, o) for i, o in [(3, 64), (64, 128)...]]``
    was left uncounted (half the model's parameters)."""
    config, notes = read_source("CHANNELS = 3\n" + ENCODER_DECODER, "train.py")
    assert config.params.value == _pair(3, 16) + _pair(16, 32) + _pair(32, 64) + UP, notes
    assert config.params.confidence != "low"


def test_one_unknown_pair_leaves_only_its_own_element_unsized():
    config, notes = read_source("CHANNELS = args.channels\n" + ENCODER_DECODER, "train.py")
    assert config.params.value == _pair(16, 32) + _pair(32, 64) + UP
    assert config.params.confidence == "low" and any(
        "Pair(i, o) (sizes not traced)" in n for n in notes
    )


COMPOSED = """
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.rnn = nn.GRU(width, width)

class Decoder(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.rnn = nn.GRU(width, width)
        self.out = nn.Linear(width, vocab)

class Translator(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device

encoder = Encoder(1000, 64)
decoder = Decoder(1200, 64)
model = Translator(encoder, decoder, "cuda")
"""
# GRU(64, 64): 3·64·(64 + 64) + 2·3·64 = 24,960
ENCODER = 1000 * 64 + 24_960
DECODER = 1200 * 64 + 24_960 + 64 * 1200 + 1200


def test_modules_handed_to_a_wrapper_are_counted_in_it():
    """Found on a real sequence-to-sequence notebook: ``Seq2Seq(encoder, decoder, device)``
    was read as its encoder alone, the decoder's weights missing from the lower bound."""
    config, _ = read_source(COMPOSED, "train.py")
    assert config.model.value == "Translator"
    assert config.params.value == ENCODER + DECODER


def test_a_wrapper_is_not_counted_for_a_plain_value_it_keeps():
    source = COMPOSED.replace("self.device = device", "self.scale = device")
    config, _ = read_source(source.replace('"cuda"', "2"), "train.py")
    assert config.params.value == ENCODER + DECODER


def test_modules_built_in_the_wrappers_argument_list_are_counted_in_it():
    source = COMPOSED.replace(
        'model = Translator(encoder, decoder, "cuda")',
        'model = Translator(Encoder(1000, 64), Decoder(1200, 64), "cuda")',
    )
    config, _ = read_source(source, "train.py")
    assert config.model.value == "Translator"
    assert config.params.value == ENCODER + DECODER


CLONED = """
import copy
import torch
import torch.nn as nn


def clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.mix = nn.Linear(width, width)

    def forward(self, x):
        return self.mix(x)


class Stack(nn.Module):
    def __init__(self, block, depth):
        super().__init__()
        self.blocks = clones(block, depth)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


model = Stack(Block(256), 6).cuda()
optimizer = torch.optim.AdamW(model.parameters())
for step in range(10):
    model(torch.randn(4, 256, device="cuda")).sum().backward()
    optimizer.step()
"""


def test_layers_a_local_helper_clones_are_counted_n_times():
    """The annotated-transformer pattern: ``self.layers = clones(layer, N)`` with a helper
    of the file returning ``nn.ModuleList([copy.deepcopy(module) for _ in range(N)])``.
    The helper's call counted as nothing, so the model was read, with high confidence, as
    the one ``Block`` built in the argument list."""
    config, _ = read_source(CLONED, "train.py")
    assert config.model.value == "Stack"
    assert config.params.value == 6 * (256 * 256 + 256)


def test_a_helper_the_counter_cannot_follow_is_unknown_not_zero():
    source = CLONED.replace(
        "    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])\n",
        "    if n > 3:\n        return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])\n"
        "    return nn.ModuleList([module])\n",
    )
    config, notes = read_source(source, "train.py")
    # the model is the wrapper, whose layers are not known: not the block handed to it
    assert config.model is None and config.params is None
    assert any(note.startswith("Stack: no parameter counted") for note in notes), notes
    assert any("clones(...) (not followed)" in note for note in notes), notes


def test_layers_cloned_by_a_helper_of_another_project_module_are_counted(tmp_path):
    """labml's transformers keep their layers as ``clone_module_list(layer, n_layers)``,
    a function of the project's ``utils`` module."""
    helper = CLONED.split("class Block")[0]
    (tmp_path / "utils.py").write_text(helper)
    (tmp_path / "train.py").write_text(
        "import torch\nimport torch.nn as nn\nfrom utils import clones\n\n\nclass Block"
        + CLONED.split("class Block", 1)[1]
    )
    config, _ = read_script(str(tmp_path / "train.py"))
    assert config.model.value == "Stack"
    assert config.params.value == 6 * (256 * 256 + 256)


BUILT_BY_METHODS = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, width=256, depth=4):
        super().__init__()
        self.channels = 32
        self.embed = self._widen(width)
        self.blocks = self._make_blocks(width, depth)
        self._build_head(10)

    def _widen(self, width):
        layer = nn.Linear(self.channels, width)
        self.channels = width
        return layer

    def _make_blocks(self, width, depth):
        return nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])

    def _build_head(self, classes):
        self.head = nn.Linear(self.channels, classes)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


model = Net().cuda()
optimizer = torch.optim.AdamW(model.parameters())
for step in range(10):
    model(torch.randn(8, 32, device="cuda")).sum().backward()
    optimizer.step()
"""


def test_layers_the_modules_own_methods_build_are_counted():
    """``self.blocks = self._make_blocks(width, depth)`` and ``self._build_head(10)`` in
    ``__init__``: the method calls counted as nothing, and the model was read, with high
    confidence, at 4% of its size. What a method sets on ``self`` (a running channel count)
    is what the rest of ``__init__`` reads."""
    config, _ = read_source(BUILT_BY_METHODS, "train.py")
    assert config.model.value == "Net"
    embed, blocks, head = 32 * 256 + 256, 4 * (256 * 256 + 256), 256 * 10 + 10
    assert config.params.value == embed + blocks + head
    assert config.params.confidence == "high"


EMA = """import copy
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(512, 512)

    def forward(self, x):
        return self.fc(x)


class ModelEMA(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.module = copy.deepcopy(model)


model = Net().cuda()
ema = ModelEMA(model)
opt = torch.optim.AdamW(model.parameters())
for step in range(10):
    model(torch.randn(8, 512, device="cuda")).sum().backward()
    opt.step()
"""


def test_a_model_handed_to_a_wrapper_counted_in_full_stays_the_model():
    """An EMA copy (``ModelEMA(model)`` keeping ``copy.deepcopy(model)``) is counted in
    full, as large as the model: the model trained is still ``Net``, as before the rule that
    a module handed to a wrapper the counter cannot follow is never the model."""
    config, _ = read_source(EMA, "train.py")
    assert config.model.value == "Net"
    assert config.params.value == 512 * 512 + 512
