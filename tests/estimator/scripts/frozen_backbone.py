"""A linear probe: the pretrained encoder frozen, its classifier trained."""

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
for param in model.bert.parameters():
    param.requires_grad = False
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
train_loader = DataLoader(range(1000), batch_size=32)

for batch in train_loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
