"""``torchward check`` on generated 5k-40k-line files, per output format and file shape (issue 29).

Three shapes, each line count a fresh file in ``bench/.work/formats/``:

- ``functions``: many small training functions (7 lines each), every one with a
  fixable finding (an optimizer stepped without ``zero_grad``: TW003's proven-safe fix,
  written from the finding's payload without LibCST);
- ``function``: one function of straight-line statements (a training step unrolled:
  forward, loss, backward, step, zero_grad);
- ``module``: the same statements at module level.

Each file is checked with ``--no-cache --exit-zero`` in ``terminal``, ``json`` and
``sarif`` format (``--formats``); the figure is the child process's CPU time
(user + system, from ``resource.getrusage``: what the run costs, which the load of a
shared machine does not stretch), and its wall time beside it. ``json/terminal`` is the
cost of the machine-readable formats (they also build every finding's fix, with LibCST);
``x functions`` is a shape's terminal CPU against the many-functions file of that size.

    .venv/bin/python bench/bench_output_formats.py                       # 5k, 10k, 20k
    .venv/bin/python bench/bench_output_formats.py --sizes 20000 --shapes functions
    .venv/bin/python bench/bench_output_formats.py --sizes 20000 40000 --formats terminal

Issue 29's targets: json and sarif within 10% of terminal; the two straight-line shapes
within 2x the many-functions file.
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
WORK = HERE / ".work" / "formats"
TORCHWARD = [sys.executable, "-m", "torchward", "check", "--no-cache", "--exit-zero"]

FUNCTION = (
    "def train_{i}(model, loader, crit):\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n"
    "        crit(model(x), y).backward()\n"
    "        opt.step()\n\n\n"
)
STATEMENTS = (  # a training step, unrolled: every step() is preceded by a backward()
    "x_{i} = torch.randn(8, 16, device='cuda')\n",
    "out_{i} = model(x_{i})\n",
    "loss_{i} = criterion(out_{i}, y)\n",
    "loss_{i}.backward()\n",
    "optimizer.step()\n",
    "optimizer.zero_grad()\n",
    "total += loss_{i}.item()\n",
    "history.append(loss_{i})\n",
)
PREAMBLE = (
    "model = torch.nn.Linear(16, 4).cuda()\n",
    "optimizer = torch.optim.AdamW(model.parameters())\n",
    "criterion = torch.nn.CrossEntropyLoss()\n",
    "y = torch.zeros(8, dtype=torch.long)\n",
    "history = []\n",
    "total = 0.0\n",
)


def generate(shape: str, lines: int) -> str:
    out = ["import torch\n", "\n"]
    if shape == "functions":
        i = 0
        while len(out) < lines:
            out += FUNCTION.format(i=i).splitlines(keepends=True)
            i += 1
        return "".join(out[:lines])
    out += PREAMBLE
    indent = "    " if shape == "function" else ""
    if shape == "function":
        out.append("def run(model, optimizer, criterion, y, history, total):\n")
    i = 0
    while len(out) < lines:
        out += [indent + statement.format(i=i) for statement in STATEMENTS]
        i += 1
    return "".join(out[:lines])


def run(path: pathlib.Path, fmt: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ``torchward check`` in its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([*TORCHWARD, "--format", fmt, str(path)], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 20000])
    parser.add_argument(
        "--shapes",
        nargs="+",
        default=["functions", "function", "module"],
        choices=["functions", "function", "module"],
    )
    parser.add_argument("--formats", nargs="+", default=["terminal", "json", "sarif"])
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    print(
        f"{'shape':<10} {'lines':>6} "
        + " ".join(f"{f + ' cpu/wall s':>22}" for f in args.formats)
        + "  json/terminal  x functions"
    )
    baseline: dict[int, float] = {}
    for lines in args.sizes:
        for shape in args.shapes:
            path = WORK / f"{shape}_{lines}.py"
            path.write_text(generate(shape, lines))
            figures = {fmt: run(path, fmt) for fmt in args.formats}
            row = f"{shape:<10} {lines:>6} " + " ".join(
                f"{cpu:>13.2f} / {wall:>6.2f}" for cpu, wall in figures.values()
            )
            if "terminal" in figures and "json" in figures:
                row += f"  {figures['json'][0] / figures['terminal'][0]:>13.2f}"
            if "terminal" in figures:
                if shape == "functions":
                    baseline[lines] = figures["terminal"][0]
                if lines in baseline:
                    row += f"  {figures['terminal'][0] / baseline[lines]:>11.2f}"
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
