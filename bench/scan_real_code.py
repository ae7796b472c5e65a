"""Run torchward over real training code and list every finding, for reading by hand.

Why: issue 2 §6 — a domain linter is judged by whether it stays quiet on correct code,
and the only way to know is to point it at code nobody wrote for it and read all of its
output (torch-preflight's own lesson: its fixtures agreed with its rules by construction;
real code found sixteen of its bugs). This script gathers that code from the package
registry, runs torchward on it and writes one line per finding.

Sources (``pip download --no-deps`` into ``bench/.work/scan/dl``; sdists are fetched as
well where they could hold scripts the wheel lacks, such as examples or timm's
``train.py``):

* torchtune — ``recipes/`` and ``torchtune/``
* transformers — ``trainer*.py`` and ``examples/`` when the sdist has them
* accelerate, trl — the package, plus ``examples/`` when present
* timm — ``train.py`` / ``validate.py`` when the sdist has them, and the package
* lightning, ultralytics, d2l — the package
* torch — the tree that ``bench_check.py`` extracts (``torch-src/torch``)

Nothing here is committed: everything lands in the git-ignored ``bench/.work/``.

Output: counts per rule per package on stdout; every finding as
``package/path:line: CODE message`` in ``bench/.work/scan-findings.txt``; torchward's JSON
per package in ``bench/.work/scan/<package>.json``; a summary in
``bench/.work/scan-summary.json``.

Run: ``.venv/bin/python bench/scan_real_code.py [PACKAGE ...]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_check  # noqa: E402  (the torch tree, tree isolation, the torchward command)

WORK = BENCH / ".work"
SCAN = WORK / "scan"
DOWNLOADS = SCAN / "dl"
FINDINGS_TXT = WORK / "scan-findings.txt"
SUMMARY_JSON = WORK / "scan-summary.json"


@dataclass(frozen=True)
class Package:
    """A distribution to scan: which archives to fetch and which paths in them to lint.

    ``targets`` are globs relative to the extracted root (a wheel's root, or an sdist's
    with its top folder and a ``src/`` layer removed, so both line up); a target that
    matches nothing is reported as missing rather than failing the scan.
    """

    name: str
    targets: tuple[str, ...]
    sdist: bool = False


PACKAGES = (
    Package("torchtune", ("recipes", "torchtune")),
    Package(
        "transformers",
        ("transformers/trainer.py", "transformers/trainer_*.py", "examples"),
        sdist=True,
    ),
    Package("accelerate", ("accelerate", "examples"), sdist=True),
    Package("trl", ("trl", "examples"), sdist=True),
    Package("timm", ("train.py", "validate.py", "timm"), sdist=True),
    Package("lightning", ("lightning",)),
    Package("ultralytics", ("ultralytics",)),
    Package("d2l", ("d2l",)),
)
TORCH = "torch"


def log(message: str) -> None:
    print(f"[scan] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- fetching


def download(package: Package, kind: str) -> Path | None:
    """The package's wheel or sdist in ``DOWNLOADS/kind``, fetched when missing."""
    folder = DOWNLOADS / kind
    found = archives(folder, package.name)
    if found:
        return found[-1]
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "-q",
        "-d",
        str(folder),
        package.name,
    ]
    command += ["--no-binary", ":all:"] if kind == "sdist" else ["--only-binary", ":all:"]
    try:
        subprocess.run(command, check=True, timeout=600, capture_output=True)
    except (subprocess.SubprocessError, OSError) as error:
        log(f"{package.name}: no {kind} ({type(error).__name__})")
        return None
    found = archives(folder, package.name)
    return found[-1] if found else None


def archives(folder: Path, name: str) -> list[Path]:
    if not folder.is_dir():
        return []
    prefix = name.replace("-", "_").lower()
    return sorted(
        p
        for p in folder.iterdir()
        if p.name.replace("-", "_").lower().startswith(prefix + "_")
        and p.suffix in (".whl", ".gz", ".zip")
    )


def extract_python(archive: Path, root: Path) -> int:
    """Extract the ``.py`` files of a wheel or sdist under ``root``; returns how many.

    An sdist's top folder (``name-1.0/``) and a ``src/`` layer are dropped so that its
    paths coincide with the wheel's (``transformers/trainer.py`` in both).
    """
    count = 0
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as bundle:
            for name in bundle.namelist():
                relative = sdist_relative(name) if archive.suffix == ".zip" else name
                if relative and relative.endswith(".py") and ".dist-info/" not in relative:
                    write(root / relative, bundle.read(name))
                    count += 1
        return count
    with tarfile.open(archive) as bundle:
        for member in bundle.getmembers():
            relative = sdist_relative(member.name)
            if member.isfile() and relative and relative.endswith(".py"):
                handle = bundle.extractfile(member)
                if handle is not None:
                    write(root / relative, handle.read())
                    count += 1
    return count


def sdist_relative(name: str) -> str | None:
    parts = name.split("/")[1:]
    if parts[:1] == ["src"]:
        parts = parts[1:]
    relative = "/".join(parts)
    return relative if relative and ".." not in parts else None


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def prepare(package: Package) -> tuple[Path, list[str], list[str], list[str]]:
    """Extract the package once; return its root, the archives used, targets found/missing."""
    root = SCAN / package.name
    marker = root / ".extracted"
    kinds = ["wheel"] + (["sdist"] if package.sdist else [])
    used = [a for a in (download(package, kind) for kind in kinds) if a is not None]
    stamp = "\n".join(a.name for a in used)
    if not (marker.exists() and marker.read_text() == stamp):
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        for archive in used:
            log(
                f"{package.name}: extracted {extract_python(archive, root)} .py files of {archive.name}"
            )
        marker.write_text(stamp)
    bench_check.isolate_tree(root)
    found, missing = [], []
    for pattern in package.targets:
        matches = sorted(str(p.relative_to(root)) for p in root.glob(pattern))
        (found.extend(matches) if matches else missing.append(pattern))
    return root, [a.name for a in used], found, missing


