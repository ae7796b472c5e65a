"""LSP latency benchmark: the real ``torchward lsp`` over stdio (issue 3, "Speed").

What a user feels while typing is the time from a keystroke to the updated squiggles,
so every figure is measured at the client's end of the pipe (bench/lsp_client.py): the
time a notification is written until the matching ``publishDiagnostics`` (same URI,
same version) is read back. Debounce is 0, as the issue's targets assume.

- ``open``: didOpen → first diagnostics, each on a fresh URI (p50 / p95);
- ``edit``: a one-character didChange → the next diagnostics (p50 / p95): alternately
  typing and deleting a digit of a number literal near the middle of the file, so
  every version differs in meaning and stays valid Python;
- ``edit kinds`` (issue 11): didChange → diagnostics p50 / p95 for three kinds of edit, on
  two files at 1,000 and 5,000 lines — bench/synthetic_script.py (few findings per
  function) and bench/findings_script.py (~140 findings: every keystroke re-delivers
  them all):

  * ``valid``: a digit typed into / deleted from a number literal (always valid Python);
  * ``typing``: a statement typed character by character on a new line inside a
    function, most intermediate states invalid (``total_steps =``), then removed;
  * ``indent``: the last statement of a loop body dedented out of the loop and back
    (valid, and it changes what the function computes);

- ``start``: process spawn → ``initialize`` reply (median of ``--starts`` fresh servers);
- ``rss``: resident memory of a fresh server with 50 different ~1,000-line scripts open
  and analysed (each document's identifiers renamed so no cache can share work).

Scripts are bench/synthetic_script.py's realistic training code at 1,000 and 5,000
lines. When ``ruff`` can be installed (a side venv in bench/.work/ruff-venv, or
``--ruff PATH``), ``ruff server`` gets the same files and edits in the same run and the
ratio torchward / ruff is printed. Results also go to bench/.work/lsp-results.json.

    .venv/bin/python bench/bench_lsp.py              # ~2-3 minutes on 2 cores
    .venv/bin/python bench/bench_lsp.py --no-ruff --edits 20
    .venv/bin/python bench/bench_lsp.py --edit-kinds-only   # issue 11's table, ~1 minute
    .venv/bin/python bench/bench_lsp.py --edit-kinds-only --target-gpu t4  # with TW010 on

The load average at the start and end of the run is printed and saved with the results:
on a shared machine the figures stretch with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
WORK = HERE / ".work"
sys.path.insert(0, str(HERE))

from findings_script import findings_script  # noqa: E402
from lsp_client import Client  # noqa: E402
from synthetic_script import training_script  # noqa: E402

TORCHWARD = [sys.executable, "-m", "torchward", "lsp"]
TARGETS_MS = {  # the issue's targets (2-core machine)
    ("edit", 1000): 40,
    ("edit", 5000): 150,
    ("open", 1000): 120,
    ("start", 0): 1000,
}
RSS_TARGET_MB = 150
SIZES = (1000, 5000)
NUMBER = re.compile(r"(?<![\w.])\d")
# issue 11: every edit kind, both files; p50 / p95 targets in ms per size (2 cores)
EDIT_KIND_TARGETS = {1000: (20, 60), 5000: (100, None)}
EDIT_KINDS = ("valid", "typing", "indent")
FILES = {"few findings": training_script, "~140 findings": findings_script}
TYPED = "total_steps = step + 1"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` (all its threads) so far, from /proc."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def edit_site(text: str) -> tuple[int, int]:
    """(line, column) of the first digit of a number literal at or after the middle line."""
    lines = text.split("\n")
    for index in list(range(len(lines) // 2, len(lines))) + list(range(len(lines) // 2)):
        line = lines[index]
        if line.lstrip().startswith("#") or '"' in line or "'" in line:
            continue
        match = NUMBER.search(line)
        if match:
            return index, match.start()
    raise ValueError("no number literal to edit")


def ruff_command(explicit: str | None, allowed: bool) -> list[str] | None:
    """``ruff server``, from --ruff, PATH, or a side venv under bench/.work (installed once)."""
    if not allowed:
        return None
    if explicit:
        return [explicit, "server"]
    venv = WORK / "ruff-venv"
    ruff = venv / "bin" / "ruff"
    if not ruff.exists():
        try:
            WORK.mkdir(exist_ok=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
            subprocess.run(
                [str(venv / "bin" / "pip"), "install", "-q", "ruff"], check=True, timeout=300
            )
        except (subprocess.SubprocessError, OSError) as error:
            print(f"ruff not available ({error}); measuring torchward only", file=sys.stderr)
            return None
    return [str(ruff), "server"]


async def start(command: list[str], root: pathlib.Path, options: dict) -> tuple[Client, float]:
    began = time.perf_counter()
    client = await Client.start(command, settings=options)
    arrived = await client.initialize(root.as_uri(), options)
    return client, (arrived - began) * 1000


async def measure_latency(
    command: list[str], root: pathlib.Path, options: dict, size: int, opens: int, edits: int
) -> dict:
    text = training_script(size)
    client, _ = await start(command, root, options)
    try:
        open_ms = []
        for run in range(opens + 1):  # the first open also pays for lazy imports: reported apart
            uri = (root / f"open_{size}_{run}.py").as_uri()
            sent = client.open(uri, text)
            open_ms.append((await client.diagnostics_at(uri, 1) - sent) * 1000)
            client.close(uri)
        uri = (root / f"edit_{size}.py").as_uri()
        client.open(uri, text)
        await client.diagnostics_at(uri, 1)
        line, column = edit_site(text)
        edit_ms = []
        for version in range(2, edits + 2):
            if version % 2 == 0:
                sent = client.change(uri, version, line, column, "1")
            else:
                sent = client.change(uri, version, line, column, "", end_character=column + 1)
            edit_ms.append((await client.diagnostics_at(uri, version) - sent) * 1000)
        return {
            "lines": text.count("\n"),
            "first_open_ms": open_ms[0],
            "open_ms": open_ms[1:],
            "edit_ms": edit_ms,
        }
    finally:
        await client.stop()


def loop_body_end(text: str) -> tuple[int, str]:
    """(line, text) of the last statement of a ``for`` body near the middle of the file,
    followed by a line indented less (so dedenting it by 4 keeps the code valid)."""
    lines = text.split("\n")
    middle = len(lines) // 2
    for index in list(range(middle, len(lines) - 1)) + list(range(1, middle)):
        line, after = lines[index], lines[index + 1]
        indent = len(line) - len(line.lstrip(" "))
        after_indent = len(after) - len(after.lstrip(" "))
        if indent < 8 or not line.strip() or line.strip().startswith(("#", "return", "if", "for")):
            continue
        if after.strip() and after_indent >= indent:
            continue
        for back in range(index - 1, 0, -1):  # the enclosing block must be a for loop
            head = lines[back]
            head_indent = len(head) - len(head.lstrip(" "))
            if head.strip() and head_indent < indent:
                if head.lstrip().startswith("for ") and head_indent == indent - 4:
                    return index, line
                break
    raise ValueError("no loop body to dedent")


async def measure_edit_kinds(
    command: list[str], root: pathlib.Path, options: dict, text: str, name: str, edits: int
) -> tuple[dict[str, list[float]], dict[str, float | None]]:
    """didChange → publishDiagnostics (ms) for each kind of edit on one open document, and
    the server's CPU milliseconds per edit of each kind."""
    client, _ = await start(command, root, options)
    try:
        uri = (root / f"{name}.py").as_uri()
        client.open(uri, text)
        await client.diagnostics_at(uri, 1, timeout=120)
        version = 1
        samples: dict[str, list[float]] = {kind: [] for kind in EDIT_KINDS}
        # the server's CPU time per edit of each kind: what the edit costs, whatever the load
        cpu: dict[str, float | None] = {}
        pid = client.process.pid
        phase = {"edits": 0, "cpu": cpu_seconds(pid)}

        def end_phase(kind: str) -> None:
            now = cpu_seconds(pid)
            if now is None or phase["cpu"] is None or not phase["edits"]:
                cpu[kind] = None
            else:
                cpu[kind] = (now - phase["cpu"]) * 1000 / phase["edits"]
            phase.update(edits=0, cpu=now)

        async def send(line: int, start: int, end: int, new_text: str) -> float:
            nonlocal version
            phase["edits"] += 1
            version += 1
            sent = client.change(uri, version, line, start, new_text, end_character=end)
            return (await client.diagnostics_at(uri, version, timeout=120) - sent) * 1000

        line, column = edit_site(text)
        for index in range(edits):  # valid: type / delete a digit
            if index % 2 == 0:
                samples["valid"].append(await send(line, column, column, "1"))
            else:
                samples["valid"].append(await send(line, column, column + 1, ""))
        end_phase("valid")

        body, body_text = loop_body_end(text)
        indent = " " * (len(body_text) - len(body_text.lstrip(" ")))
        typed = 0
        while typed < edits:  # typing: a new statement, key by key, then removed
            end = len(body_text)
            await send(body, end, end, "\n" + indent)  # Enter: not a sample
            for offset, character in enumerate(TYPED):
                if typed == edits:
                    break
                column_at = len(indent) + offset
                samples["typing"].append(await send(body + 1, column_at, column_at, character))
                typed += 1
            line_now = indent + TYPED[: column_at - len(indent) + 1]
            version += 1  # remove the typed line (restores the text; not a sample)
            phase["edits"] += 1
            client.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [
                        {
                            "range": {
                                "start": {"line": body, "character": end},
                                "end": {"line": body + 1, "character": len(line_now)},
                            },
                            "text": "",
                        }
                    ],
                },
            )
            await client.diagnostics_at(uri, version, timeout=120)
        end_phase("typing")

        for index in range(edits):  # indent: dedent the loop's last statement and back
            if index % 2 == 0:
                samples["indent"].append(await send(body, 0, 4, ""))
            else:
                samples["indent"].append(await send(body, 0, 0, "    "))
        end_phase("indent")
        return samples, cpu
    finally:
        await client.stop()


