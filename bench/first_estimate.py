"""The first estimate the editor makes of a script, with and without the server's warm-up.

In the editor the lint of a document runs first, then its estimate. The first estimate of
a session also loads the estimator's model and GPU catalogs, unless the server's warm-up
(``server/scheduler.warm_up``, run on a worker right after ``initialize``) has already
sized a tiny job. Each measurement is a fresh interpreter, so nothing is cached: lint the
script, then time one read + estimate (wall milliseconds, best of ``--runs`` processes).

    .venv/bin/python bench/first_estimate.py [SCRIPT ...] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

_DEFAULTS = (
    "/tmp/dev-corpus/mlfoundations__open_clip/src/open_clip_train/main.py",
    "/tmp/dev-corpus/AnswerDotAI__fsdp_qlora/train.py",
)

_ONE = """
import sys, time
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.job.runconfig import read_source
from torchward.estimator.estimate import estimate
path, warm = sys.argv[1], sys.argv[2] == "warm"
source = open(path, encoding="utf-8-sig").read()
if warm:
    from torchward.server.scheduler import warm_up
    warm_up()
analyze_source(source, path, LintSettings())
start = time.perf_counter()
config, _ = read_source(source, path)
try:
    estimate(config, None)
except LookupError:
    pass
print((time.perf_counter() - start) * 1000)
"""


def first_estimate(path: str, warm: bool, runs: int) -> float:
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _ONE, path, "warm" if warm else "cold"],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        times.append(float(done.stdout.split()[-1]))
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("scripts", nargs="*", default=list(_DEFAULTS))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    print(
        f"{'cold':>7} {'warmed':>7}  first estimate after the lint (wall ms, best of {args.runs})"
    )
    for path in args.scripts:
        if not os.path.exists(path):
            print(f"{path}: not found (materialise the development corpus)")
            continue
        cold = first_estimate(path, False, args.runs)
        warmed = first_estimate(path, True, args.runs)
        print(f"{cold:7.1f} {warmed:7.1f}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
