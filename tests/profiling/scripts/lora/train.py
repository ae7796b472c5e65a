"""Fine-tune low-rank adapters on a frozen transformer encoder."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update."""

    def __init__(self, base, rank=8, alpha=16):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        if self.base.bias is not None:
            self.base.bias.requires_grad_(False)
        self.lora_a = nn.Linear(base.in_features, rank, bias=False)
        self.lora_b = nn.Linear(rank, base.out_features, bias=False)
        nn.init.zeros_(self.lora_b.weight)
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_b(self.lora_a(x)) * self.scale


class Encoder(nn.Module):
    def __init__(self, vocab=4096, dim=256, depth=4, heads=4, rank=8, num_classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.embed.weight.requires_grad_(False)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        for p in self.encoder.parameters():
            p.requires_grad_(False)
        for block in self.encoder.layers:
            block.linear1 = LoRALinear(block.linear1, rank)
            block.linear2 = LoRALinear(block.linear2, rank)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, ids):
        h = self.encoder(self.embed(ids))
        return self.head(h.mean(dim=1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=256)
    args = parser.parse_args()
    model = Encoder(rank=args.rank).cuda()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)
    for _ in range(100):
        ids = torch.randint(0, 4096, (args.batch_size, args.max_length), device="cuda")
        labels = torch.randint(0, 2, (args.batch_size,), device="cuda")
        loss = F.cross_entropy(model(ids), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
