"""Pre-train a small GPT-2 from scratch with a config written in the script."""

import argparse

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_len", type=int, default=256)
    parser.add_argument("--n_layer", type=int, default=4)
    parser.add_argument("--n_embd", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--steps", type=int, default=1000)
    return parser.parse_args()


def main():
    args = parse_args()
    config = AutoConfig.for_model(
        "gpt2",
        n_layer=args.n_layer,
        n_head=4,
        n_embd=args.n_embd,
        n_positions=args.seq_len,
        vocab_size=8192,
    )
    model = AutoModelForCausalLM.from_config(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model.train()
    for _ in range(args.steps):
        ids = torch.randint(0, 8192, (args.batch_size, args.seq_len), device="cuda")
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