async def bench_edit_kinds(command: list[str], options: dict, edits: int, root: pathlib.Path):
    results: dict = {}
    for label, make in FILES.items():
        for size in SIZES:
            text = make(size)
            name = f"kinds_{label.split()[0].strip('~')}_{size}"
            samples, cpu = await measure_edit_kinds(command, root, options, text, name, edits)
            results[f"{label}|{size}"] = {
                "lines": text.count("\n"),
                **{
                    kind: {**summary(values), "cpu_ms": cpu[kind]}
                    for kind, values in samples.items()
                },
            }
    return results


def report_edit_kinds(results: dict, load: tuple[str, str]) -> None:
    print(f"\nedit → diagnostics by kind of edit (ms; load average {load[0]} → {load[1]})")
    print("cpu: the server's CPU time per edit (all threads), which the load does not stretch")
    print(f"{'file':16} {'lines':>6} {'edit':8} {'p50':>8} {'p95':>8} {'cpu':>6}  target")
    for key, row in results.items():
        label, size = key.split("|")
        p50_target, p95_target = EDIT_KIND_TARGETS[int(size)]
        for kind in EDIT_KINDS:
            p50, p95 = row[kind]["p50"], row[kind]["p95"]
            verdicts = [verdict_at_most(p50, p50_target, "p50")]
            if p95_target is not None:
                verdicts.append(verdict_at_most(p95, p95_target, "p95"))
            cpu = row[kind].get("cpu_ms")
            cpu_text = f"{cpu:6.1f}" if cpu is not None else f"{'?':>6}"
            print(
                f"{label:16} {row['lines']:6d} {kind:8} {p50:8.1f} {p95:8.1f} {cpu_text}"
                f"  {'; '.join(verdicts)}"
            )


