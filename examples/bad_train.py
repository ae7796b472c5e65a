"""A training script with one of every bug torchward knows. `torchward check examples/`.

Each line marked `# TWxxx` is a finding; examples/good_train.py is the same job, fixed.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 256), nn.ReLU(), nn.Dropout(0.1))
        self.head = nn.Linear(256, classes)
        self.probs = nn.Softmax(dim=1)

    def forward(self, x):
        return self.probs(self.head(self.body(x)))


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.out = nn.Linear(256, 1)

    def forward(self, x):
        return self.out(x)


def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:  # TW002
        correct += (model(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def train(args):
    torch.distributed.init_process_group("nccl")
    dataset = TensorDataset(torch.randn(1024, 32), torch.randint(0, 10, (1024,)))
    train_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)  # TW012
    val_loader = DataLoader(dataset, batch_size=256)
    model = DDP(Classifier(32, 10).cuda())
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    history = []
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(train_loader):
            loss = criterion(model(x), y)  # TW005
            history.append(loss)  # TW001
            loss.backward()  # TW014
            if (step + 1) % args.accumulate == 0:
                optimizer.step()  # TW003
        print(epoch, evaluate(model, val_loader))  # TW011


def train_scorer(features, targets):
    scorer = Scorer()
    optimizer = torch.optim.SGD(scorer.parameters(), lr=0.1)
    for x, y in zip(features, targets):
        optimizer.zero_grad()
        loss = F.binary_cross_entropy(scorer(x).squeeze(1), y)  # TW006
        loss.backward()
        optimizer.step()


def finetune_llm(dataset):
    """The language-model job this script also runs, on the card named in pyproject.toml."""
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    args = TrainingArguments("out", per_device_train_batch_size=8, fp16=True, max_steps=1000)
    Trainer(model=model, args=args, train_dataset=dataset).train()


class Tower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = [nn.Linear(32, 32) for _ in range(4)]  # TW022
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        for block in self.blocks:
            x = self.drop(block(x))
        return x


def train_tower(dataset, epochs):
    tower = Tower()
    tower.load_state_dict(torch.load("tower.pt"))  # TW023
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler, pin_memory=True)  # TW015
    scaler = torch.amp.GradScaler()
    for epoch in range(epochs):
        tower.train()
        for x, y in loader:  # TW021
            optimizer = torch.optim.Adam(tower.parameters())  # TW017
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
            scheduler.step()  # TW018
            fast = torch.compile(tower)  # TW016
            y = y * torch.tensor([1.0]).cuda()  # TW013
            scaler.scale(F.mse_loss(fast(x), y)).backward()
            optimizer.zero_grad()  # TW019
            optimizer.step()  # TW020
            scaler.update()
        with torch.no_grad():
            for x, y in loader:  # TW024
                print(F.mse_loss(tower(x), y).item())


class Shards(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i):
        return torch.load(f"shard{i}.pt", weights_only=True)


def train_on_shards(model, optimizer):
    loader = DataLoader(Shards(), batch_size=8)  # TW004
    for x in loader:
        model(x.cuda()).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.synchronize()  # TW007



def train_amp_accumulating(model, loader, optimizer, accumulate):
    scaler = torch.amp.GradScaler()
    for i, (x, y) in enumerate(loader):
        scaler.scale(F.cross_entropy(model(x), y) / accumulate).backward()
        scaler.unscale_(optimizer)  # TW025
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accumulate == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()


def encode(rnn, embedded, lengths):
    data, sizes = nn.utils.rnn.pack_padded_sequence(embedded, lengths, batch_first=True)  # TW026
    return rnn(data), sizes


def save_adapter(model, output_dir):
    from peft import get_peft_model_state_dict

    old_state_dict = model.state_dict
    model.state_dict = lambda *_, **__: get_peft_model_state_dict(model, old_state_dict())  # TW027
    model.save_pretrained(output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--accumulate", type=int, default=4)
    train(parser.parse_args())  # TW008
    finetune_llm(dataset=None)  # the language-model job, on the card of pyproject.toml
