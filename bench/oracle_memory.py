"""Peak memory of oracle families no family table knows, measured against the estimate.

Each family of ``FAMILIES`` (bench/oracle_memory_families.json, chosen before tuning: decoders,
MoE, encoders, encoder-decoders, ViTs, CNNs and dual towers, counted from their config fields,
bench/oracle_families.json ``"counted": "generic"``) is built from its config class's
defaults with the depth cut to 4 layers (widths, heads and vocabulary kept), measured by
the calibration harness (tests/calibration: fake CUDA tensors, a live-storage counter; see
its README) in training, inference and generation, and estimated by torchward from the
same fields written as a config.json. The families the fake device cannot run (``REAL_CPU``:
an op reads a tensor's values) run for real on the CPU under the same counter, at 1/8 width. The estimator's cuBLAS workspace is taken off before
comparing (the harness does not see it), as tests/estimator/test_calibration_accuracy.py
does.

    .venv/bin/python bench/oracle_memory.py            # ~5-10 min on 2 cores
    .venv/bin/python bench/oracle_memory.py --only granite

Needs torch and transformers in the venv and g++ (the harness builds its fake device).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "tests" / "calibration"
# the families, chosen before tuning (issue 27): model_type, kind, modes, whether seen before
FAMILIES = json.loads((ROOT / "bench" / "oracle_memory_families.json").read_text("utf-8"))[
    "families"
]
# (mode, dtype, batch, seq or prompt, new tokens[, use_cache passed to the call]); images are
# 224 x 224 (the harness's size). A decoder's plain forward runs twice: as called (its
# config's use_cache, on: the KV cache is returned) and with use_cache=False (none is).
JOBS = (
    ("train", "amp-bf16", 8, 2048, 0),
    ("inference", "bf16", 4, 2048, 0),
    ("inference", "bf16", 4, 2048, 0, False),
    ("generate", "bf16", 4, 1024, 8),
)
VISION_JOBS = (
    ("train", "amp-bf16", 32, 224, 0),
    ("inference", "bf16", 32, 224, 0),
)
# kinds the calibration harness can run (every kind of the families file)
MEASURABLE = ("decoder", "encoder", "seq2seq", "vit", "hf-cnn", "dual-tower")
DEPTH = 4
# transformers' grouped_mm experts kernel rejects fp32 weights under autocast ("Expected
# inputs of BF16 type", as on a GPU): mixture-of-experts families train in pure bf16, as the
# calibration fixtures' MoE rows do
MOE_TRAIN_DTYPE = "bf16"
# Gradient checkpointing (``model.gradient_checkpointing_enable()``, ``--checkpointing``): three
# decoders and an encoder, training in pure bf16 — under the harness's emulated autocast the
# recomputation runs outside autocast (``torch.autocast("cuda")`` is off without a GPU) and
# torch.utils.checkpoint rejects the recomputed fp32 tensors
CHECKPOINTED = ("smollm3", "granite", "falcon", "electra")

# Families the fake device cannot run: an op reads a tensor's values (JetMoE's and DBRX's expert
# routing, DeBERTa-v2's relative-position buckets; ConvNeXt's constructor reads its drop-path
# schedule). They run for real on the CPU under the same live-storage counter (which agrees
# with the fake run to the byte where both can run: tests/calibration/test_counter.py), at the
# same depth and every width field divided by WIDTH_DIVISOR (head_dim kept: heads are divided
# too), shorter sequences and smaller batches, so that a step takes seconds, not hours. The
# estimate reads the same scaled config.json. Training is pure bf16, not AMP: CPU autocast
# casts a different op list from CUDA's, so an AMP run on the CPU would not be the GPU's step.
REAL_CPU = ("jetmoe", "dbrx", "deberta-v2", "convnext")
WIDTH_DIVISOR = 8
WIDTH_FIELDS = (
    "hidden_size",
    "d_model",
    "n_embd",
    "n_inner",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "intermediate_size",
    "ffn_hidden_size",
    "pooler_hidden_size",
    "vocab_size",
    "hidden_sizes",
)
HEAD_FIELDS = (
    "num_attention_heads",
    "n_heads",
    "n_head",
    "num_key_value_heads",
    "kv_n_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
)
REAL_JOBS = (
    ("train", "bf16", 4, 512, 0),
    ("inference", "bf16", 4, 512, 0),
    ("inference", "bf16", 4, 512, 0, False),
    ("generate", "bf16", 4, 256, 8),
)
REAL_VISION_JOBS = (
    ("train", "bf16", 8, 224, 0),
    ("inference", "bf16", 8, 224, 0),
)

_CHILD = """
import json, sys
sys.path.insert(0, {calibration!r})
if {fake!r}:
    import fakecuda
    fakecuda.load()
