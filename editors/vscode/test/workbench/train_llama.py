import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM


def train(model, loader, optimizer):
    history = []
    for batch in loader:
        optimizer.zero_grad()
        logits = model(batch["input_ids"]).logits
        loss = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())
        loss.backward()
        optimizer.step()
        history.append(loss)
    print(f"{len(history)} steps")


model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
train(model, loader, optimizer)
