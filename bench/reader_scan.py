"""The script reader on every training script of the corpus outside the development set.

A script counts when it calls ``.backward(``, mentions an optimizer and has a ``__main__``
guard or an argument parser. Each is estimated (``torchward estimate SCRIPT --format
json``, no GPU), and the summary says how many have a model sized, named but not sized, or
honestly unknown, then lists every field read with *high* confidence — the ones a wrong
value would hurt most — so each can be checked against its source line by hand
(docs/triage/dev-corpus.md, session 6).

    .venv/bin/python bench/reader_scan.py [--corpus /tmp/dev-corpus] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_DEV_SET = os.path.join(HERE, "estimator_scripts.json")


def training_scripts(corpus: str) -> list[str]:
    with open(_DEV_SET, encoding="utf-8") as handle:
        development = {s["path"] for s in json.load(handle)["scripts"]}
    found = []
    for root, _dirs, files in os.walk(corpus):
        for name in files:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, corpus)
            if not name.endswith(".py") or relative in development:
                continue
            with open(path, encoding="utf-8", errors="ignore") as handle:
                text = handle.read()
            if (
                ".backward(" in text
                and "optim" in text
                and ("__main__" in text or "parse_args" in text)
            ):
                found.append(relative)
    return sorted(found)


def estimate(path: str) -> dict | None:
    torchward = os.path.join(os.path.dirname(sys.executable), "torchward")
    command = [torchward] if os.path.exists(torchward) else [sys.executable, "-m", "torchward"]
    done = subprocess.run(
        [*command, "estimate", path, "--format", "json"], capture_output=True, text=True, timeout=60
    )
    try:
        return json.loads(done.stdout)
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--corpus", default=os.environ.get("TORCHWARD_DEV_CORPUS", "/tmp/dev-corpus")
    )
    parser.add_argument("--json", metavar="PATH", help="write every report here")
    args = parser.parse_args(argv)
    reports = {
        rel: estimate(os.path.join(args.corpus, rel)) for rel in training_scripts(args.corpus)
    }
    kinds: collections.Counter[str] = collections.Counter()
    for rel, report in reports.items():
        if report is None:
            kinds["no report (error)"] += 1
        elif report.get("model") is None:
            kinds["honest unknown"] += 1
        elif report.get("verdict") == "unknown":
            kinds["named, not sized (lower bound)"] += 1
        else:
            kinds["sized"] += 1
    print(f"{len(reports)} training scripts outside the development set: {dict(kinds)}")
    print("fields read with high confidence (check each against its line):")
    for rel, report in reports.items():
        for name, field in ((report or {}).get("config") or {}).items():
            if isinstance(field, dict) and field.get("confidence") == "high":
                line = str(field.get("source", "")).rsplit(":", 1)[-1]
                print(f"  {rel}:{line}  {name} = {str(field.get('value'))[:60]}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(reports, handle, indent=1)
    return 1 if kinds["no report (error)"] else 0


if __name__ == "__main__":
    sys.exit(main())