import calib_models, measure
entry = json.loads({entry!r})
calib_models.catalog = lambda: {{entry["name"]: entry}}
where = dict(device="cuda") if {fake!r} else dict(device="cpu", fake=False)
print(json.dumps(measure.run_one(json.loads({job!r}), **where)))
"""


def scaled(fields: dict) -> dict:
    """``fields`` with every width divided by WIDTH_DIVISOR (nested configs too: DBRX's
    ``attn_config`` / ``ffn_config``); heads divided alike (at least one), so head_dim and the
    GQA ratio stay; depth, experts, top-k and every other field as they are."""
    out: dict = {}
    for name, value in fields.items():
        if isinstance(value, dict):
            out[name] = scaled(value)
        elif name in WIDTH_FIELDS and isinstance(value, int) and not isinstance(value, bool):
            out[name] = value // WIDTH_DIVISOR
        elif name in WIDTH_FIELDS and isinstance(value, list):
            out[name] = [v // WIDTH_DIVISOR for v in value]
        elif name in HEAD_FIELDS and isinstance(value, int) and not isinstance(value, bool):
            out[name] = max(1, value // WIDTH_DIVISOR)
        else:
            out[name] = value
    return out


def family_config(model_type: str, kind: str) -> dict:
    from transformers import CONFIG_MAPPING

    config = CONFIG_MAPPING[model_type]()
    names = ("num_hidden_layers", "n_layer", "num_layers", "num_decoder_layers")
    for name in names + ("encoder_layers", "decoder_layers"):
        if isinstance(getattr(config, name, None), int):
            setattr(config, name, DEPTH)
    if kind in ("vit", "hf-cnn"):  # an ImageNet head, as the estimator assumes
        config.num_labels = 1000
    if kind == "encoder":  # a 2-class sequence classifier, as the harness trains it
        config.num_labels = 2
    if isinstance(getattr(config, "layer_types", None), list):
        config.layer_types = list(config.layer_types)[:DEPTH]
    fields = config.to_dict()
    fields.pop("architectures", None)
    for tower in ("text_config", "vision_config"):  # a dual tower: each tower 4 layers deep
        if isinstance(fields.get(tower), dict):
            fields[tower]["num_hidden_layers"] = DEPTH
    for name in ("out_features", "out_indices", "stage_names"):  # a backbone's (DINOv2)
        fields.pop(name, None)  # stages, named for its full depth
    if model_type == "dbrx":  # transformers 5.25's DbrxConfig() lacks what its model reads
        theta = (fields.get("rope_parameters") or {}).get("rope_theta", 10000.0)
        fields["attn_config"]["rope_theta"] = theta
        # and clamps q/k/v with clip_qkv, None by default (the released DBRX's value: 8)
        fields["attn_config"]["clip_qkv"] = 8.0
    return scaled(fields) if model_type in REAL_CPU else fields


def jobs_of(family: dict, fields: dict) -> list[tuple]:
    """The family's jobs, in the modes it lists (bench/oracle_memory_families.json)."""
    kind = family["kind"]
    vision = kind in ("vit", "hf-cnn", "dual-tower")
    if family["model_type"] in REAL_CPU:
        jobs = list(REAL_VISION_JOBS if vision else REAL_JOBS)
    else:
        jobs = list(VISION_JOBS if vision else JOBS)
    if kind == "encoder":  # no longer than its learned positions, and no cache
        limit = fields.get("max_position_embeddings") or 512
        jobs = [(j[0], j[1], j[2], min(j[3], limit), j[4]) for j in jobs if len(j) == 5]
    if kind == "seq2seq":
        jobs = [j for j in jobs if len(j) == 5]
    if "MoE" in family["attention"]:
        jobs = [(j[0], MOE_TRAIN_DTYPE, *j[2:]) if j[0] == "train" else j for j in jobs]
    return [j for j in jobs if j[0] in family["modes"]]


def label(job: tuple, checkpointing: bool = False) -> str:
    """The job's mode as the table names it: ``inference (use_cache=False)``."""
    if checkpointing:
        return f"{job[0]} (checkpointing)"
    return job[0] if len(job) == 5 else f"{job[0]} (use_cache={job[5]})"


def measured(
    model_type: str, kind: str, fields: dict, job: tuple, checkpointing: bool = False
) -> dict:
    mode, dtype, batch, seq, new = job[:5]
    structure = {k: v for k, v in fields.items() if k not in ("model_type", "transformers_version")}
    entry = {"name": f"oracle-{model_type}", "model_type": model_type, "config": structure}
    entry["kind"] = kind
    cfg = dict(
        name=f"{model_type}-{mode}",
        model=entry["name"],
        mode=mode,
        dtype=dtype,
        batch_size=batch,
        seq=seq,
        new_tokens=new,
    )
    if len(job) > 5:
        cfg["use_cache"] = job[5]
    if checkpointing:
        cfg["checkpointing"] = True
    code = _CHILD.format(
        calibration=str(CALIBRATION),
        entry=json.dumps(entry, default=str),
        job=json.dumps(cfg),
        fake=model_type not in REAL_CPU,
    )
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return {"error": _why(proc.stderr.strip().splitlines()[-1:] or ["no output"])}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _why(last: list[str]) -> str:
    """The row's reason: the harness's last error line, said plainly where it is known."""
    line = last[0]
    if "DataDependentOutputException" in line or "DynamicOutputShapeException" in line:
        return (
            "the fake device cannot run it: an op reads a tensor's values (.item(), nonzero: "
            f"routing or position buckets with data-dependent shapes) — {line.split(':')[0]}"
        )
    return line


