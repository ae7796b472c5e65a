"""A model trained beside a frozen autoencoder the catalog cannot size."""

import torch
from diffusers import AutoencoderKL
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

vae = AutoencoderKL.from_pretrained("someone/private-vae")
vae.requires_grad_(False)
model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
loader = DataLoader(range(1000), batch_size=2)

for input_ids in loader:
    with torch.no_grad():
        latents = vae.encode(input_ids)
    loss = model(input_ids, labels=input_ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
