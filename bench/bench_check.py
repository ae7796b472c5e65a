"""Benchmark ``torchward check`` on PyTorch's own source tree, against torch-preflight.

Why this exists: issue 2 §5 sets speed targets that only count if anyone can re-measure
them with one command on the 2-core reference machine —

* cold (no cache) at least 10x faster than torch-preflight 0.5.0 on the same tree;
* warm (cache filled by a previous run) under 3 s;
* one ~1,000-line training script in under 100 ms in process.

What it does, in order (each step bounded by a timeout):

1. ``pip download torch==2.13.0 --no-deps`` into ``bench/.work/wheels`` (served from this
   machine's disk) and extract only the ``.py`` files into ``bench/.work/torch-src``
   (skipped when already there). The linted tree is ``torch-src/torch`` — the 2,285 files
   torch-preflight's own figures are quoted for.
2. ``torchward check torch --exit-zero --format json`` three times: ``--no-cache`` (cold),
   cache emptied then filled (cold, first run) and again with the cache (warm). Default
   ``--jobs`` unless ``--jobs`` is given here.
3. torch-preflight 0.5.0 in a side venv ``bench/.work/preflight-venv`` (created and
   installed when missing; when it cannot be installed the benchmark says so and goes
   on), run on the same tree with the same number of jobs.
4. ``analyze_source`` on the synthetic script of ``bench/synthetic_script.py``: median
   of N runs after one warm-up.

It prints a table and writes everything to ``bench/.work/results.json``.

Run: ``.venv/bin/python bench/bench_check.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
WHEELS = WORK / "wheels"
TORCH_SRC = WORK / "torch-src"
PREFLIGHT_VENV = WORK / "preflight-venv"
RESULTS = WORK / "results.json"

TORCH_VERSION = "2.13.0"
PREFLIGHT_VERSION = "0.5.0"
#: The subtree that is linted. torch-preflight's "2,285 files, about four minutes" is for
#: the ``torch`` package alone; the wheel's ``torchgen``/``functorch`` are extracted too.
LINTED_SUBDIR = "torch"
CACHE_DIRNAME = ".torchward_cache"

# Targets from issue 2 §5.
TARGET_RATIO = 10.0
TARGET_WARM_S = 3.0
TARGET_SINGLE_MS = 100.0


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the torch tree


def ensure_torch_tree(timeout: float) -> Path:
    """Return the extracted tree, downloading and extracting the wheel when needed.

    A marker file records a finished extraction, so an interrupted one is redone rather
    than silently benchmarked on half a tree. The tree is made its own git repository
    root (an empty ``git init``) because ``bench/.work/`` is git-ignored in this repo and
    torchward, like git, honours the ``.gitignore`` files of the enclosing repository; a
    ``pyproject.toml`` with an empty ``[tool.torchward]`` keeps this repo's configuration
    from applying to PyTorch's source.
    """
    marker = TORCH_SRC / ".extracted"
    if marker.exists() and marker.read_text().strip() == TORCH_VERSION:
        isolate_tree(TORCH_SRC)
        return TORCH_SRC
    wheel = find_wheel()
    if wheel is None:
        log(f"downloading torch=={TORCH_VERSION} (no deps) into {WHEELS}")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"torch=={TORCH_VERSION}",
                "--no-deps",
                "-d",
                str(WHEELS),
                "-q",
            ],
            check=True,
            timeout=timeout,
        )
        wheel = find_wheel()
        if wheel is None:
            raise SystemExit(f"pip download produced no torch-{TORCH_VERSION} wheel in {WHEELS}")
    log(f"extracting .py files of {wheel.name}")
    if TORCH_SRC.exists():
        shutil.rmtree(TORCH_SRC)
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".py") and ".dist-info/" not in name:
                archive.extract(name, TORCH_SRC)
    isolate_tree(TORCH_SRC)
    marker.write_text(TORCH_VERSION + "\n")
    return TORCH_SRC


def find_wheel() -> Path | None:
    found = sorted(WHEELS.glob(f"torch-{TORCH_VERSION}*.whl")) if WHEELS.is_dir() else []
    return found[0] if found else None


def isolate_tree(root: Path) -> None:
    """Make ``root`` a project of its own: a repository root with its own configuration."""
    if not (root / ".git").exists():
        subprocess.run(
            ["git", "init", "-q", str(root)],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if not (root / ".git").exists():  # no git binary: the marker alone bounds the walk
            (root / ".git").mkdir()
    pyproject = root / "pyproject.toml"
    if not pyproject.exists():
        pyproject.write_text(
            "# Written by torchward's bench/bench_check.py: PyTorch's source is linted with\n"
            "# torchward's defaults, not with the configuration of the repository around it.\n"
            "[tool.torchward]\n"
        )


def tree_size(root: Path) -> tuple[int, int]:
    """Number of ``.py`` files under ``root`` and their total number of lines."""
    files = lines = 0
    for path in root.rglob("*.py"):
        files += 1
        with open(path, "rb") as handle:
            lines += sum(1 for _ in handle)
    return files, lines


# ---------------------------------------------------------------- running commands


def run_timed(command: list[str], cwd: Path, output: Path, timeout: float) -> dict:
    """Run ``command`` with stdout into ``output``; wall time, exit code, stderr tail.

    The command gets its own process group, and on timeout the whole group is killed:
    both tools fan out into worker processes, and killing only the parent would leave
    the workers running (and skewing every later measurement).
    """
    start, cpu_start = time.perf_counter(), children_cpu_seconds()
    timed_out, stderr = False, b""
    with open(output, "wb") as sink:
        process = subprocess.Popen(
            command, cwd=cwd, stdout=sink, stderr=subprocess.PIPE, start_new_session=True
        )
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            timed_out = True
    return {
        "seconds": round(time.perf_counter() - start, 3),
        "cpu_seconds": round(children_cpu_seconds() - cpu_start, 3),
        "rc": None if timed_out else process.returncode,
        "stderr_tail": stderr.decode("utf-8", "replace")[-1500:],
        "timed_out": timed_out,
        "output": str(output),
    }


def children_cpu_seconds() -> float:
    """User + system CPU time of all waited-for descendants so far.

    Reported next to wall time because this machine is shared: when other work competes
    for the two cores, wall time stretches but the CPU a tool needs does not, so the CPU
    ratio is the steadier comparison. Worker processes count once their parent reaps them.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- torchward


