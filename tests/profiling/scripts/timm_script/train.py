"""Fine-tune a timm image model; the arguments are parsed at the top level."""

import argparse

import timm
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="resnet26d", type=str)
parser.add_argument("--num-classes", default=100, type=int)
parser.add_argument("--img-size", default=160, type=int)
parser.add_argument("--batch-size", default=48, type=int)
parser.add_argument("--lr", default=5e-4, type=float)
parser.add_argument("--pretrained", action="store_true")
args = parser.parse_args()

NUM_EPOCHS = 10
safe_model_name = args.model.replace("/", "_")
output_dir = f"output/{safe_model_name}"

model = timm.create_model(args.model, pretrained=args.pretrained, num_classes=args.num_classes)
model.cuda()

train_tf = transforms.Compose([transforms.RandomResizedCrop(args.img_size), transforms.ToTensor()])
loader = DataLoader(
    datasets.ImageFolder("data/train", train_tf), batch_size=args.batch_size, shuffle=True
)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)

for epoch in range(NUM_EPOCHS):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
torch.save(model.state_dict(), f"{output_dir}/last.pth")
