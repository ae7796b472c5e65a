"""``check --fix`` / ``--diff`` / ``--fix-only``: fix files on disk, or show the diff.

The analysis side (:mod:`torchward.analysis.fixes`) turns a text into a fixed text; this
module is the file side: read the bytes, keep the byte-order mark and the line endings
the file had (fixes preserve them; nothing here normalises), dispatch notebooks to
:mod:`torchward.notebook`, and write only when the text changed and still parses — a
file with a syntax error is never written, because the fixer never gets past its parse.
Writing goes through a temporary file in the same folder and ``os.replace``, so an
interrupted run leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Iterable
from typing import TextIO

import attrs

from .analysis import LintSettings, Problem, decode_source
from .analysis.fixes import fix_source
from .discovery import SourceFile

BOM = "\ufeff"


@attrs.frozen
class FileFix:
    path: str
    absolute: str
    before: str  # the decoded text (a notebook: its JSON text)
    after: str
    applied: tuple[tuple[str, str], ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def changed(self) -> bool:
        return self.after != self.before


def fix_file(source_file: SourceFile, settings: LintSettings, unsafe: bool) -> FileFix:
    """The fixed text of one file (nothing is written)."""
    path, absolute = source_file.path, source_file.absolute
    try:
        with open(absolute, "rb") as handle:
            data = handle.read()
        text = decode_source(data)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return FileFix(
            path, absolute, "", "", problems=(Problem("unreadable", f"cannot fix: {error}"),)
        )
    if absolute.endswith(".ipynb"):
        from .notebook import fix_notebook

        after, applied, problems = fix_notebook(text, path, settings, unsafe=unsafe)
        return FileFix(path, absolute, text, after, applied, problems)
    outcome = fix_source(text, path, settings, unsafe=unsafe)
    bom = BOM if data.startswith(BOM.encode()) else ""
    return FileFix(
        path, absolute, bom + text, bom + outcome.text, outcome.applied, outcome.problems
    )


def write(fix: FileFix) -> None:
    directory = os.path.dirname(fix.absolute) or "."
    mode = os.stat(fix.absolute).st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".torchward-fix-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(fix.after)
        os.chmod(temporary, mode)
        os.replace(temporary, fix.absolute)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def unified_diff(fix: FileFix) -> str:
    before = fix.before.splitlines(keepends=True)
    after = fix.after.splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, f"a/{fix.path}", f"b/{fix.path}")
    return "".join(
        line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
        for line in lines
    )


def fix_files(
    files: Iterable[SourceFile], selection, *, unsafe: bool, apply: bool, diff_stream: TextIO | None
) -> list[FileFix]:
    """Fix ``files``; write them when ``apply``, print unified diffs to ``diff_stream`` when given."""
    fixes = []
    for source_file in files:
        fix = fix_file(source_file, selection.settings_for(source_file.absolute), unsafe)
        fixes.append(fix)
        if not fix.changed:
            continue
        if diff_stream is not None:
            diff_stream.write(unified_diff(fix))
        if apply:
            write(fix)
    return fixes


def apply_fixes(files, selection, result, args, out: TextIO, err: TextIO) -> int | None:
    """Run ``--fix`` / ``--unsafe-fixes`` / ``--diff`` / ``--fix-only`` for ``check``.

    Only files with findings are opened. ``--diff`` prints the diffs, writes nothing and
    returns 1 when there is any diff (0 otherwise); ``--fix-only`` writes, says how many
    fixes it applied, and returns 0; plain ``--fix`` writes and returns None so that
    ``check`` re-lints and reports what is left.
    """
    from .statistics import plural

    wanted = {report.path for report in result.reports if report.findings}
    todo = [source_file for source_file in files if source_file.path in wanted]
    unsafe = bool(args.unsafe_fixes)
    fixes = fix_files(
        todo, selection, unsafe=unsafe, apply=not args.diff, diff_stream=out if args.diff else None
    )
    count = sum(len(fix.applied) for fix in fixes)
    for fix in fixes:
        for problem in fix.problems:
            if problem.kind == "internal-error":
                err.write(f"{fix.path}: {problem.message}\n")
    if args.diff:
        changed = sum(1 for fix in fixes if fix.changed)
        err.write(
            f"Would fix {plural(count, 'finding')} in {plural(changed, 'file')}.\n"
            if changed
            else "No fixes available.\n"
        )
        return 1 if changed else 0
    err.write(f"Fixed {plural(count, 'finding')}.\n" if count else "No fixes applied.\n")
    return 0 if args.fix_only else None
