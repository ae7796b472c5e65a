"""Fixture: batched generation in bf16 with a config file."""
import json

import torch
from transformers import AutoModelForCausalLM

cfg = json.load(open("gen_config.json"))
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2-7B", torch_dtype=torch.bfloat16)
with torch.no_grad():
    out = model.generate(cfg["inputs"], max_new_tokens=cfg["max_new_tokens"], num_beams=1)
