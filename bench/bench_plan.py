"""How long ``torchward plan`` takes on the bundled examples (issue 31: under 1 s).

Each job runs in a fresh interpreter, so the first (``cold``) call pays for loading the
model, GPU, instance and price catalogs; ``warm`` is the median of the calls after it in
the same process. Times are wall seconds of ``torchward.cli.main(["plan", ...])`` (JSON
output to a buffer, so terminal rendering is not timed); interpreter start-up and imports
are not counted. ``cpu s`` is the cold call's process CPU time: on a shared machine the
wall time also counts waiting for a core (the load average is printed). Also printed: how many plans fit, and how many estimates the search made.

    .venv/bin/python bench/bench_plan.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOBS = {
    "examples/bad_train.py": [os.path.join(ROOT, "examples", "bad_train.py")],
    "examples/good_train.py": [os.path.join(ROOT, "examples", "good_train.py")],
    "--model Llama-2-7b train, 2 nodes": [
        "--model",
        "meta-llama/Llama-2-7b-hf",
        "--mode",
        "train",
        "--batch-size",
        "8",
        "--seq-len",
        "2048",
        "--nodes",
        "2",
        "--max-gpus",
        "16",
    ],
    "--model gpt2 train": ["--model", "gpt2", "--mode", "train", "--batch-size", "16"],
    # tensor parallelism searched on every NVLink node (and kept where it saves a remedy)
    "--model Llama-2-13b train 4096, 8 GPUs": [
        "--model",
        "meta-llama/Llama-2-13b-hf",
        "--mode",
        "train",
        "--batch-size",
        "1",
        "--seq-len",
        "4096",
        "--gpus",
        "8",
    ],
}

_ONE = """
import io, json, statistics, sys, time
from contextlib import redirect_stdout
from torchward.cli import main
from torchward.estimator.planning import search as search_module
calls = 0
real = search_module.estimate_resolved
def counted(*a, **k):
    global calls
    calls += 1
    return real(*a, **k)
search_module.estimate_resolved = counted
argv = ["plan", *json.loads(sys.argv[1]), "--format", "json"]
times, cpu = [], []
for _ in range(int(sys.argv[2])):
    out = io.StringIO()
    calls = 0
    start, start_cpu = time.perf_counter(), time.process_time()
    with redirect_stdout(out):
        code = main(argv)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
plans = len(json.loads(out.getvalue())["plans"])
warm = statistics.median(times[1:]) if len(times) > 1 else None
print(json.dumps({"cold": times[0], "warm": warm, "cold_cpu": cpu[0], "plans": plans,
                  "estimates": calls, "exit": code}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="calls per job (first is cold)")
    args = parser.parse_args()
    print(f"{'job':<40} {'cold s':>7} {'cpu s':>7} {'warm s':>7} {'plans':>6} {'estimates':>10}")
    worst = 0.0
    for name, argv in JOBS.items():
        done = subprocess.run(
            [sys.executable, "-c", _ONE, json.dumps(argv), str(args.runs)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        row = json.loads(done.stdout.strip().splitlines()[-1])
        worst = max(worst, row["cold"])
        warm = f"{row['warm']:.3f}" if row["warm"] is not None else "-"
        print(
            f"{name:<40} {row['cold']:7.3f} {row['cold_cpu']:7.3f} {warm:>7} {row['plans']:6} "
            f"{row['estimates']:10}"
        )
    load = os.getloadavg()[0]
    print(f"slowest cold call: {worst:.3f} s wall (target < 1 s); load average {load:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
