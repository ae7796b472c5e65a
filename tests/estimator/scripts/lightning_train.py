"""Fixture: Lightning with bf16-mixed precision and accumulation."""
import lightning as L
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2")
trainer = L.Trainer(precision="bf16-mixed", accumulate_grad_batches=4, devices=2, strategy="deepspeed_stage_3")
trainer.fit(model)
