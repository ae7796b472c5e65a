"""Cold start of the language server (issue 30): first diagnostics after ``initialize``.

A user opens a 1,000-line training script and the editor starts ``torchward lsp``. What
they wait for is the first squiggles. For ``--starts`` fresh server processes (each
one a cold start: a new interpreter importing everything it needs) this times, at the
client's end of the pipe (bench/lsp_client.py: push diagnostics, debounce 0):

- ``initialize``: process spawn → the ``initialize`` reply (the server answers before it
  imports the engine: server/lifecycle.py, docs/design/server.md "Start-up");
- ``first diagnostics``: the ``initialize`` reply → the first ``publishDiagnostics`` of
  the document, opened right after ``initialized`` as an editor does (target ≤ 1.5 s);
- ``spawn → diagnostics``: the two together.

The document is bench/synthetic_script.py's realistic training code (about 1,000 lines,
fresh names each run). Median and best over the starts; the CPU time of the server
process up to its first diagnostics is reported beside (the load of a shared machine
stretches wall time, not CPU time).

    .venv/bin/python bench/cold_start.py              # 5 starts
    .venv/bin/python bench/cold_start.py --starts 3 --lines 2000

Exit status 1 when the median misses the target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_lsp import cpu_seconds  # noqa: E402
from lsp_client import Client  # noqa: E402
from synthetic_script import training_script  # noqa: E402

TORCHWARD_LSP = [sys.executable, "-m", "torchward", "lsp"]
TARGET_S = 1.5


async def one_start(text: str, root: pathlib.Path) -> dict[str, float]:
    path = root / "train.py"
    path.write_text(text)
    uri = path.as_uri()
    spawned = time.perf_counter()
    client = await Client.start(TORCHWARD_LSP, {"debounceMs": 0})
    try:
        initialized = await client.initialize(root.as_uri(), {"debounceMs": 0})
        client.open(uri, text)
        arrived = await client.diagnostics_at(uri, 1, timeout=120)
        cpu = cpu_seconds(client.process.pid)
    finally:
        client.process.kill()
        await client.process.wait()
    return {
        "initialize": initialized - spawned,
        "first_diagnostics": arrived - initialized,
        "spawn_to_diagnostics": arrived - spawned,
        "cpu": cpu if cpu is not None else float("nan"),
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--lines", type=int, default=1000)
    args = parser.parse_args()
    runs = []
    for index in range(args.starts):
        text = training_script(args.lines)
        with tempfile.TemporaryDirectory(prefix="torchward-cold-") as folder:
            runs.append(await one_start(text, pathlib.Path(folder)))
        print(
            f"start {index + 1}: initialize {runs[-1]['initialize'] * 1000:.0f} ms, "
            f"first diagnostics {runs[-1]['first_diagnostics'] * 1000:.0f} ms after it, "
            f"server CPU {runs[-1]['cpu']:.2f} s",
            flush=True,
        )
    lines = text.count("\n")
    print(f"\n{lines} lines, {args.starts} fresh servers, load {os.getloadavg()[0]:.1f}")
    for key, label in (
        ("initialize", "spawn → initialize reply"),
        ("first_diagnostics", "initialize reply → first diagnostics"),
        ("spawn_to_diagnostics", "spawn → first diagnostics"),
        ("cpu", "server CPU to first diagnostics (s)"),
    ):
        values = [run[key] for run in runs]
        scale, unit = (1, "s") if key == "cpu" else (1000, "ms")
        print(
            f"  {label:40} median {statistics.median(values) * scale:7.0f}"
            f" {unit}   best {min(values) * scale:7.0f} {unit}"
            if key != "cpu"
            else f"  {label:40} median {statistics.median(values):7.2f} s    best {min(values):7.2f} s"
        )
    median = statistics.median(run["first_diagnostics"] for run in runs)
    verdict = "met" if median <= TARGET_S else "MISSED"
    print(f"\ntarget: first diagnostics ≤ {TARGET_S:.1f} s after initialize — {verdict}")
    return 0 if median <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
