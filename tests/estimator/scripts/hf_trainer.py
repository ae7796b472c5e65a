"""Fixture: a HF Trainer fine-tune with argparse defaults and a DeepSpeed JSON file."""
import argparse

from peft import LoraConfig
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

MODEL = "meta-llama/Llama-2-7b-hf"

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=4)
parser.add_argument("--accum", dest="accum", type=int, default=8)
args = parser.parse_args()

model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype="auto", attn_implementation="sdpa")
lora = LoraConfig(r=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
training_args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=args.batch_size,
    gradient_accumulation_steps=args.accum,
    bf16=True,
    gradient_checkpointing=True,
    deepspeed="ds_zero2.json",
)
trainer = Trainer(model=model, args=training_args)
trainer.train()
