"""What cross-file analysis costs: a whole-tree check with and without it (issue 15).

The target: ``torchward check`` of the development corpus within 1.5x of the time it
takes when every file is analysed alone. Both runs use the same command, the same tree
and the same engine; only ``TORCHWARD_CROSSFILE=0`` (every file alone, as before issue
15) differs. Runs alternate (off, on, off, on, ...) so that whatever else loads the
machine falls on both alike; CPU seconds (user + system of the tool and its workers) are
the steadier figure on a shared machine, wall seconds are reported too.

Run: ``.venv/bin/python bench/bench_crossfile.py /tmp/dev-corpus --runs 2``. Prints a
table and writes everything, with the findings each mode reported, to
``bench/.work/crossfile.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
WORK = BENCH / ".work"


def run(tree: str, crossfile: bool, jobs: int | None, timeout: float) -> dict:
    """One ``torchward check --no-cache`` of ``tree``: CPU and wall seconds, findings."""
    env = dict(os.environ, TORCHWARD_CROSSFILE="1" if crossfile else "0")
    command = [sys.executable, "-m", "torchward", "check", tree, "--no-cache"]
    command += ["--format", "json", "--exit-zero"]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    findings = json.loads(done.stdout) if done.stdout.strip() else []
    return {"crossfile": crossfile, "cpu_s": cpu, "wall_s": wall, "findings": findings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", help="the tree to check (the development corpus)")
    parser.add_argument("--runs", type=int, default=2, help="runs of each mode (alternating)")
    parser.add_argument("--jobs", type=int, default=None, help="torchward --jobs (default: CPUs)")
    parser.add_argument("--timeout", type=float, default=1800.0)
    options = parser.parse_args()
    results = []
    for _ in range(options.runs):
        for crossfile in (False, True):
            result = run(options.tree, crossfile, options.jobs, options.timeout)
            print(
                f"cross-file {'on ' if crossfile else 'off'}: {result['cpu_s']:7.1f} s CPU "
                f"{result['wall_s']:7.1f} s wall  {len(result['findings'])} findings",
                flush=True,
            )
            results.append(result)
    summary = {}
    for crossfile in (False, True):
        mine = [r for r in results if r["crossfile"] is crossfile]
        summary["on" if crossfile else "off"] = {
            "cpu_s": statistics.median(r["cpu_s"] for r in mine),
            "wall_s": statistics.median(r["wall_s"] for r in mine),
            "findings": len(mine[-1]["findings"]),
        }
    summary["cpu_ratio"] = summary["on"]["cpu_s"] / summary["off"]["cpu_s"]
    summary["wall_ratio"] = summary["on"]["wall_s"] / summary["off"]["wall_s"]
    summary["load_average"] = os.getloadavg()
    print(
        f"median CPU {summary['off']['cpu_s']:.1f} s -> {summary['on']['cpu_s']:.1f} s "
        f"({summary['cpu_ratio']:.2f}x); wall {summary['wall_ratio']:.2f}x "
        f"(load average {summary['load_average'][0]:.1f})"
    )
    WORK.mkdir(exist_ok=True)
    out = WORK / "crossfile.json"
    out.write_text(json.dumps({"summary": summary, "runs": results}, indent=1))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