def estimated(path: str, kind: str, job: tuple, checkpointing: bool = False) -> float:
    from torchward.estimator.costmodel import workspace_bytes
    from torchward.estimator.estimate import estimate
    from torchward.estimator.runconfig import Field, RunConfig

    mode, dtype, batch, seq, new = job[:5]
    fields = dict(
        model=Field(path, "--model"),
        mode=Field(mode, "--mode"),
        dtype=Field(dtype, "--dtype"),
        batch_size=Field(batch, "--batch-size"),
        attention=Field("sdpa", "--attention"),
    )
    if kind in ("vit", "hf-cnn", "dual-tower"):
        fields["image_size"] = Field(seq, "--image-size")
    else:
        fields["seq_len"] = Field(seq, "--seq-len")
    if mode == "generate":
        fields["max_new_tokens"] = Field(new, "--max-new-tokens")
    if mode == "train":
        fields["optimizer"] = Field("adamw", "--optimizer")
    if len(job) > 5:
        fields["use_cache"] = Field(job[5], "--use-cache")
    if checkpointing:
        fields["checkpointing"] = Field(True, "--checkpointing")
    result = estimate(RunConfig(**fields))
    workspaces = workspace_bytes(None) * (2 if mode == "train" else 1)
    return result.allocated - workspaces


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="model_types, comma-separated")
    parser.add_argument("--save", help="write the measured rows here (JSON), for the tests")
    parser.add_argument(
        "--checkpointing",
        action="store_true",
        help=f"train with gradient checkpointing, in bf16: {', '.join(CHECKPOINTED)}",
    )
    parser.add_argument(
        "--modes",
        help="only these jobs, as the table names them: train,inference (use_cache=False)",
    )
    args = parser.parse_args(argv)
    rows: list[float] = []
    saved: list[dict] = []
    with tempfile.TemporaryDirectory() as folder:
        for family in FAMILIES:
            model_type, kind = family["model_type"], family["kind"]
            if args.only and model_type not in args.only.split(","):
                continue
            if args.checkpointing and model_type not in CHECKPOINTED:
                continue
            if kind not in MEASURABLE:
                print(f"{model_type:<12} not measured: the harness has no {kind} batch", flush=True)
                continue
            fields = family_config(model_type, kind)
            path = Path(folder) / model_type / "config.json"
            path.parent.mkdir()
            path.write_text(json.dumps(fields, default=str))
            jobs = jobs_of(family, fields)
            if args.checkpointing:
                jobs = [(j[0], "bf16", *j[2:]) for j in jobs if j[0] == "train"]
            ckpt = args.checkpointing
            for job in jobs:
                if args.modes and label(job, ckpt) not in args.modes.split(","):
                    continue
                truth = measured(model_type, kind, fields, job, ckpt)
                if "error" in truth:
                    print(
                        f"{model_type:<12} {label(job, ckpt):<10} error: {truth['error']}",
                        flush=True,
                    )
                    continue
                try:
                    ours = estimated(str(path.parent), kind, job, ckpt)
                except Exception as error:  # noqa: BLE001 - a refusal is a row of the table
                    print(
                        f"{model_type:<12} {label(job, ckpt):<10} not estimated: {error}",
                        flush=True,
                    )
                    continue
                real = truth["measured_allocated_bytes"]
                error = (ours - real) / real
                rows.append(error)
                saved.append(
                    {
                        "model_type": model_type,
                        "kind": kind,
                        "job": list(job),
                        "measured": real,
                        "peak_phase": truth["peak_phase"],
                        "device": "fake cuda" if model_type not in REAL_CPU else "real cpu",
                        **({"checkpointing": True} if ckpt else {}),
                    }
                )
                print(
                    f"{model_type:<12} {label(job, ckpt):<10} measured {real / 2**30:8.3f} GiB  "
                    f"estimated {ours / 2**30:8.3f} GiB  {error:+7.1%}  ({truth['peak_phase']})",
                    flush=True,
                )
    if args.save:
        Path(args.save).write_text(json.dumps({"measurements": saved}, indent=1) + "\n")
    if rows:
        mae = sum(abs(e) for e in rows) / len(rows)
        print(f"MAE {mae:.1%} over {len(rows)}; worst under-estimate {min(rows):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