def torchward_executable(python: str = sys.executable) -> list[str] | None:
    """The ``torchward`` command of ``python``'s environment, if it has ``check``."""
    script = Path(python).parent / "torchward"
    command = [str(script)] if script.exists() else [python, "-m", "torchward"]
    try:
        probe = subprocess.run(command + ["check", "--help"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return command if probe.returncode == 0 else None


def snapshot_python(timeout: float) -> tuple[str, str]:
    """Install the committed ``HEAD`` into a venv of its own; its interpreter and the commit.

    Why: the cache key includes a fingerprint of the engine's source files, so while
    anyone edits the working tree every run misses the cache and "warm" measures nothing;
    and a benchmark of a moving tree cannot be reproduced. ``--snapshot`` measures the
    commit, installed as a user would install it (not editable). One venv per commit.
    """
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    root = WORK / f"snapshot-{head[:12]}"
    python = root / "venv" / "bin" / "python"
    if python.exists():
        return str(python), head
    # Keep the two newest others: a benchmark still running may be using one of them.
    others = sorted(WORK.glob("snapshot-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[2:]:
        shutil.rmtree(old, ignore_errors=True)
    source = root / "src"
    source.mkdir(parents=True)
    log(f"installing HEAD {head[:12]} into {root}/venv")
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(source)],
        check=True,
        timeout=timeout,
        capture_output=True,
    )
    return str(python), head


def repository_state() -> dict:
    """The commit measured and whether the working tree differs from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "analysis", "torchward")
    return {"head": git("rev-parse", "HEAD"), "engine_dirty": bool(dirty)}


def clear_caches(tree: Path) -> None:
    """Remove torchward cache folders that a run on ``tree`` may have written."""
    for candidate in (tree / CACHE_DIRNAME, tree / LINTED_SUBDIR / CACHE_DIRNAME):
        if candidate.is_dir():
            shutil.rmtree(candidate)


def findings_per_code(payload) -> collections.Counter:
    """Count findings by code in torchward's (array) or torch-preflight's (object) JSON."""
    if isinstance(payload, dict):
        payload = payload.get("diagnostics", payload.get("findings", []))
    return collections.Counter(item.get("code", "?") for item in payload or [])


def cache_indexes(tree: Path) -> set[str]:
    """The cache index files (one per settings-and-engine key) under ``tree``."""
    return {str(p) for p in (tree / CACHE_DIRNAME).glob("*/*.json")}


def bench_torchward(tree: Path, jobs: int | None, timeout: float, python: str) -> dict:
    """Cold without cache, cold filling the cache, warm from it — same command each time.

    If the warm run wrote a new cache index, the engine's fingerprint changed between the
    two runs (someone edited ``analysis/``), so it was not warm: that is recorded, and
    ``--snapshot`` is the way to get a meaningful figure while the tree is being edited.
    """
    command = torchward_executable(python)
    if command is None:
        log("`torchward check` is not available: timing the engine in process instead")
        return bench_engine_pool(tree, jobs or os.cpu_count() or 1)
    base = command + ["check", LINTED_SUBDIR, "--exit-zero", "--format", "json"]
    if jobs:
        base += ["--jobs", str(jobs)]
    runs = {}
    clear_caches(tree)
    log("torchward cold (--no-cache)")
    runs["cold_no_cache"] = run_timed(
        base + ["--no-cache"], tree, WORK / "torchward-nocache.json", timeout
    )
    clear_caches(tree)
    log("torchward cold (first run, fills the cache)")
    runs["cold_fill_cache"] = run_timed(base, tree, WORK / "torchward-fill.json", timeout)
    filled = cache_indexes(tree)
    log("torchward warm (second run, cache)")
    runs["warm"] = run_timed(base, tree, WORK / "torchward-warm.json", timeout)
    if not filled or cache_indexes(tree) - filled:
        runs["warm"]["cache_missed"] = True
        log("the warm run did not reuse the cache (engine files changed?); try --snapshot")
    payload = load_json(WORK / "torchward-nocache.json")
    warm_payload = load_json(WORK / "torchward-warm.json")
    return {
        "mode": "cli",
        "command": " ".join(base),
        "runs": runs,
        "findings_per_rule": dict(sorted(findings_per_code(payload).items())),
        "findings_total": sum(findings_per_code(payload).values()),
        "warm_findings_total": sum(findings_per_code(warm_payload).values()),
        "output_ok": isinstance(payload, list),
    }


def bench_engine_pool(tree: Path, jobs: int) -> dict:
    """Fallback while the CLI does not exist yet: the engine over a process pool."""
    from concurrent.futures import ProcessPoolExecutor

    files = sorted(str(p) for p in (tree / LINTED_SUBDIR).rglob("*.py"))
    start = time.perf_counter()
    counts: collections.Counter = collections.Counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for codes in pool.map(_codes_of_file, files, chunksize=16):
            counts.update(codes)
    seconds = time.perf_counter() - start
    return {
        "mode": "engine-pool (no CLI yet)",
        "command": f"analyze_source over a {jobs}-process pool",
        "runs": {"cold_no_cache": {"seconds": round(seconds, 3), "rc": 0, "timed_out": False}},
        "findings_per_rule": dict(sorted(counts.items())),
        "findings_total": sum(counts.values()),
        "output_ok": True,
    }


def _codes_of_file(path: str) -> list[str]:
    from torchward.analysis import analyze_source, decode_source

    try:
        with open(path, "rb") as handle:
            text = decode_source(handle.read())
    except (OSError, ValueError):
        return []
    return [finding.code for finding in analyze_source(text, path).findings]


# ---------------------------------------------------------------- torch-preflight


def ensure_preflight(timeout: float) -> tuple[Path | None, str]:
    """The side venv's ``torch-preflight`` executable, or ``None`` and the reason."""
    executable = PREFLIGHT_VENV / "bin" / "torch-preflight"
    if executable.exists() and preflight_version(executable) == PREFLIGHT_VERSION:
        return executable, "already installed"
    try:
        if not (PREFLIGHT_VENV / "bin" / "python").exists():
            log(f"creating side venv {PREFLIGHT_VENV}")
            venv.EnvBuilder(with_pip=True, clear=True).create(PREFLIGHT_VENV)
        log(f"installing torch-preflight=={PREFLIGHT_VERSION} into the side venv")
        done = subprocess.run(
            [
                str(PREFLIGHT_VENV / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                f"torch-preflight=={PREFLIGHT_VERSION}",
            ],
            capture_output=True,
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"could not set up the side venv: {error}"
    if done.returncode != 0 or not executable.exists():
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        return None, f"pip install torch-preflight=={PREFLIGHT_VERSION} failed: {tail[0]}"
    return executable, "installed now"


def preflight_version(executable: Path) -> str | None:
    try:
        done = subprocess.run([str(executable), "--version"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.decode().split()
    return words[-1] if done.returncode == 0 and words else None


def bench_preflight(tree: Path, jobs: int | None, timeout: float) -> dict:
    """torch-preflight's ``check`` on the same subtree, JSON to a file (exit 1 = findings)."""
    executable, how = ensure_preflight(timeout=600)
    if executable is None:
        log(f"torch-preflight not run: {how}")
        return {"available": False, "reason": how}
    command = [str(executable), "check", LINTED_SUBDIR, "--format", "json", "--no-color"]
    if jobs:
        command += ["--jobs", str(jobs)]
    log(f"torch-preflight {PREFLIGHT_VERSION} ({how}); this takes minutes")
    run = run_timed(command, tree, WORK / "preflight.json", timeout)
    payload = load_json(WORK / "preflight.json")
    summary = payload.get("summary", {}) if isinstance(payload, dict) else {}
    return {
        "available": True,
        "command": " ".join(command),
        "run": run,
        "single_file": preflight_single_file(executable.parent / "python", runs=3),
        "files_checked": summary.get("files_checked"),
        "findings_per_rule": dict(sorted(findings_per_code(payload).items())),
        "findings_total": sum(findings_per_code(payload).values()),
    }


def preflight_single_file(python: Path, runs: int) -> dict | None:
    """torch-preflight's in-process time on the same synthetic script, for comparison.

    Its engine entry point is ``torch_preflight.engine.check_source(path, source)``; a
    run takes seconds, hence few runs.
    """
    program = (
        "import json, statistics, sys, time\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"
        "from synthetic_script import training_script\n"
        "from torch_preflight.engine import check_source\n"
        "source = training_script()\n"
        "check_source('synthetic_train.py', source)\n"
        "times = []\n"
        f"for _ in range({runs}):\n"
        "    start = time.perf_counter(); check_source('synthetic_train.py', source)\n"
        "    times.append((time.perf_counter() - start) * 1000)\n"
        "print(json.dumps({'median_ms': round(statistics.median(times), 1), 'runs': len(times)}))\n"
    )
    try:
        done = subprocess.run(
            [str(python), "-c", program], capture_output=True, text=True, timeout=600, cwd=WORK
        )
        return json.loads(done.stdout) if done.returncode == 0 else None
    except (subprocess.SubprocessError, ValueError):
        return None


# ---------------------------------------------------------------- one file in process


def bench_single_file(runs: int, python: str) -> dict:
    """Median wall time of ``analyze_source`` on the ~1,000-line synthetic script.

    Measured in a fresh ``python`` process (the snapshot's under ``--snapshot``), which
    runs :func:`single_file_timing` and prints its result as JSON.
    """
    done = subprocess.run(
        [python, __file__, "--single-file-json", str(runs)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"single-file timing failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def single_file_timing(runs: int) -> dict:
    sys.path.insert(0, str(BENCH))
    from synthetic_script import training_script
    from torchward.analysis import analyze_source

    source = training_script()
    path = str(WORK / "synthetic_train.py")
    Path(path).write_text(source)
    report = analyze_source(source, path)  # warm-up: imports, rule registry
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        analyze_source(source, path)
        times.append((time.perf_counter() - start) * 1000)
    return {
        "lines": source.count("\n"),
        "runs": runs,
        "median_ms": round(statistics.median(times), 2),
        "min_ms": round(min(times), 2),
        "max_ms": round(max(times), 2),
        "findings_per_rule": dict(
            sorted(collections.Counter(f.code for f in report.findings).items())
        ),
        "problems": [p.message for p in report.problems],
        "script": path,
    }


# ---------------------------------------------------------------- report


def seconds_of(run: dict | None) -> float | None:
    return (
        run.get("seconds") if run and not run.get("timed_out") and run.get("rc") in (0, 1) else None
    )


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def summarize(results: dict) -> list[str]:
    """The compact table; also stores the derived figures in ``results['summary']``."""
    tw = results["torchward"]
    runs = tw["runs"]
    cold = seconds_of(runs.get("cold_no_cache"))
    fill = seconds_of(runs.get("cold_fill_cache"))
    warm = seconds_of(runs.get("warm"))
    pf = results["preflight"]
    pf_run = pf.get("run") if pf.get("available") else None
    pf_s = seconds_of(pf_run)
    # A torch-preflight run cut off by its timeout still bounds the ratio from below.
    pf_lower = bool(pf_run and pf_run.get("timed_out"))
    if pf_lower:
        pf_s = pf_run["seconds"]
    ratio = round(pf_s / cold, 1) if pf_s and cold else None
    cold_cpu = (runs.get("cold_no_cache") or {}).get("cpu_seconds")
    pf_cpu = pf_run.get("cpu_seconds") if pf_run else None
    cpu_ratio = round(pf_cpu / cold_cpu, 1) if pf_cpu and cold_cpu else None
    single = results["single_file"]["median_ms"]
    results["summary"] = {
        "cold_no_cache_s": cold,
        "cold_fill_cache_s": fill,
        "warm_s": warm,
        "preflight_s": pf_s,
        "preflight_timed_out": pf_lower,
        "ratio_preflight_over_cold": ratio,
        "single_file_median_ms": single,
        "cold_no_cache_cpu_s": cold_cpu,
        "preflight_cpu_s": pf_cpu,
        "cpu_ratio_preflight_over_cold": cpu_ratio,
    }
    more = "> " if pf_lower else ""

    def fmt(value, unit="s"):
        return "—" if value is None else f"{value:.2f} {unit}"

    tree = results["tree"]
    lines = [
        f"torchward {results['torchward_version']} on torch {TORCH_VERSION}/{LINTED_SUBDIR}: "
        f"{tree['files']} files, {tree['lines']:,} lines; {results['machine']['cpus']} CPUs; "
        f"jobs={results['jobs'] or 'default'}; mode={tw['mode']}; load average "
        f"{results['machine']['load_average_at_start'][0]:.1f} -> {results['machine']['load_average_at_end'][0]:.1f}",
        f"measured: {'snapshot of ' if results['measured'].get('snapshot') else 'working tree at '}"
        f"{results['measured']['head'][:12]}"
        + (" (engine files modified)" if results["measured"].get("engine_dirty") else ""),
        "",
        f"{'measure':<40}{'value':>14}   target",
        f"{'torchward cold, --no-cache':<40}{fmt(cold):>14}",
        f"{'torchward cold, first run (fills cache)':<40}{fmt(fill):>14}",
        f"{'torchward warm (cache)':<40}{fmt(warm):>14}   < {TARGET_WARM_S:.0f} s  "
        f"{verdict(None if warm is None else warm < TARGET_WARM_S)}"
        + (
            "  (cache missed: engine changed between runs)"
            if runs.get("warm", {}).get("cache_missed")
            else ""
        ),
        f"{'torch-preflight ' + PREFLIGHT_VERSION:<40}{more + fmt(pf_s):>14}"
        + ("" if pf.get("available") else f"   not run: {pf.get('reason')}")
        + ("   (stopped at --preflight-timeout)" if pf_lower else ""),
        f"{'ratio torch-preflight / torchward cold':<40}"
        f"{('—' if ratio is None else f'{more}{ratio:.1f}x'):>14}   >= {TARGET_RATIO:.0f}x  "
        f"{verdict(None if ratio is None else ratio >= TARGET_RATIO)}",
        f"{'CPU seconds, torchward cold / preflight':<40}"
        f"{(fmt(cold_cpu) + ' / ' + more + fmt(pf_cpu)) if cold_cpu else '—':>14}   "
        f"ratio {('—' if cpu_ratio is None else f'{more}{cpu_ratio:.1f}x')}",
        f"{'single file in process (' + str(results['single_file']['lines']) + ' lines)':<40}"
        f"{fmt(single, 'ms'):>14}   < {TARGET_SINGLE_MS:.0f} ms "
        f"{verdict(single < TARGET_SINGLE_MS)}",
        f"{'  the same file, torch-preflight':<40}"
        f"{fmt((pf.get('single_file') or {}).get('median_ms'), 'ms'):>14}",
        "",
        "torchward findings on the tree: "
        + (", ".join(f"{code} {n}" for code, n in tw["findings_per_rule"].items()) or "none")
        + f" (total {tw['findings_total']})",
    ]
    if pf.get("available"):
        lines.append(
            "torch-preflight findings: "
            + (", ".join(f"{code} {n}" for code, n in pf["findings_per_rule"].items()) or "none")
            + f" (total {pf['findings_total']}, files checked {pf.get('files_checked')})"
        )
    for name, run in list(runs.items()) + (
        [("preflight", pf["run"])] if pf.get("available") else []
    ):
        if run.get("timed_out") or run.get("rc") not in (0, 1):
            lines.append(
                f"!! {name}: rc={run.get('rc')} timed_out={run.get('timed_out')} "
                f"{run.get('stderr_tail', '')[-300:]}"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="--jobs for both tools (default: each tool's default, the CPU count)",
    )
    parser.add_argument("--runs", type=int, default=21, help="runs of the single-file timing")
    parser.add_argument("--skip-preflight", action="store_true", help="do not run torch-preflight")
    parser.add_argument(
        "--snapshot",
        action="store_true",
        help="measure the committed HEAD installed in a venv of its own instead "
        "of the working tree (stable while others edit the engine)",
    )
    parser.add_argument("--single-file-json", type=int, metavar="RUNS", help=argparse.SUPPRESS)
    parser.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds allowed for each torchward run (default 600)",
    )
    parser.add_argument(
        "--preflight-timeout",
        type=float,
        default=2400,
        help="seconds allowed for the torch-preflight run (default 2400); "
        "a run cut off there is reported as a lower bound",
    )
    args = parser.parse_args(argv)
    if args.single_file_json:
        print(json.dumps(single_file_timing(args.single_file_json)))
        return 0

    WORK.mkdir(parents=True, exist_ok=True)
    tree = ensure_torch_tree(timeout=900)
    files, lines = tree_size(tree / LINTED_SUBDIR)
    python, state = sys.executable, repository_state()
    if args.snapshot:
        python, head = snapshot_python(timeout=600)
        state = {"head": head, "engine_dirty": False, "snapshot": python}
    version = subprocess.run(
        [python, "-c", "import torchward; print(torchward.__version__)"],
        capture_output=True,
        text=True,
    ).stdout.strip()

    results = {
        "torchward_version": version,
        "measured": state,
        "torch_version": TORCH_VERSION,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_at_start": os.getloadavg(),
        },
        "jobs": args.jobs,
        "tree": {"path": str(tree / LINTED_SUBDIR), "files": files, "lines": lines},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    results["torchward"] = bench_torchward(tree, args.jobs, args.timeout, python)
    results["preflight"] = (
        {"available": False, "reason": "--skip-preflight"}
        if args.skip_preflight
        else bench_preflight(tree, args.jobs, args.preflight_timeout)
    )
    results["single_file"] = bench_single_file(args.runs, python)
    results["machine"]["load_average_at_end"] = os.getloadavg()
    table = summarize(results)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(table))
    print(f"\nresults: {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
