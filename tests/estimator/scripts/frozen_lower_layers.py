"""Fine-tuning the upper half: the embeddings and the first eight blocks frozen."""

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B", torch_dtype=torch.bfloat16)
model.model.embed_tokens.requires_grad_(False)
for layer in model.model.layers[:8]:
    layer.requires_grad_(False)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
loader = DataLoader(range(1000), batch_size=4)

for input_ids in loader:
    loss = model(input_ids, labels=input_ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
