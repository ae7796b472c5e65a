"""Fit a deep MLP whose hidden layers are built in a loop."""

import argparse

import torch
from torch import nn


def make_mlp(in_features, hidden, depth, num_classes):
    layers = [nn.Linear(in_features, hidden), nn.ReLU()]
    for _ in range(depth):
        layers += [nn.Linear(hidden, hidden), nn.ReLU()]
    layers.append(nn.Linear(hidden, num_classes))
    return nn.Sequential(*layers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    model = make_mlp(784, args.hidden, args.depth, 10).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(100):
        x = torch.randn(args.batch_size, 784, device="cuda")
        y = torch.randint(0, 10, (args.batch_size,), device="cuda")
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
