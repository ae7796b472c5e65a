"""``--fix`` / ``--unsafe-fixes`` twice over a corpus copy: the second run changes nothing.

Issue 10's target for the fix loop and the file writer, on real code rather than unit
examples. The corpus (default ``/tmp/dev-corpus``, or ``--corpus``) is copied to a
temporary folder (the original is never touched) with a non-default mode (0o640) on
every file, and each file's mode, inode and owner are compared after the runs, so the
writer's promises are measured too. Then, per flag: run ``torchward check --fix-only FLAG`` twice and compare the tree's bytes.

Reports: files, files changed by the first run, files changed by the second (must be 0),
files that no longer parse (must be 0), links and modes changed (must be 0), fixer bugs
reported, and the wall time of each run. Exit status 1 when a target is missed.

    .venv/bin/python bench/bench_fix_idempotence.py [--corpus DIR] [--sample N]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TORCHWARD = [sys.executable, "-m", "torchward"]


def snapshot(tree: pathlib.Path) -> dict[str, tuple[str, int, int, int, bool]]:
    """Per file: content hash, mode, inode, owner, is-symlink (links are not followed)."""
    result = {}
    for path in sorted(tree.rglob("*.py")):
        info = path.lstat()
        data = path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
        result[str(path.relative_to(tree))] = (
            hashlib.sha256(data).hexdigest(),
            info.st_mode,
            info.st_ino,
            info.st_uid,
            path.is_symlink(),
        )
    return result


def run(tree: pathlib.Path, flag: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [*TORCHWARD, "check", "--no-cache", "--fix-only", flag, "."],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - started, done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="/tmp/dev-corpus")
    parser.add_argument("--sample", type=int, default=0, help="only N random files (0: all)")
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args()
    corpus = pathlib.Path(args.corpus)
    files = sorted(corpus.rglob("*.py"))
    if args.sample:
        files = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
    failed = False
    for flag in ("--fix", "--unsafe-fixes"):
        with tempfile.TemporaryDirectory(prefix="torchward-fix-bench-") as folder:
            tree = pathlib.Path(folder)
            (tree / "pyproject.toml").write_text("[tool.torchward]\n")
            for source in files:
                target = tree / source.relative_to(corpus)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                target.chmod(0o640)
            before = snapshot(tree)
            first_s, first_err = run(tree, flag)
            middle = snapshot(tree)
            second_s, second_err = run(tree, flag)
            after = snapshot(tree)
            changed_first = sum(1 for k in before if before[k][0] != middle[k][0])
            changed_second = sum(1 for k in middle if middle[k][0] != after[k][0])
            metadata = sum(1 for k in before if before[k][1:] != after[k][1:])
            broken = 0
            for name in after:
                try:
                    ast.parse((tree / name).read_bytes())
                except (SyntaxError, ValueError):
                    try:
                        ast.parse((corpus / name).read_bytes())
                    except (SyntaxError, ValueError):
                        continue  # did not parse before either
                    broken += 1
            bugs = first_err.count("a bug in the fixer")
            print(
                f"{flag}: {len(files)} files; first run changed {changed_first} "
                f"({first_s:.1f} s), second run changed {changed_second} ({second_s:.1f} s); "
                f"no longer parsing {broken}; metadata changed {metadata}; fixer bugs reported {bugs}"
            )
            if changed_second:
                for k in middle:
                    if middle[k][0] != after[k][0]:
                        print(f"  second run changed {k}")
            failed |= bool(changed_second or broken or metadata)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
