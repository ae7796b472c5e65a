"""The corpus fix run: ``check --fix --unsafe-fixes`` over a copy of real training code.

Issue 9 asks that fixing real code be harmless: every file still parses, no *safe* fix
touches a value that reaches ``backward()``, and re-linting the fixed tree is clean.
This script automates what a program can check and lists what a person must read:

1. copy the corpus (default ``/tmp/dev-corpus``) to a fresh folder (default
   ``/tmp/fixrun``; the original is never touched);
2. lint the copy (``--format json``): every finding, its fixes and their applicability,
   and which files parse (``.py`` with ``ast``; notebooks through the program
   torchward builds from their code cells);
3. print the unified diff of the *safe* fixes alone (``--diff``) into
   ``safe-fixes.diff`` next to the copy, for review: that is the list to read when
   checking that no safe fix touches a value reaching ``backward()``;
4. run ``torchward check COPY --fix --unsafe-fixes --exit-zero --no-cache --all-notes``
   (every note, not only each file's first: fixing a file's first note must not
   count the next one, shown now, as a new finding);
5. check: every file that parsed still parses; re-linting finds no finding with a code
   a file did not have before (per file and code, counts never grow) and none of the
   findings that had a fix remains at its statement; a second ``--fix
   --unsafe-fixes`` run changes no byte.

Prints the figures (and ``--json`` writes them) and exits 1 when a check fails.

    .venv/bin/python bench/corpus_fix_run.py [--corpus DIR] [--copy DIR] [--json OUT] [--at REV]
"""

from __future__ import annotations

import argparse
import ast
import atexit
import collections
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

TORCHWARD = [sys.executable, "-m", "torchward"]


ROOT = pathlib.Path(__file__).resolve().parent.parent
ENVIRONMENT = dict(os.environ)


def torchward(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # from a neutral folder: a checkout's ./torchward would shadow
        [*TORCHWARD, *args],
        capture_output=True,
        text=True,
        check=False,
        env=ENVIRONMENT,
        cwd=tempfile.gettempdir(),
    )


def use_revision(revision: str) -> str:
    """Run torchward as committed at ``revision`` (the working tree of a shared checkout
    changes under a long run): its files are exported to a temporary folder laid out as
    the installed package and put first on the import path. Returns the commit."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", revision], capture_output=True, text=True, check=True
    ).stdout.strip()
    export = pathlib.Path(tempfile.mkdtemp(prefix="torchward-")) / "tree"
    atexit.register(shutil.rmtree, export.parent, ignore_errors=True)
    export.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(export)], input=archive, check=True)
    package = export.parent / "site" / "torchward"
    package.mkdir(parents=True)
    for entry in (export / "torchward").iterdir():
        (package / entry.name).symlink_to(entry)
    for folder in ("analysis", "estimator", "server"):  # pyproject's package-dir mapping
        (package / folder).symlink_to(export / folder)
    # ``-S``: no site initialisation, so the editable install's import hook (which would
    # win over the path) stays out; the dependencies come from this interpreter's paths
    dependencies = [p for p in sys.path if p.endswith("site-packages")]
    ENVIRONMENT["PYTHONPATH"] = os.pathsep.join([str(package.parent), *dependencies])
    TORCHWARD[1:1] = ["-S"]
    return commit


def sources(tree: pathlib.Path) -> list[pathlib.Path]:
    return sorted(
        p
        for p in tree.rglob("*")
        if p.suffix in (".py", ".ipynb") and p.is_file() and not p.is_symlink()
    )


def parses(path: pathlib.Path) -> bool:
    """Whether the file is Python ``ast`` accepts (a notebook: its code cells, as torchward
    reads them, IPython magics made ``pass``)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix == ".ipynb":
            from torchward.notebook import program

            text = program(text).text
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, UnicodeDecodeError, KeyError, TypeError):
        return False


def digest(tree: pathlib.Path) -> dict[str, str]:
    return {
        str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sources(tree)
    }


def lint(tree: pathlib.Path) -> list[dict]:
    done = torchward(
        "check", str(tree), "--format", "json", "--exit-zero", "--no-cache", "--all-notes"
    )
    data = json.loads(done.stdout)
    return data["findings"] if isinstance(data, dict) else data


