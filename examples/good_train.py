"""The job of examples/bad_train.py with every bug fixed: torchward reports nothing here."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 256), nn.ReLU(), nn.Dropout(0.1))
        self.head = nn.Linear(256, classes)

    def forward(self, x):
        return self.head(self.body(x))


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.out = nn.Linear(256, 1)

    def forward(self, x):
        return self.out(x)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    model.train()
    return correct / len(loader.dataset)


def train(args):
    torch.distributed.init_process_group("nccl")
    dataset = TensorDataset(torch.randn(1024, 32), torch.randint(0, 10, (1024,)))
    sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    val_loader = DataLoader(dataset, batch_size=256)
    model = DDP(Classifier(32, 10).cuda())
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    history = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for step, (x, y) in enumerate(train_loader):
            loss = criterion(model(x), y) / args.accumulate
            history.append(loss.item())
            loss.backward()
            if (step + 1) % args.accumulate == 0:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        print(epoch, evaluate(model, val_loader))


def train_scorer(features, targets):
    scorer = Scorer()
    optimizer = torch.optim.SGD(scorer.parameters(), lr=0.1)
    for x, y in zip(features, targets):
        optimizer.zero_grad()
        loss = F.binary_cross_entropy_with_logits(scorer(x).squeeze(1), y)
        loss.backward()
        optimizer.step()


def finetune_llm(dataset):
    """The language-model job this script also runs, on the card named in pyproject.toml."""
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    args = TrainingArguments("out", per_device_train_batch_size=4, fp16=True, max_steps=1000)
    Trainer(model=model, args=args, train_dataset=dataset).train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--accumulate", type=int, default=4)
    torch.manual_seed(0)
    train(parser.parse_args())
