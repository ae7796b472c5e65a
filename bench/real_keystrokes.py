"""Keystroke latency of the language server on real training scripts, in their repository.

``bench/bench_lsp.py`` measures generated files; real scripts differ where it matters to
the engine: a whole training loop in a module-level ``if __name__ == "__main__":`` block
(re-run on every keystroke, since only functions are cached), dozens of project imports
(yolov5's ``utils``). For each script, a fresh ``torchward lsp`` is started with the
script's repository (``CORPUS/OWNER__NAME``) as its workspace, the script is opened, then
a digit is typed into and deleted from the first number literal past the middle of the
file, ``--edits`` times; the time from each ``didChange`` to its ``publishDiagnostics`` is
reported (p50 / p95 / max, ms), with the first open's.

``--checkout A --checkout B`` runs the servers of two checkouts in turn, A B A B, so both
meet the same spells of a shared machine (a checkout's ``analysis`` / ``estimator`` /
``server`` folders are imported, never the installed package).

    .venv/bin/python bench/real_keystrokes.py            # the development set's largest scripts
    .venv/bin/python bench/real_keystrokes.py --checkout /tmp/base --checkout . --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from checkout_import import PRELUDE  # noqa: E402
from lsp_client import Client  # noqa: E402

SCRIPTS = (
    "ultralytics__yolov5/train.py",
    "karpathy__llm.c/train_gpt2.py",
    "AnswerDotAI__fsdp_qlora/train.py",
    "mlfoundations__open_clip/src/open_clip_train/main.py",
    "huggingface__peft/examples/lora_dreambooth/train_dreambooth.py",
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
# starts ``torchward lsp`` from the checkout given as argv[1]
_SERVE = (
    PRELUDE.format(bench=HERE)
    + """
import_checkout(sys.argv[1])
from torchward.cli import main
sys.exit(main(["lsp"]))
"""
)


def _edit_site(lines: list[str]) -> tuple[int, int]:
    """The first number literal at or past the middle of the file (not in a comment)."""
    middle = len(lines) // 2
    for number in [*range(middle, len(lines)), *range(middle)]:
        found = _NUMBER.search(lines[number])
        if found and not lines[number].lstrip().startswith("#"):
            return number, found.start()
    raise ValueError("no number literal to edit")


async def measure(command: list[str], corpus: str, script: str, edits: int) -> dict:
    path = os.path.join(corpus, script)
    root = pathlib.Path(corpus, script.split("/", 1)[0])
    client = await Client.start(command, settings={"debounceMs": 0})
    await client.initialize(root.as_uri(), {"debounceMs": 0})
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    uri = pathlib.Path(path).as_uri()
    sent = client.open(uri, text)
    opened = (await client.diagnostics_at(uri, 1) - sent) * 1000
    line, column = _edit_site(text.splitlines())
    times, version = [], 1
    for count in range(edits):
        version += 1
        if count % 2 == 0:
            sent = client.change(uri, version, line, column, "7")
        else:
            sent = client.change(uri, version, line, column, "", end_character=column + 1)
        times.append((await client.diagnostics_at(uri, version) - sent) * 1000)
        await asyncio.sleep(0.02)  # keystrokes, not a paste: under the estimate's pause
    await client.stop()
    times.sort()
    return {
        "open": opened,
        "p50": statistics.median(times),
        "p95": times[max(0, int(len(times) * 0.95) - 1)],
        "max": times[-1],
        "lines": len(text.splitlines()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="/tmp/dev-corpus")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--checkout", action="append", default=[], help="a checkout to serve")
    parser.add_argument("scripts", nargs="*", default=list(SCRIPTS))
    args = parser.parse_args(argv)
    servers = [
        (os.path.abspath(c), [sys.executable, "-c", _SERVE, os.path.abspath(c)])
        for c in args.checkout
    ] or [("installed", [sys.executable, "-m", "torchward", "lsp"])]
    print(f"{'server':<24} {'open':>7} {'p50':>7} {'p95':>7} {'max':>7}  script (ms)")
    for _ in range(args.rounds):
        for script in args.scripts:
            for name, command in servers:
                found = asyncio.run(measure(command, args.corpus, script, args.edits))
                print(
                    f"{name[-24:]:<24} {found['open']:7.1f} {found['p50']:7.1f}"
                    f" {found['p95']:7.1f} {found['max']:7.1f}  {script} ({found['lines']} lines)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