def file_of(finding: dict) -> str:
    return finding["path"].split("#", 1)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="/tmp/dev-corpus", type=pathlib.Path)
    parser.add_argument("--copy", default="/tmp/fixrun", type=pathlib.Path)
    parser.add_argument("--json", type=pathlib.Path, help="write the figures here")
    parser.add_argument(
        "--at", metavar="REV", help="run torchward as committed at REV, not the working tree"
    )
    args = parser.parse_args(argv)
    revision = use_revision(args.at) if args.at else "working tree"

    if args.copy.exists():
        shutil.rmtree(args.copy)
    shutil.copytree(args.corpus, args.copy, symlinks=True)
    files = sources(args.copy)
    pristine = digest(args.copy)
    parsed_before = {p for p in files if parses(p)}

    before = lint(args.copy)
    fixable = [f for f in before if f["fixes"]]
    offered = collections.Counter((f["code"], f["fixes"][0]["applicability"]) for f in fixable)
    safe = [f for f in before if any(x["applicability"] == "safe" for x in f["fixes"])]

    diff = torchward("check", str(args.copy), "--diff", "--no-cache", "--all-notes")
    diff_path = args.copy.with_name(args.copy.name + "-safe-fixes.diff")
    diff_path.write_text(diff.stdout, encoding="utf-8")

    fix_everything = (
        "check",
        str(args.copy),
        "--fix",
        "--unsafe-fixes",
        "--exit-zero",
        "--no-cache",
        "--all-notes",
    )
    started = time.perf_counter()
    first = torchward(*fix_everything)
    first_seconds = time.perf_counter() - started
    after_first = digest(args.copy)
    second = torchward(*fix_everything)  # must change nothing
    after_second = digest(args.copy)

    parsed_after = {p for p in files if parses(p)}
    broken = sorted(str(p.relative_to(args.copy)) for p in parsed_before - parsed_after)
    after = lint(args.copy)

    count_before = collections.Counter((file_of(f), f["code"]) for f in before)
    count_after = collections.Counter((file_of(f), f["code"]) for f in after)
    new = sorted(
        f"{path}: {code} x{count_after[(path, code)] - count_before[(path, code)]}"
        for (path, code) in count_after
        if count_after[(path, code)] > count_before[(path, code)]
    )
    # a finding whose fix was applied must be gone: the same file, code and message
    # (messages name the statement; lines may move when a fix adds lines above)
    fixed_keys = {(file_of(g), g["code"], g["message"]) for g in fixable}
    remaining_fixed = sorted(
        f"{file_of(f)}:{f['line']} {f['code']}"
        for f in after
        if (file_of(f), f["code"], f["message"]) in fixed_keys
    )
    changed_by_second = sorted(k for k in after_second if after_second[k] != after_first.get(k))

    figures = {
        "torchward": revision,
        "files": len(files),
        "parsed_before": len(parsed_before),
        "parsed_after": len(parsed_after),
        "no_longer_parse": broken,
        "findings_before": len(before),
        "findings_with_fixes": len(fixable),
        "first_fix_offered": {f"{c} {a}": n for (c, a), n in sorted(offered.items())},
        "findings_with_a_safe_fix": len(safe),
        "safe_fixes": sorted(
            f"{file_of(f)}:{f['line']} {f['code']} {f['fixes'][0]['title']}" for f in safe
        ),
        "safe_fix_diff": str(diff_path),
        "files_changed_by_fix": sum(1 for k in after_first if after_first[k] != pristine.get(k)),
        "fix_run_seconds": round(first_seconds, 1),
        "fix_run_status": first.returncode,
        "findings_after": len(after),
        "new_findings": new,
        "fixed_findings_still_reported_with_a_fix": remaining_fixed,
        "files_changed_by_second_run": changed_by_second,
        "second_run_stderr": second.stderr.strip().splitlines()[-1:]
        if second.stderr.strip()
        else [],
    }
    return report(figures, args)


def report(figures: dict, args) -> int:
    failures = [
        name
        for name in ("no_longer_parse", "new_findings", "files_changed_by_second_run")
        if figures[name]
    ]
    for key, value in figures.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"    {item}")
        else:
            print(f"{key}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print("FAIL: " + ", ".join(failures) if failures else "OK: every check passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
