"""Server time against document size (issue 10 §4): is the server linear in the document?

For documents of 10k, 20k and 50k lines (bench/synthetic_script.py's realistic training
code, each size a fresh text) the real ``torchward lsp`` over stdio is measured at the
client's end of the pipe (bench/lsp_client.py), debounce 0:

- ``cli``: ``torchward check FILE --no-cache --exit-zero --format grouped`` wall time on
  the same text (the reference: the issue's target is first diagnostics within 2x it;
  ``grouped``, not ``json``: JSON and SARIF also build every finding's fixes, which the
  server builds only when a code action asks);
- ``open``: didOpen -> first publishDiagnostics;
- ``keystroke``: a one-character didChange near the middle -> its publishDiagnostics
  (median of ``--edits``; target < 1 s), and beside it the server's CPU time for it
  (``/proc/PID/stat``, all threads: what the edit costs, which the load of a shared
  machine does not stretch);
- ``ratio``: open / cli, and how each figure grows from the smallest size to the
  largest against the growth of the line count (about 1.0 is linear, 2.0 quadratic).

A document over the server's ``largeFileLines`` (default 60,000; ``--large-file-lines``
sets it, 0: never) is analysed on open and save only (server/onsave.py): its
keystroke figure is then the time to the moved findings (``mode: on save``), and the
bench also times ``save``: didSave -> the diagnostics of the saved text's analysis.
``--large-file-lines 0`` measures every size as you type.

    .venv/bin/python bench/bench_lsp_size.py                  # 10k, 20k, 50k lines
    .venv/bin/python bench/bench_lsp_size.py --sizes 10000 50000 --edits 3
    .venv/bin/python bench/bench_lsp_size.py --sizes 50000 --large-file-lines 0

Results also go to bench/.work/lsp-size-results.json. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
WORK = HERE / ".work"
sys.path.insert(0, str(HERE))

from bench_lsp import cpu_seconds, edit_site  # noqa: E402
from lsp_client import Client  # noqa: E402
from synthetic_script import training_script  # noqa: E402

TORCHWARD_LSP = [sys.executable, "-m", "torchward", "lsp"]
TORCHWARD = [sys.executable, "-m", "torchward"]
KEYSTROKE_TARGET_S = 1.0
OPEN_TARGET_RATIO = 2.0
DEFAULT_LARGE_FILE_LINES = 60_000  # server/configuration.py


def cli_seconds(path: pathlib.Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [*TORCHWARD, "check", str(path), "--no-cache", "--exit-zero", "--format", "grouped"],
        cwd=path.parent,
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - started


async def server_seconds(
    text: str, folder: pathlib.Path, edits: int, options: dict
) -> tuple[float, list[float], float | None, list[float]]:
    """Open -> diagnostics, each keystroke -> diagnostics, and (``save``) didSave -> the
    diagnostics of the saved text (None when the server analyses as you type)."""
    client = await Client.start(TORCHWARD_LSP, options)
    try:
        await client.initialize(folder.as_uri(), options)
        uri = (folder / "big.py").as_uri()
        sent = time.perf_counter()
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        opened = await client.diagnostics_at(uri, 1, timeout=600) - sent
        line, column = edit_site(text)
        typed, cpu = [], []
        for version in range(2, edits + 2):
            insert = version % 2 == 0
            change = {
                "range": {
                    "start": {"line": line, "character": column},
                    "end": {"line": line, "character": column if insert else column + 1},
                },
                "text": "7" if insert else "",
            }
            used = cpu_seconds(client.process.pid) or 0.0
            sent = time.perf_counter()
            client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
            )
            typed.append(await client.diagnostics_at(uri, version, timeout=600) - sent)
            cpu.append((cpu_seconds(client.process.pid) or 0.0) - used)
        saved = None
        if options["largeFileLines"] and text.count("\n") + 1 > options["largeFileLines"]:
            last = edits + 1
            client.published.pop((uri, last), None)
            sent = time.perf_counter()
            client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            saved = await client.diagnostics_at(uri, last, timeout=600) - sent
        return opened, typed, saved, cpu
    finally:
        try:
            await client.request("shutdown", None, timeout=30)
            client.notify("exit", None)
        except Exception:
            pass
        if client.process.returncode is None:
            client.process.kill()
        await client.process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 50_000])
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument(
        "--large-file-lines",
        type=int,
        default=DEFAULT_LARGE_FILE_LINES,
        help="the server's largeFileLines (0: analyse every size as you type)",
    )
    args = parser.parse_args(argv)
    options = {"debounceMs": 0, "largeFileLines": args.large_file_lines}
    results = []
    with tempfile.TemporaryDirectory(prefix="torchward-size-") as folder:
        root = pathlib.Path(folder)
        (root / "pyproject.toml").write_text("[tool.torchward]\n")
        for size in args.sizes:
            text = training_script(size)
            path = root / "big.py"
            path.write_text(text)
            lines = text.count("\n")
            cli = cli_seconds(path)
            opened, typed, saved, cpu = asyncio.run(server_seconds(text, root, args.edits, options))
            keystroke = statistics.median(typed)
            results.append(
                {
                    "lines": lines,
                    "mode": "as you type" if saved is None else "on save",
                    "cli_s": cli,
                    "open_s": opened,
                    "keystroke_s": keystroke,
                    "keystrokes_s": typed,
                    "keystroke_cpu_s": statistics.median(cpu),
                    "save_s": saved,
                }
            )
            print(
                f"{lines:>7,} lines: cli {cli:6.2f} s | open -> diagnostics {opened:6.2f} s "
                f"({opened / cli:.2f}x cli) | keystroke -> diagnostics median {keystroke:5.2f} s "
                f"(max {max(typed):.2f} s, server CPU {statistics.median(cpu):.2f} s)"
                + ("" if saved is None else f" | on save: save -> diagnostics {saved:5.2f} s"),
                flush=True,
            )
    failed = False
    for item in results:
        failed |= item["keystroke_s"] >= KEYSTROKE_TARGET_S
        failed |= item["open_s"] > OPEN_TARGET_RATIO * item["cli_s"]
    typed = [item for item in results if item["mode"] == "as you type"]
    for key, measured in (("cli_s", results), ("open_s", results), ("keystroke_s", typed)):
        if len(measured) < 2:
            continue  # a keystroke on save only is not an analysis: no growth to report
        first, last = measured[0], measured[-1]
        growth = math.log(last["lines"] / first["lines"])
        exponent = math.log(last[key] / first[key]) / growth if first[key] > 0 else float("nan")
        print(
            f"growth exponent of {key[:-2]} ({first['lines']:,} -> {last['lines']:,} lines): "
            f"{exponent:.2f} (1 = linear, 2 = quadratic)"
        )
    print(
        f"targets: open <= {OPEN_TARGET_RATIO}x cli, keystroke < {KEYSTROKE_TARGET_S} s: "
        + ("missed" if failed else "met")
    )
    WORK.mkdir(exist_ok=True)
    (WORK / "lsp-size-results.json").write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
