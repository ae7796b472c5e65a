"""Models for calibration, built from the estimator's own catalog entries (no downloads).

Each transformers model is ``AutoModelFor*.from_config(AutoConfig.for_model(model_type,
**catalog_config))`` — the same structural fields the estimator reads from
``estimator/data/models_*.json``; fields a catalog entry leaves out take transformers'
defaults (for both). The task head follows the estimator's conventions: decoders and
encoder-decoders train as language models (labels = inputs), encoders as 2-class sequence
classifiers, ViT as a 1000-class image classifier; the oracle families (bench/oracle_memory.py)
add transformers' image classifiers (ViTs, CNNs) and dual towers with their contrastive loss. torchvision ResNets are rebuilt here
layer for layer as torchvision builds them (in-place ReLU, BatchNorm, Bottleneck /
BasicBlock, zero-init residual off): torchvision is not a dependency.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]


def catalog() -> dict[str, dict]:
    out = {}
    for f in sorted(glob.glob(str(ROOT / "estimator" / "data" / "models_*.json"))):
        for m in json.loads(Path(f).read_text("utf-8"))["models"]:
            out[m["name"]] = m
    return out


# -- torchvision ResNet, rebuilt ---------------------------------------------------------------
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64):
        super().__init__()
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, groups=1, width_per_group=64):
        super().__init__()
        self.inplanes, self.groups, self.base_width = 64, groups, width_per_group
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2)
        self.layer3 = self._make_layer(block, 256, layers[2], 2)
        self.layer4 = self._make_layer(block, 512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width)]
        self.inplanes = planes * block.expansion
        layers += [
            block(self.inplanes, planes, groups=self.groups, base_width=self.base_width)
            for _ in range(1, blocks)
        ]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# -- builders -------------------------------------------------------------------------------------
def hf_config(entry: dict, **overrides):
    from transformers import AutoConfig

    fields = dict(entry["config"])
    fields.update(overrides)
    return AutoConfig.for_model(entry["model_type"], **fields)


def build(name: str, mode: str, seq: int, attention: str = "sdpa", overrides: dict | None = None):
    """(model, kind) for catalog entry ``name``; kind picks the batch and the loss.

    A family transformers runs without SDPA (BLOOM, DeBERTa-v2) is built with eager
    attention, as ``from_pretrained`` does by default for it."""
    try:
        return _build(name, mode, seq, attention, overrides)
    except ValueError as error:
        if attention != "sdpa" or "does not support an attention implementation" not in str(error):
            raise
        return _build(name, mode, seq, "eager", overrides)


def _build(name: str, mode: str, seq: int, attention: str, overrides: dict | None):
    entry = dict(catalog()[name])
    entry["config"] = dict(entry["config"], **(overrides or {}))
    mt = entry["model_type"]
    if mt == "torchvision-resnet":
        c = entry["config"]
        block = Bottleneck if c["block"] == "bottleneck" else BasicBlock
        return ResNet(
            block,
            c["layers"],
            groups=c.get("groups", 1),
            width_per_group=c.get("width_per_group", 64),
        ), "image"
    import transformers as tf

    extra = {"attn_implementation": attention}
    if mt == "vit":
        return tf.ViTForImageClassification(hf_config(entry, **extra)), "vit"
    if entry.get("kind") in ("vit", "hf-cnn"):  # an oracle family (bench/oracle_memory.py)
        cfg = hf_config(entry, **extra)
        classes = tf.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING[type(cfg)]
        first = classes[0] if isinstance(classes, tuple) else classes  # DeiT: no teacher
        return first(cfg), entry["kind"]
    if entry.get("kind") == "dual-tower":  # CLIP / SigLIP: both towers and the contrastive loss
        return tf.AutoModel.from_config(hf_config(entry, **extra)), "dual-tower"
    kind = entry.get("kind") or {
        "bert": "encoder",
        "roberta": "encoder",
        "distilbert": "encoder",
        "xlm-roberta": "encoder",
        "deberta-v2": "encoder",
        "t5": "seq2seq",
        "bart": "seq2seq",
    }.get(mt, "decoder")
    if kind == "encoder":
        cfg = hf_config(entry, num_labels=2, **extra)
        return tf.AutoModelForSequenceClassification.from_config(cfg), kind
    if kind == "seq2seq":
        if mt == "t5":  # the checkpoints' config.json: pad = decoder start = 0, eos = 1
            extra.update(pad_token_id=0, decoder_start_token_id=0, eos_token_id=1)
        return tf.AutoModelForSeq2SeqLM.from_config(hf_config(entry, **extra)), kind
    return tf.AutoModelForCausalLM.from_config(hf_config(entry, **extra)), kind


def batch_maker(kind: str, model, batch: int, seq: int, image: int, device: str):
    """A function making one fresh batch (on ``device``) for ``kind``."""
    cfg = getattr(model, "config", None)
    vocab = getattr(cfg, "vocab_size", 0)

    def make():
        if kind == "image":
            return {
                "x": torch.randn(batch, 3, image, image, device=device),
                "labels": torch.randint(0, 1000, (batch,), device=device),
            }
        if kind in ("vit", "hf-cnn"):
            # a ViT casts the fp32 pixels to its patch embedding's dtype itself; a CNN's first
            # convolution does not, so a pure 16-bit CNN is fed pixels of its own dtype
            dtype = next(model.parameters()).dtype if kind == "hf-cnn" else torch.float32
            return {
                "pixel_values": torch.randn(batch, 3, image, image, device=device, dtype=dtype),
                "labels": torch.randint(0, 1000, (batch,), device=device),
            }
        if kind == "dual-tower":  # captions padded to the text tower's positions
            text = cfg.text_config
            ids = torch.randint(0, text.vocab_size, (batch, text.max_position_embeddings))
            return {
                "input_ids": ids.to(device),
                "pixel_values": torch.randn(batch, 3, image, image, device=device),
                "return_loss": True,
            }
        ids = torch.randint(0, vocab, (batch, seq), device=device)
        if kind == "encoder":
            return {"input_ids": ids, "labels": torch.randint(0, 2, (batch,), device=device)}
        return {"input_ids": ids, "labels": ids}  # decoder LM / seq2seq with target = source

    return make


def loss_of(kind: str):
    """(loss, outputs) of one batch: the outputs are kept, as a training loop keeps them."""
    if kind == "image":

        def loss(model, b):
            out = model(b["x"])
            return nn.functional.cross_entropy(out, b["labels"]), out

        return loss

    def hf_loss(model, b):
        out = model(**b)
        return out.loss, out

    return hf_loss


def forward_of(kind: str, use_cache: bool | None = None):
    """A no_grad forward of one batch; ``use_cache`` passed to the call when given (else the
    model's config decides, as a plain ``model(**batch)`` does)."""
    if kind == "image":
        return lambda model, b: model(b["x"])

    def fwd(model, b):
        inputs = {k: v for k, v in b.items() if k not in ("labels", "return_loss")}
        if use_cache is not None:
            inputs["use_cache"] = use_cache
        if kind == "seq2seq":
            inputs["decoder_input_ids"] = b["labels"]
        return model(**inputs)

    return fwd
