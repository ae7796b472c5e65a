"""Distillation: a frozen teacher, loaded first, beside the student the optimizer trains."""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM

teacher = AutoModelForCausalLM.from_pretrained("gpt2-medium")
teacher.requires_grad_(False)
teacher.eval()
student = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.AdamW(student.parameters(), lr=1e-4)
loader = DataLoader(range(1000), batch_size=8)

for input_ids in loader:
    with torch.no_grad():
        target = teacher(input_ids).logits
    out = student(input_ids, labels=input_ids)
    kd = F.kl_div(F.log_softmax(out.logits, -1), F.softmax(target, -1), reduction="batchmean")
    (out.loss + kd).backward()
    optimizer.step()
    optimizer.zero_grad()