def verdict_at_most(value: float, target: float, stat: str) -> str:
    return f"{stat} <= {target:g} {'ok' if value <= target else 'MISSED'}"


def load_average() -> str:
    try:
        return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


async def measure_start(
    command: list[str], root: pathlib.Path, options: dict, runs: int
) -> list[float]:
    times = []
    for _ in range(runs):
        client, ms = await start(command, root, options)
        times.append(ms)
        await client.stop()
    return times


def measure_floor(runs: int) -> list[float]:
    """Spawning Python that only imports pygls and lsprotocol: what no server can beat."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import lsprotocol.types, pygls.lsp.server"], check=True
        )
        times.append((time.perf_counter() - began) * 1000)
    return times


async def measure_memory(
    command: list[str], root: pathlib.Path, options: dict, documents: int
) -> dict:
    client, _ = await start(command, root, options)
    try:
        await asyncio.sleep(0.2)
        baseline = client.rss_bytes()
        base = training_script(1000)
        for index in range(documents):
            uri = (root / f"memory_{index}.py").as_uri()
            client.open(
                uri, base.replace("model", f"model_{index}").replace("loader", f"loader_{index}")
            )
        for index in range(documents):
            await client.diagnostics_at((root / f"memory_{index}.py").as_uri(), 1, timeout=300)
        await asyncio.sleep(0.5)
        return {
            "documents": documents,
            "rss_start_mb": (baseline or 0) / 2**20,
            "rss_mb": (client.rss_bytes() or 0) / 2**20,
        }
    finally:
        await client.stop()


def summary(samples: list[float]) -> dict:
    return {"p50": statistics.median(samples), "p95": percentile(samples, 0.95), "n": len(samples)}


async def bench(name: str, command: list[str], options: dict, args, root: pathlib.Path) -> dict:
    result: dict = {"command": command}
    for size in SIZES:
        data = await measure_latency(command, root, options, size, args.opens, args.edits)
        result[str(size)] = {
            "lines": data["lines"],
            "first_open_ms": data["first_open_ms"],
            "open": summary(data["open_ms"]),
            "edit": summary(data["edit_ms"]),
        }
    result["start"] = summary(await measure_start(command, root, options, args.starts))
    if name == "torchward":
        result["import_floor"] = summary(measure_floor(args.starts))
    result["memory"] = await measure_memory(command, root, options, args.documents)
    return result


def verdict(value: float, target: float | None) -> str:
    if target is None:
        return ""
    return f"target < {target:g}  {'ok' if value < target else 'MISSED'}"


def report(results: dict) -> None:
    tw, ruff = results["torchward"], results.get("ruff")
    print(f"\n{'figure':42} {'torchward':>12} {'ruff':>10} {'ratio':>7}  target")
    rows = []
    for size in SIZES:
        key = str(size)
        lines = tw[key]["lines"]
        for kind, label in (
            ("open", "didOpen → diagnostics"),
            ("edit", "1-char didChange → diagnostics"),
        ):
            for stat in ("p50", "p95"):
                target = TARGETS_MS.get((kind, size)) if stat == "p50" or kind == "open" else None
                rows.append(
                    (
                        f"{label} {stat}, {lines} lines (ms)",
                        tw[key][kind][stat],
                        ruff[key][kind][stat] if ruff else None,
                        target,
                    )
                )
        rows.append(
            (
                f"first didOpen (lazy imports), {lines} lines (ms)",
                tw[key]["first_open_ms"],
                ruff[key]["first_open_ms"] if ruff else None,
                None,
            )
        )
    rows.append(
        (
            "start → initialize reply, median (ms)",
            tw["start"]["p50"],
            ruff["start"]["p50"] if ruff else None,
            TARGETS_MS[("start", 0)],
        )
    )
    rows.append(
        ("  floor: python importing pygls+lsprotocol (ms)", tw["import_floor"]["p50"], None, None)
    )
    rows.append(
        (
            f"RSS with {tw['memory']['documents']} documents open (MB)",
            tw["memory"]["rss_mb"],
            ruff["memory"]["rss_mb"] if ruff else None,
            RSS_TARGET_MB,
        )
    )
    rows.append(
        (
            "RSS after start (MB)",
            tw["memory"]["rss_start_mb"],
            ruff["memory"]["rss_start_mb"] if ruff else None,
            None,
        )
    )
    for label, ours, theirs, target in rows:
        other = f"{theirs:10.1f}" if theirs is not None else f"{'-':>10}"
        ratio = f"{ours / theirs:6.1f}x" if theirs else f"{'-':>7}"
        print(f"{label:42} {ours:12.1f} {other} {ratio}  {verdict(ours, target)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--opens", type=int, default=10, help="didOpen samples per size (after one warm-up)"
    )
    parser.add_argument("--edits", type=int, default=30, help="didChange samples per size")
    parser.add_argument(
        "--starts", type=int, default=5, help="fresh servers started for the start-up figure"
    )
    parser.add_argument(
        "--documents", type=int, default=50, help="documents open for the memory figure"
    )
    parser.add_argument(
        "--edit-kinds-only",
        action="store_true",
        help="only the edit-kind table (valid / typing / indent on both files, 1k and 5k lines)",
    )
    parser.add_argument("--ruff", metavar="PATH", help="the ruff executable to compare with")
    parser.add_argument("--no-ruff", action="store_true", help="measure torchward only")
    parser.add_argument(
        "--target-gpu",
        metavar="GPU",
        help="the torchward.targetGpu setting (TW010 reads the job on every analysis)",
    )
    args = parser.parse_args(argv)
    WORK.mkdir(exist_ok=True)
    root = WORK / "lsp-project"
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.torchward]\n")
    results: dict = {"cpus": os.cpu_count(), "load_start": load_average()}
    options: dict = {"debounceMs": 0}
    if args.target_gpu:
        options["targetGpu"] = args.target_gpu
        results["target_gpu"] = args.target_gpu
    if not args.edit_kinds_only:
        results["torchward"] = asyncio.run(bench("torchward", TORCHWARD, options, args, root))
        ruff = ruff_command(args.ruff, not args.no_ruff)
        if ruff:
            results["ruff"] = asyncio.run(bench("ruff", ruff, {}, args, root))
    results["edit_kinds"] = asyncio.run(bench_edit_kinds(TORCHWARD, options, args.edits, root))
    results["load_end"] = load_average()
    (WORK / "lsp-results.json").write_text(json.dumps(results, indent=2))
    if not args.edit_kinds_only:
        report(results)
    report_edit_kinds(results["edit_kinds"], (results["load_start"], results["load_end"]))
    print(f"\n{os.cpu_count()} CPUs; details in {WORK / 'lsp-results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
