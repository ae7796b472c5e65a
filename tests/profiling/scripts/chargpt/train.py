"""Train a character-level GPT on a text file."""

import argparse
import os

import torch
from model import GPT, GPTConfig

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="input.txt")
parser.add_argument("--batch_size", type=int, default=32)
parser.add_argument("--block_size", type=int, default=128)
parser.add_argument("--n_layer", type=int, default=4)
parser.add_argument("--n_head", type=int, default=4)
parser.add_argument("--n_embd", type=int, default=128)
parser.add_argument("--dropout", type=float, default=0.1)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--max_iters", type=int, default=5000)
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
with open(args.data) as f:
    text = f.read()
chars = sorted(set(text))
stoi = {ch: i for i, ch in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)


def get_batch():
    ix = torch.randint(len(data) - args.block_size, (args.batch_size,))
    x = torch.stack([data[i : i + args.block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + args.block_size] for i in ix])
    return x.to(device), y.to(device)


config = GPTConfig(
    block_size=args.block_size,
    vocab_size=65,
    n_layer=args.n_layer,
    n_head=args.n_head,
    n_embd=args.n_embd,
    dropout=args.dropout,
)
model = GPT(config).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

for it in range(args.max_iters):
    xb, yb = get_batch()
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if it % 500 == 0:
        print(it, loss.item())
torch.save(model.state_dict(), os.path.join("out", "ckpt.pt"))
