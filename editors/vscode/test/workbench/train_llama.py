import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
history = []
for batch in loader:
    optimizer.zero_grad()
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    history.append(loss)
