"""``generate()`` itself — beam search and sampling — measured against the estimate.

bench/oracle_memory.py measures generation as a prefill and a greedy loop written out by the
harness; ``model.generate`` cannot run on the fake device (its stopping checks and beam
bookkeeping read values). Here it runs for real on CPU tensors under the calibration
harness's live-storage counter (tests/calibration, README), at a small width so that a run
takes seconds: each family's default config from the installed transformers, 4 layers deep,
every width divided by 8 (``oracle_memory.scaled``), bf16 weights. The peak counted is that
of the ``generate`` call (the weights stay live, as on a GPU); the estimate is torchward's
``generate`` mode with the same ``num_beams`` / ``num_return_sequences``, less its cuBLAS
workspace (the counter does not see it), from the same fields written as a config.json.

    .venv/bin/python bench/oracle_generate.py [--only llama,gpt2] [--save rows.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import oracle_memory  # noqa: E402

# (model_type, kind): two decoders (MHA with learned positions, GQA with rotary) and one
# encoder-decoder
FAMILIES = (("gpt2", "decoder"), ("qwen2", "decoder"), ("bart", "seq2seq"))
BATCH, PROMPT, NEW = 2, 256, 8
# (label, generate's keyword arguments, the estimate's fields)
STRATEGIES = (
    ("greedy", {}, {}),
    ("beam 4", {"num_beams": 4}, {"num_beams": 4}),
    (
        "sample x4",
        {"do_sample": True, "num_return_sequences": 4},
        {"num_return_sequences": 4},
    ),
)

_CHILD = """
import json, sys
sys.path.insert(0, {calibration!r})
import torch
import calib_harness as harness
import calib_models as models
entry = json.loads({entry!r})
models.catalog = lambda: {{entry["name"]: entry}}
harness.patch_transformers()
harness.emulate_device_capability()
harness.set_sdpa_sm(80, None)
counter = harness.LiveStorageCounter("cpu")
torch.manual_seed(0)
with counter:
    torch.set_default_dtype(torch.bfloat16)
    model, kind = models.build(entry["name"], "generate", {prompt})
    torch.set_default_dtype(torch.float32)
    model.eval()
    prompt = torch.randint(3, model.config.vocab_size, ({batch}, {prompt}))
    mask = torch.ones_like(prompt)
    counter.reset_peak()
    counter.set_phase("generate")
    with torch.no_grad():
        out = model.generate(
            input_ids=prompt, attention_mask=mask, max_new_tokens={new}, min_new_tokens={new},
            pad_token_id=0, **json.loads({kwargs!r}),
        )
    del out
print(json.dumps({{"measured": counter.peak}}))
"""


def family_fields(model_type: str) -> dict:
    """The family's default config, 4 layers deep, at 1/8 width (as the real-CPU oracle)."""
    fields = oracle_memory.scaled(oracle_memory.family_config(model_type, "decoder"))
    fields["use_cache"] = True
    return fields


def measured(model_type: str, kind: str, fields: dict, kwargs: dict) -> int:
    structure = {k: v for k, v in fields.items() if k not in ("model_type", "transformers_version")}
    entry = {"name": f"gen-{model_type}", "model_type": model_type, "config": structure}
    if kind == "seq2seq":
        entry["kind"] = "seq2seq"
    code = _CHILD.format(
        calibration=str(oracle_memory.CALIBRATION),
        entry=json.dumps(entry, default=str),
        prompt=PROMPT,
        batch=BATCH,
        new=NEW,
        kwargs=json.dumps(kwargs),
    )
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["no output"])[-1])
    return int(json.loads(proc.stdout.strip().splitlines()[-1])["measured"])


def estimated(path: str, extra: dict) -> float:
    from torchward.estimator.costmodel import workspace_bytes
    from torchward.estimator.estimate import estimate
    from torchward.estimator.runconfig import Field, RunConfig

    fields = dict(
        model=Field(path, "--model"),
        mode=Field("generate", "--mode"),
        dtype=Field("bf16", "--dtype"),
        batch_size=Field(BATCH, "--batch-size"),
        attention=Field("sdpa", "--attention"),
        seq_len=Field(PROMPT, "--seq-len"),
        max_new_tokens=Field(NEW, "--max-new-tokens"),
    )
    for name, value in extra.items():
        fields[name] = Field(value, "--" + name.replace("_", "-"))
    return estimate(RunConfig(**fields)).allocated - workspace_bytes(None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="model_types, comma-separated")
    parser.add_argument("--save", help="write the measured rows here (JSON), for the tests")
    args = parser.parse_args(argv)
    saved, errors = [], []
    with tempfile.TemporaryDirectory() as folder:
        for model_type, kind in FAMILIES:
            if args.only and model_type not in args.only.split(","):
                continue
            fields = family_fields(model_type)
            path = Path(folder) / model_type / "config.json"
            path.parent.mkdir()
            path.write_text(json.dumps(fields, default=str))
            for label, kwargs, extra in STRATEGIES:
                real = measured(model_type, kind, fields, kwargs)
                ours = estimated(str(path.parent), extra)
                error = (ours - real) / real
                errors.append(error)
                saved.append(
                    {"model_type": model_type, "kind": kind, "strategy": label, "measured": real}
                )
                print(
                    f"{model_type:<8} {label:<10} measured {real / 2**20:8.2f} MiB  "
                    f"estimated {ours / 2**20:8.2f} MiB  {error:+7.1%}",
                    flush=True,
                )
    if args.save:
        Path(args.save).write_text(json.dumps({"measurements": saved}, indent=1) + "\n")
    if errors:
        mae = sum(abs(e) for e in errors) / len(errors)
        print(f"MAE {mae:.1%} over {len(errors)}; worst under-estimate {min(errors):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
