"""What a training step holds for backward, op by op: the oracle's saved tensors, listed.

For one family of ``bench/oracle_memory_families.json`` (built as ``bench/oracle_memory.py``
builds it), the calibration harness runs one steady-state training step and, at the start of
the backward (everything the forward saved is live, nothing freed yet) or at the step's
peak (``--at peak``), lists the storages the forward allocated that are still live (what
was live before it, weights and optimizer state, as one row), grouped by the module and the aten op that
made them, their dtype and their shape. Bytes are also given per token (``batch × seq``, or per image) and
per layer, which is the unit of ``estimator/activations.saved_per_token``: a term missing
from the estimate shows up as a group the estimator has no formula for.

    .venv/bin/python bench/oracle_breakdown.py granite            # decoder: b1 × s512
    .venv/bin/python bench/oracle_breakdown.py deit --batch 2

Needs torch and transformers in the venv and g++ (as bench/oracle_memory.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from oracle_memory import CALIBRATION, DEPTH, FAMILIES, REAL_CPU, family_config  # noqa: E402

_CHILD = """
import json, sys
from collections import defaultdict
sys.path.insert(0, {calibration!r})
if {fake!r}:
    import fakecuda
    fakecuda.load()
import torch
from torch.utils._pytree import tree_leaves
import calib_harness, calib_models, measure
from torch.nn.modules import module as nn_module
where = []  # the modules running now, innermost last
nn_module.register_module_forward_pre_hook(lambda m, a: where.append(type(m).__name__))
nn_module.register_module_forward_hook(lambda m, a, o: where.pop() and None)

class Breakdown(calib_harness.LiveStorageCounter):
    # remembers which op made each storage; snapshots the forward's survivors at backward
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.origin, self.before, self.snapshot = {{}}, set(), None
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {{}}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type == self.device_type:
                key = t.untyped_storage()._cdata
                if key not in self.live:
                    self.origin[key] = (where[-1] if where else "-",
                                        str(func.overloadpacket.__name__), str(t.dtype)[6:],
                                        tuple(t.shape))
                self.track(t)
        return out
    def _record_peak(self):
        super()._record_peak()
        if AT == "peak":
            self.at_peak = (self.phase + " in " + ".".join(where[-3:]), self.resolved())
    def resolved(self):  # storage keys are reused once freed: name each one now
        other = ("(before the forward)", "", "", ())
        return [(n, other if key in self.before else self.origin.get(key, ("?", "?", "?", ())))
                for key, n in self.live.items()]
    def set_phase(self, name):
        if name == "forward":
            self.before = set(self.live)
        if name == "backward" and AT == "backward":
            self.at_peak = (name, self.resolved())
        super().set_phase(name)
    def grouped(self):
        groups = defaultdict(lambda: [0, 0])
        phase, live = self.at_peak
        for n, origin in live:
            g = groups[origin]
            g[0] += 1
            g[1] += n
        return phase, sorted(([*k, c, n] for k, (c, n) in groups.items()), key=lambda r: -r[5])

AT = {at!r}
counters = []
def make(device, *a, **k):
    counters.append(Breakdown(device, *a, **k))
    return counters[-1]
calib_harness.LiveStorageCounter = make
entry = json.loads({entry!r})
if entry:  # an oracle family; otherwise a name of the calibration catalog
    calib_models.catalog = lambda: {{entry["name"]: entry}}
run_on = dict(device="cuda") if {fake!r} else dict(device="cpu", fake=False)
result = measure.run_one(json.loads({job!r}), **run_on)
phase, rows = counters[-1].grouped()
print(json.dumps(dict(peak=result["measured_allocated_bytes"], phase=phase, rows=rows)))
"""


def breakdown(
    model_type: str, batch: int, seq: int, dtype: str, at: str = "backward", mode: str = "train"
) -> dict:
    entry: dict = {"name": model_type}
    family = next((f for f in FAMILIES if f["model_type"] == model_type), None)
    if family is not None:
        fields = family_config(model_type, family["kind"])
        structure = {
            k: v for k, v in fields.items() if k not in ("model_type", "transformers_version")
        }
        entry = {"name": f"oracle-{model_type}", "model_type": model_type, "config": structure}
        entry["kind"] = family["kind"]
    job = dict(name=f"{model_type}-{mode}", model=entry["name"], mode=mode, dtype=dtype)
    job.update(batch_size=batch, seq=seq, new_tokens=8 if mode == "generate" else 0)
    code = _CHILD.format(
        calibration=str(CALIBRATION),
        entry=json.dumps(entry if family else {}, default=str),
        job=json.dumps(job),
        at=at,
        fake=model_type not in REAL_CPU,
    )
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.strip()[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "model_type", help="an oracle family, or a model of tests/calibration's catalog"
    )
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=512, help="tokens, or the image side")
    parser.add_argument("--dtype", default="amp-bf16")
    parser.add_argument(
        "--mode",
        choices=("train", "inference", "generate"),
        default="train",
        help="inference, generate (prompt --seq, 8 new tokens): --at peak",
    )
    parser.add_argument(
        "--at",
        choices=("backward", "peak"),
        default="backward",
        help="list what is live at the start of the backward (default) or at the step's peak",
    )
    args = parser.parse_args(argv)
    at = "peak" if args.mode != "train" else args.at
    found = breakdown(args.model_type, args.batch, args.seq, args.dtype, at, args.mode)
    kind = next((f["kind"] for f in FAMILIES if f["model_type"] == args.model_type), "")
    tokens = args.batch * (1 if kind in ("vit", "hf-cnn") else args.seq)
    unit = "image" if kind in ("vit", "hf-cnn") else "token"
    print(f"peak {found['peak']:,} B; live at {found['phase']} ({at}), per {unit}:")
    print(
        f"{'module':<24} {'op':<36} {'dtype':<9} {'shape':<26} {'count':>5} {'bytes':>14} {'/token/layer':>13}"
    )
    total = 0
    for module, op, dtype, shape, count, nbytes in found["rows"]:
        total += nbytes
        per = nbytes / tokens / DEPTH
        print(
            f"{module[-24:]:<24} {op:<36} {dtype:<9} {str(tuple(shape)):<26} {count:>5} {nbytes:>14,} {per:>13,.0f}"
        )
    print(f"{'total':<103} {total:>14,} {total / tokens / DEPTH:>13,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
