"""Fixture: a plain PyTorch loop on a torchvision model, AMP with a GradScaler."""
import torch
import torchvision
from torch.utils.data import DataLoader

BATCH = 32

model = torchvision.models.resnet50().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scaler = torch.cuda.amp.GradScaler()
loader = DataLoader(range(10), batch_size=BATCH)
for x in loader:
    optimizer.zero_grad()
    with torch.autocast("cuda"):
        loss = model(x).sum()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