# ---------------------------------------------------------------- linting


def lint(root: Path, targets: list[str], output: Path) -> tuple[list[dict], float, str]:
    """Findings (JSON dicts) of torchward on ``targets`` under ``root``, and the seconds.

    Uses ``torchward check`` when it exists (the way users run it, discovery and
    suppressions included) and the in-process engine over each ``.py`` file otherwise.
    """
    command = bench_check.torchward_executable()
    start = time.perf_counter()
    if command is not None:
        argv = command + ["check", *targets, "--format", "json", "--exit-zero", "--no-cache"]
        run = bench_check.run_timed(argv, root, output, timeout=900)
        payload = bench_check.load_json(output)
        if run["timed_out"] or not isinstance(payload, list):
            log(f"torchward failed in {root}: rc={run['rc']} {run['stderr_tail'][-400:]}")
            return [], time.perf_counter() - start, "cli (failed)"
        return payload, run["seconds"], "cli"
    findings = lint_in_process(root, targets)
    output.write_text(json.dumps(findings, indent=1))
    return findings, time.perf_counter() - start, "engine"


def lint_in_process(root: Path, targets: list[str]) -> list[dict]:
    from torchward.analysis import analyze_source, decode_source

    findings = []
    for target in targets:
        path = root / target
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for file in files:
            try:
                text = decode_source(file.read_bytes())
            except (OSError, ValueError):
                continue
            shown = str(file.relative_to(root))
            findings.extend(f.to_dict() for f in analyze_source(text, shown).findings)
    return findings


def count_files(root: Path, targets: list[str]) -> int:
    total = 0
    for target in targets:
        path = root / target
        total += 1 if path.is_file() else sum(1 for _ in path.rglob("*.py"))
    return total


# ---------------------------------------------------------------- report


def finding_line(package: str, finding: dict) -> str:
    message = " ".join(str(finding.get("message", "")).split())
    severity = finding.get("severity", "")
    return (
        f"{package}/{finding.get('path')}:{finding.get('line')}: {finding.get('code')} "
        f"{message} [{severity}]"
    )


def table(per_package: dict[str, collections.Counter]) -> list[str]:
    codes = sorted({code for counts in per_package.values() for code in counts})
    width = max([len(name) for name in per_package] + [7])
    header = f"{'package':<{width}}  " + "  ".join(f"{c:>6}" for c in codes) + f"  {'total':>6}"
    lines = [header, "-" * len(header)]
    for name, counts in per_package.items():
        cells = "  ".join(f"{counts.get(c, 0):>6}" for c in codes)
        lines.append(f"{name:<{width}}  {cells}  {sum(counts.values()):>6}")
    return lines


def main(argv: list[str] | None = None) -> int:
    known = [p.name for p in PACKAGES] + [TORCH]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "packages", nargs="*", metavar="PACKAGE", help=f"some of: {', '.join(known)} (default: all)"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.packages) - set(known))
    if unknown:
        parser.error(f"unknown package(s): {', '.join(unknown)}; choose from {', '.join(known)}")
    chosen = args.packages or known

    SCAN.mkdir(parents=True, exist_ok=True)
    summary: dict[str, dict] = {}
    per_package: dict[str, collections.Counter] = {}
    lines: list[str] = []
    for name in chosen:
        if name == TORCH:
            root, used, found, missing = (
                bench_check.ensure_torch_tree(900),
                [f"torch=={bench_check.TORCH_VERSION}"],
                [bench_check.LINTED_SUBDIR],
                [],
            )
        else:
            package = next(p for p in PACKAGES if p.name == name)
            root, used, found, missing = prepare(package)
        if missing:
            log(f"{name}: not in {', '.join(used) or 'any archive'}: {', '.join(missing)}")
        if not found:
            summary[name] = {"archives": used, "missing": missing, "files": 0}
            continue
        log(f"{name}: linting {', '.join(found[:6])}{' …' if len(found) > 6 else ''}")
        findings, seconds, mode = lint(root, found, SCAN / f"{name}.json")
        counts = collections.Counter(f.get("code") for f in findings)
        per_package[name] = counts
        lines.extend(
            finding_line(name, f)
            for f in sorted(
                findings, key=lambda f: (f.get("path", ""), f.get("line", 0), f.get("code", ""))
            )
        )
        summary[name] = {
            "archives": used,
            "targets": found,
            "missing": missing,
            "mode": mode,
            "files": count_files(root, found),
            "seconds": round(seconds, 2),
            "findings_per_rule": dict(sorted(counts.items())),
            "findings_total": sum(counts.values()),
        }

    FINDINGS_TXT.write_text("\n".join(lines) + ("\n" if lines else ""))
    SUMMARY_JSON.write_text(json.dumps(summary, indent=2) + "\n")
    print("\n".join(table(per_package)))
    print()
    for name, info in summary.items():
        print(
            f"{name:<13} {info.get('files', 0):>5} files  {info.get('seconds', 0):>6.2f} s  "
            f"{', '.join(info.get('archives', []))}"
            + (f"  (missing: {', '.join(info['missing'])})" if info.get("missing") else "")
        )
    print(f"\n{len(lines)} findings listed in {FINDINGS_TXT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
