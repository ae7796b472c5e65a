"""Read + estimate time (or launch mode's) of two versions of torchward, measured interleaved.

On a shared machine a slow spell lasts seconds and moves every number taken during it;
two benches run one after the other compare spells, not code. This one checks out both
git refs (``git worktree``, in a temporary folder), starts one worker process per ref,
and for each development script asks them in turn — A, B, A, B... — for the CPU time of
one read + estimate, keeping each side's best of ``--runs`` (after a first read that pays
for sibling modules and catalogs). Both sides meet the same spells.

    .venv/bin/python bench/reader_ab.py main fold-switch [--runs 7] [--corpus /tmp/dev-corpus]
    .venv/bin/python bench/reader_ab.py HEAD~1 HEAD --launch   # the engine's launch mode alone
    .venv/bin/python bench/reader_ab.py HEAD~1 HEAD --lint     # the lint's dataflow alone

A ref may be ``WORKTREE``: the working tree as it is, uncommitted changes included.

A worker imports ``torchward`` from its checkout (the three folders the distribution maps
to ``torchward.analysis`` / ``.estimator`` / ``.server``), never the installed one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from checkout_import import PRELUDE  # noqa: E402

_WORKER = (
    PRELUDE.format(bench=HERE)
    + r"""
import time
root = sys.argv[1]
import_checkout(root)
import ast
from torchward.analysis.facts.filefacts import build_launch_facts
from torchward.analysis.job.runconfig import read_source
from torchward.estimator.estimate import estimate
assert sys.modules["torchward.analysis.job.runconfig"].__file__.startswith(root)
from torchward.analysis.facts.filefacts import build_facts
try:  # a read, not the memo's answer (analysis/job/runconfig_memo.py, where it exists)
    from torchward.analysis.job.runconfig_memo import forget
except ImportError:
    def forget():
        pass
measured = sys.argv[2]
for line in sys.stdin:
    path = line.strip()
    with open(path, encoding="utf-8-sig") as handle:
        source = handle.read()
    tree = ast.parse(source) if measured != "read" else None
    forget()
    start = time.process_time()
    if measured == "launch":
        build_launch_facts(tree, source, path)
    elif measured == "lint":
        build_facts(tree, source, path)
    else:
        config, _ = read_source(source, path)
        try:
            estimate(config, None)
        except LookupError:
            pass
    print(f"{(time.process_time() - start) * 1000:.3f}", flush=True)
"""
)


class _Worker:
    def __init__(self, checkout: str, measured: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER, checkout, measured],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tempfile.gettempdir(),
        )

    def time(self, script: str) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(script + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="git ref of the first reader (e.g. main)")
    parser.add_argument("b", help="git ref of the second reader")
    parser.add_argument("--runs", type=int, default=7, help="timed reads per script and side")
    parser.add_argument("--corpus", default="/tmp/dev-corpus")
    parser.add_argument(
        "--launch", action="store_true", help="time launch mode alone (the tree given)"
    )
    parser.add_argument(
        "--lint", action="store_true", help="time the lint's dataflow alone (the tree given)"
    )
    args = parser.parse_args(argv)
    with open(os.path.join(HERE, "estimator_scripts.json"), encoding="utf-8") as handle:
        scripts = [os.path.join(args.corpus, s["path"]) for s in json.load(handle)["scripts"]]
    with tempfile.TemporaryDirectory(prefix="reader-ab-") as folder:
        checkouts, added = [], []
        for side, ref in (("a", args.a), ("b", args.b)):
            if ref == "WORKTREE":
                checkouts.append(ROOT)
                continue
            checkout = os.path.join(folder, side)
            subprocess.run(
                ["git", "-C", ROOT, "worktree", "add", "--detach", "-q", checkout, ref], check=True
            )
            checkouts.append(checkout)
            added.append(checkout)
        measured = "launch" if args.launch else "lint" if args.lint else "read"
        workers = [_Worker(checkout, measured) for checkout in checkouts]
        best: list[list[float]] = [[], []]
        try:
            print(f"{args.a:>10} {args.b:>10}  script (CPU ms, best of {args.runs}, interleaved)")
            for script in scripts:
                for worker in workers:
                    worker.time(script)  # the first read: sibling modules, catalogs
                times = [float("inf"), float("inf")]
                for _ in range(args.runs):
                    for side, worker in enumerate(workers):
                        times[side] = min(times[side], worker.time(script))
                for side in (0, 1):
                    best[side].append(times[side])
                print(f"{times[0]:10.1f} {times[1]:10.1f}  {os.path.relpath(script, args.corpus)}")
        finally:
            for worker in workers:
                worker.close()
            for checkout in added:
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", checkout])
    for ref, values in zip((args.a, args.b), best):
        print(
            f"{ref}: median {statistics.median(values):.1f} ms, max {max(values):.1f} ms, "
            f"total {sum(values):.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
