"""A four-layer MLP whose hidden layers are appended in a loop, then unpacked into
nn.Sequential."""

import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, depth=4, width=1024, classes=10):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    model = MLP().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(100):
        x = torch.randn(32, 1024, device="cuda")
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
