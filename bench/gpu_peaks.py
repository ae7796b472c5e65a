"""Measure real peak GPU memory of small, well-known training jobs (run on a CUDA machine).

Issue 26 asks that the estimate of PyTorch's MNIST example and of nanoGPT's ``train.py``
lie within 25% of a *measured* peak. This script is that measurement: it restates each job
in a few lines (the model, the batch, the precision, the optimizer of the script's default
run), runs a few real steps on the GPU and records ``torch.cuda.max_memory_allocated`` and
``max_memory_reserved`` per phase. It is not a test (CI has no GPU); its output is kept
with the date, GPU and torch version in ``tests/estimator/data/measured_peaks.json``, which
the tests compare the estimate with.

    python3 bench/gpu_peaks.py --out measured.json [--compile]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch import nn

MIB = 1024 * 1024


def _reset() -> None:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def _peaks() -> dict[str, float]:
    torch.cuda.synchronize()
    return {
        "allocated_mib": torch.cuda.max_memory_allocated() / MIB,
        "reserved_mib": torch.cuda.max_memory_reserved() / MIB,
    }


class MnistNet(nn.Module):
    """The net of PyTorch's MNIST example: two 3×3 convs, max-pool, two dropouts, two FCs."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(self.dropout1(x), 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def mnist() -> dict[str, object]:
    """Batch 64 of 1×28×28, Adadelta, fp32; then the no-grad test pass at batch 1000."""
    device = torch.device("cuda")
    model = MnistNet().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    _reset()
    for _ in range(3):
        data = torch.randn(64, 1, 28, 28, device=device)
        target = torch.randint(0, 10, (64,), device=device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
    train = _peaks()
    model.eval()
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        for _ in range(2):
            data = torch.randn(1000, 1, 28, 28, device=device)
            model(data).argmax(dim=1)
    evaluation = _peaks()
    params = sum(p.numel() for p in model.parameters())
    return {"params": params, "train": train, "eval": evaluation}


class Block(nn.Module):
    """A GPT-2 block as nanoGPT writes it: pre-LN, causal SDPA, 4× GELU MLP, no biases."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width, bias=False)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.ln_2 = nn.LayerNorm(width, bias=False)
        self.fc = nn.Linear(width, 4 * width, bias=False)
        self.fc_out = nn.Linear(4 * width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc_out(F.gelu(self.fc(self.ln_2(x))))


class Gpt(nn.Module):
    """GPT-2 small (12 layers, 12 heads, 768 wide, vocab 50304, 1024 positions), tied head."""

    def __init__(self, layers: int = 12, heads: int = 12, width: int = 768) -> None:
        super().__init__()
        self.wte = nn.Embedding(50304, width)
        self.wpe = nn.Embedding(1024, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, bias=False)
        self.lm_head = nn.Linear(width, 50304, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def nanogpt(compile_model: bool) -> dict[str, object]:
    """nanoGPT's default run: batch 12 × 1024, bf16 autocast, fused AdamW, 2 micro-steps."""
    device = torch.device("cuda")
    model = Gpt().to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True
    )
    step = torch.compile(model) if compile_model else model
    _reset()
    for _ in range(3):
        for _ in range(2):  # gradient accumulation: grads live across micro-steps
            x = torch.randint(0, 50304, (12, 1024), device=device)
            y = torch.randint(0, 50304, (12, 1024), device=device)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = step(x, y) / 40
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    params = sum(p.numel() for p in model.parameters())
    return {"params": params, "train": _peaks(), "compiled": compile_model}


def mlp() -> dict[str, object]:
    """Four 1024-wide Linear+ReLU layers and a 10-way head built in a loop; Adam, batch 64."""
    device = torch.device("cuda")
    layers: list[nn.Module] = []
    width = 784
    for _ in range(4):
        layers += [nn.Linear(width, 1024), nn.ReLU()]
        width = 1024
    model = nn.Sequential(*layers, nn.Linear(1024, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    _reset()
    for _ in range(3):
        optimizer.zero_grad()
        loss = F.cross_entropy(
            model(torch.randn(64, 784, device=device)), torch.randint(0, 10, (64,), device=device)
        )
        loss.backward()
        optimizer.step()
    return {"params": sum(p.numel() for p in model.parameters()), "train": _peaks()}


def resnet(arch: str, batch: int) -> dict[str, object]:
    """torchvision ResNet at 224², fp32, SGD with momentum (ImageNet example defaults)."""
    import torchvision

    device = torch.device("cuda")
    model = getattr(torchvision.models, arch)().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    _reset()
    for _ in range(3):
        images = torch.randn(batch, 3, 224, 224, device=device)
        target = torch.randint(0, 1000, (batch,), device=device)
        loss = F.cross_entropy(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"params": sum(p.numel() for p in model.parameters()), "train": _peaks()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    results: dict[str, object] = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "context_note": "max_memory_allocated/reserved exclude the CUDA context",
    }
    jobs = {
        "mnist": mnist,
        "mlp_loop": mlp,
        "nanogpt_eager": lambda: nanogpt(False),
        "resnet18_b256": lambda: resnet("resnet18", 256),
        "resnet50_b64": lambda: resnet("resnet50", 64),
    }
    if args.compile:
        jobs["nanogpt_compiled"] = lambda: nanogpt(True)
    for name, job in jobs.items():
        started = time.time()
        try:
            results[name] = job()
        except Exception as error:  # one job's failure must not lose the others
            results[name] = {"error": f"{type(error).__name__}: {error}"}
        print(name, json.dumps(results[name]), f"{time.time() - started:.1f}s", flush=True)
        torch.cuda.empty_cache()
    with open(args.out, "w") as handle:
        json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
