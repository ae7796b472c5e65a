"""A pretrained GPT turned into a classifier (issue 12, a replaced LM head).

The pattern of a from-scratch LLM book's classification chapter, restated: a GPT-2-small
shaped decoder with an untied output head, every parameter frozen, the vocabulary head
replaced by a ``num_classes``-wide ``Linear``, the last block and the final norm trainable
again, and the loss on the last position's logits only. The estimator reads it statically;
``tests/calibration/measure_phases.py`` imports its classes and measures the same job.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BASE_CONFIG = {
    "vocab_size": 50257,
    "context_length": 1024,
    "emb_dim": 768,
    "n_heads": 12,
    "n_layers": 12,
    "drop_rate": 0.0,
}


class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh((2.0 / torch.pi) ** 0.5 * (x + 0.044715 * torch.pow(x, 3))))


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.qkv = nn.Linear(cfg["emb_dim"], 3 * cfg["emb_dim"])
        self.out_proj = nn.Linear(cfg["emb_dim"], cfg["emb_dim"])
        self.heads = cfg["n_heads"]

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(y.transpose(1, 2).reshape(b, t, d))


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg["emb_dim"])
        self.att = Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg["emb_dim"])
        self.ff = nn.Sequential(
            nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]),
            GELU(),
            nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]),
        )

    def forward(self, x):
        x = x + self.att(self.norm1(x))
        return x + self.ff(self.norm2(x))


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = nn.LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(positions)
        return self.out_head(self.final_norm(self.trf_blocks(x)))


batch_size = 8
seq_len = 1024
num_classes = 2


def loss_of(model, x, y):
    """Only the last position's logits enter the loss."""
    return F.cross_entropy(model(x)[:, -1, :], y)


def main():
    model = GPTModel(BASE_CONFIG)
    for param in model.parameters():
        param.requires_grad = False
    model.out_head = nn.Linear(in_features=BASE_CONFIG["emb_dim"], out_features=num_classes)
    for param in model.trf_blocks[-1].parameters():
        param.requires_grad = True
    for param in model.final_norm.parameters():
        param.requires_grad = True
    model.to("cuda")
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.1)
    for _ in range(10):
        x = torch.randint(0, BASE_CONFIG["vocab_size"], (batch_size, seq_len), device="cuda")
        y = torch.randint(0, num_classes, (batch_size,), device="cuda")
        optimizer.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
