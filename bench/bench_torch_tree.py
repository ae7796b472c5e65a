"""What the cross-file index costs on PyTorch's own tree, against ``ast.parse`` (issue 29).

The target ("Linear costs"): ``torchward check`` of the whole PyTorch tree in one process
within 2x the CPU of ``ast.parse`` of the same files, and within 400 MB peak RSS. The
index must stay lazy (a module is summarised only when an import is followed) and
bounded (syntax trees are kept for a limited number of modules,
:mod:`torchward.analysis.workspace.index`).

Two commands, each in its own process and measured by ``os.wait4`` (user + system CPU
and the peak RSS of that process alone), alternating (parse, check, parse, check, ...)
so that whatever else loads the shared machine falls on both alike:

* ``ast.parse``: read and parse every ``.py`` file of the tree;
* ``torchward check TREE --no-cache --jobs 1`` (one process: no workers whose memory
  would be summed or missed), with ``TORCHWARD_CROSSFILE=1`` unless ``--crossfile 0``.

Run: ``nice -n 10 .venv/bin/python bench/bench_torch_tree.py /tmp/s16-torch --runs 1``
(the tree: the ``.py`` files of an installed ``torch`` package, copied). Prints a table
and writes everything to ``bench/.work/torch_tree.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
WORK = BENCH / ".work"

_PARSE_ALL = """
import ast, os, sys, warnings
warnings.simplefilter("ignore")
count = 0
for root, _dirs, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".py"):
            with open(os.path.join(root, name), "rb") as handle:
                data = handle.read()
            try:
                ast.parse(data)
                count += 1
            except (SyntaxError, ValueError):
                pass
print(count)
"""


def measure(command: list[str], env: dict[str, str], timeout: float) -> dict:
    """CPU seconds (user + system), wall seconds and peak RSS (MB) of one process, read
    from its own rusage (``os.wait4``), never summed with earlier children."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.DEVNULL)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                raise TimeoutError(command)
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read()
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "stdout": text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", help="the tree to check (the .py files of the torch package)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each command (alternating)")
    parser.add_argument("--crossfile", default="1", help="TORCHWARD_CROSSFILE for the check")
    parser.add_argument("--timeout", type=float, default=1800.0)
    options = parser.parse_args()
    env = dict(os.environ, TORCHWARD_CROSSFILE=options.crossfile)
    parse = [sys.executable, "-c", _PARSE_ALL, options.tree]
    check = [sys.executable, "-m", "torchward", "check", options.tree, "--no-cache"]
    check += ["--jobs", "1", "--format", "json", "--exit-zero"]
    runs: dict[str, list[dict]] = {"parse": [], "check": []}
    for _ in range(options.runs):
        for name, command in (("parse", parse), ("check", check)):
            result = measure(command, env, options.timeout)
            if name == "check":
                result["findings"] = len(json.loads(result.pop("stdout") or "[]"))
            else:
                result["files"] = int(result.pop("stdout").strip() or 0)
            print(
                f"{name:5}: {result['cpu_s']:7.1f} s CPU {result['wall_s']:7.1f} s wall "
                f"{result['peak_rss_mb']:7.0f} MB peak RSS",
                flush=True,
            )
            runs[name].append(result)
    summary = {
        name: {
            key: statistics.median(r[key] for r in mine)
            for key in ("cpu_s", "wall_s", "peak_rss_mb")
        }
        for name, mine in runs.items()
    }
    summary["cpu_ratio"] = summary["check"]["cpu_s"] / summary["parse"]["cpu_s"]
    summary["load_average"] = os.getloadavg()
    print(
        f"median CPU: ast.parse {summary['parse']['cpu_s']:.1f} s, check "
        f"{summary['check']['cpu_s']:.1f} s ({summary['cpu_ratio']:.1f}x); check peak RSS "
        f"{summary['check']['peak_rss_mb']:.0f} MB (load average {summary['load_average'][0]:.1f})"
    )
    WORK.mkdir(exist_ok=True)
    out = WORK / "torch_tree.json"
    out.write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
