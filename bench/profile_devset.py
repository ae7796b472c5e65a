"""`torchward profile SCRIPT` with no flags on each development-set script: measured, refused or crashed.

The development set is the 42 real training scripts of ``bench/estimator_scripts.json``
(paths relative to the dev corpus, ``$TORCHWARD_DEV_CORPUS``, default ``/tmp/dev-corpus``;
the corpus is read, never copied). Each script is profiled as a user runs the command —
``torchward profile SCRIPT --format json --no-cache``, from the script's folder — in its
own subprocess with a timeout. The subprocess runs the command's own ``run`` and, when it
refuses, reports the refusal's type (``PlanError`` for a model or job the source does not
decide, ``UserCodeError`` for the user's code failing to build it, ``InputsUnknown`` /
``ValueError`` for a step that cannot be run) — typed, never matched on its message — and
the refusal's text, which names the construct. Anything else (an exception escaping the
command, a timeout) is a crash.

    nice -n 10 .venv/bin/python bench/profile_devset.py [--python INTERPRETER] [--timeout 300]
        [--only SUBSTRING ...] [--json OUT.json]

``--python`` picks the interpreter that runs the profile; torchward must import there
(``python -m pip install --no-deps -e .`` and its base dependencies): the scripts that
import torchvision, timm or tiktoken need one that has them (torch 2.14.1 + torchvision
0.29.1 + timm + transformers + tiktoken here; the venv's CPU torch 2.13.0 has none).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "bench" / "estimator_scripts.json"

# Runs in the profiling interpreter: the CLI's own command, its refusals by type.
DRIVER = r"""
import contextlib, io, json, sys, traceback
from torchward.cli import build_parser
from torchward.errors import UsageError
from torchward.commands import profile

args = build_parser().parse_args(["profile", sys.argv[1], "--format", "json", "--no-cache"])
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        profile.run(args)
except UsageError as error:
    cause = error.__cause__ or error.__context__
    record = {"status": "refused", "reason": type(cause or error).__name__, "message": str(error)}
except BaseException as error:
    record = {"status": "crashed", "reason": type(error).__name__,
              "message": traceback.format_exc()[-1500:]}
else:
    data = json.loads(out.getvalue())
    record = {"status": "measured", "model": data.get("model"), "params": data.get("params"),
              "peak": data.get("allocated_bytes"), "device": data["measured"]["device"],
              "job": {k: v["value"] for k, v in data.get("config", {}).items()
                      if isinstance(v, dict) and "value" in v}}
print("\n" + json.dumps(record, default=str))
"""


def corpus() -> Path:
    return Path(os.environ.get("TORCHWARD_DEV_CORPUS", "/tmp/dev-corpus"))


def dev_scripts() -> list[str]:
    return [entry["path"] for entry in json.loads(SCRIPTS.read_text())["scripts"]]


def profile_one(python: str, script: Path, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [python, "-c", DRIVER, script.name],
            cwd=script.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"status": "crashed", "reason": "timeout", "message": f"over {timeout:.0f} s"}
    seconds = round(time.perf_counter() - started, 1)
    lines = done.stdout.strip().splitlines()
    try:
        record = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        record = {
            "status": "crashed",
            "reason": f"exit {done.returncode}",
            "message": (done.stderr or done.stdout)[-1500:],
        }
    record["seconds"] = seconds
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--only", nargs="*", default=[], help="substrings of the paths to run")
    parser.add_argument("--json", help="write the records here")
    args = parser.parse_args(argv)
    base = corpus()
    if not base.is_dir():
        print(f"no development corpus at {base} (set TORCHWARD_DEV_CORPUS)", file=sys.stderr)
        return 2
    records: dict[str, dict] = {}
    for path in dev_scripts():
        if args.only and not any(part in path for part in args.only):
            continue
        script = base / path
        record = (
            profile_one(args.python, script, args.timeout)
            if script.is_file()
            else {"status": "missing", "reason": "", "message": "not in the corpus"}
        )
        records[path] = record
        shown = record.get("model") if record["status"] == "measured" else record["reason"]
        print(f"{record['status']:9} {shown!s:28.28} {path}", file=sys.stderr, flush=True)
    print("| script | result | model / reason | peak MiB | s |\n|---|---|---|---|---|")
    for path, record in records.items():
        if record["status"] == "measured":
            what, peak = f"{record['model']} ({record['params']:,} params)", record["peak"] / 2**20
            shown = f"{peak:,.0f}" if peak >= 10 else f"{peak:.3f}"
            print(f"| {path} | measured | {what} | {shown} | {record['seconds']} |")
        else:
            first = record["message"].strip().splitlines()[-1][:160] if record["message"] else ""
            what = f"{record['reason']}: {first}".replace("|", "/")
            print(f"| {path} | {record['status']} | {what} | | {record.get('seconds', '')} |")
    counts = {
        s: sum(r["status"] == s for r in records.values())
        for s in ("measured", "refused", "crashed", "missing")
    }
    print("\n" + ", ".join(f"{n} {s}" for s, n in counts.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
