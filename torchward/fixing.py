"""``check --fix`` / ``--diff`` / ``--fix-only``: fix files on disk, or show the diff.

The analysis side (:mod:`torchward.analysis.fixes`) turns a text into a fixed text; this
module is the file side: read the bytes, keep the byte-order mark and the line endings
the file had (fixes preserve them; nothing here normalises), dispatch notebooks to
:mod:`torchward.notebook`, and write only when the text changed and still parses — a
file with a syntax error is never written, because the fixer never gets past its parse.

Writing preserves the file as the user set it up (:func:`write`): the fixed text goes
*into* the existing file, so a symlink keeps pointing at its target (which is the file
that gets fixed), hard links stay linked, and mode, owner and group are untouched. A
file the user cannot write (read-only mode, a read-only mount, no permission) is
refused with the reason, never rewritten behind its permission bits, and the run goes
on with the other files. Just before writing, the file is read again through the handle
that writes it: one whose bytes differ from those the fix was computed on (a save in the
editor, a checkout) is left alone with "not written: the file changed while it was being
fixed", and one replaced by another file while it was written (an editor saving by
rename) is reported the same way, so a concurrent save is never overwritten by a stale
fix. Every refusal is reported and makes ``check`` exit 1; when some files were written
and others were not the run lists which were written, so a run is never half-applied
silently. (What no check can close: a save landing between that last read and the write,
a window of one system call.)
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterable
from typing import TextIO

import attrs

from .analysis import LintSettings, Problem, decode_source
from .analysis.fixes import fix_source
from .analysis.fixes.applying import FIXER_BUG
from .analysis.fixes.edits import split_lines
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
    original: bytes = b""  # the file's bytes when it was read: written only if still these
    written: bool = False
    refused: str | None = None  # why a changed file was not written

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
        return FileFix(path, absolute, text, after, applied, problems, data)
    outcome = fix_source(text, path, settings, unsafe=unsafe)
    bom = BOM if data.startswith(BOM.encode()) else ""
    return FileFix(
        path, absolute, bom + text, bom + outcome.text, outcome.applied, outcome.problems, data
    )


CHANGED = "not written: the file changed while it was being fixed"


class WriteRefused(Exception):
    """A fixed file that was not written, with the reason in words."""


def write(fix: FileFix) -> None:
    """Write ``fix.after`` into the file in place, keeping links, mode and ownership.

    Raises :class:`WriteRefused` (and writes nothing) when the file cannot or must not
    be written. In-place writing truncates and rewrites the same inode: the only window
    for a partial file is a crash in the middle of one ``write`` call of a few kilobytes,
    against losing the user's symlinks, hard links, owner and extended attributes with a
    rename — the trade ruff and black make too.
    """
    path = os.path.realpath(fix.absolute)  # a symlink: fix (and check) its target
    try:
        status = os.stat(path)
    except OSError as error:
        raise WriteRefused(f"cannot write: {error.strerror or error}") from None
    if not stat.S_ISREG(status.st_mode):
        raise WriteRefused("cannot write: not a regular file")
    writable_bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    if not status.st_mode & writable_bits or not os.access(path, os.W_OK):
        # mode bits first: root may write anything, but a read-only file says "keep out"
        raise WriteRefused("not written: the file is read-only")
    data = fix.after.encode("utf-8")
    try:
        with open(path, "r+b") as handle:
            current = handle.read()
            if current != fix.original:
                raise WriteRefused(CHANGED)
            handle.seek(0)
            handle.write(data)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
            if _replaced(path, handle.fileno()):  # the fix went into a file no longer there
                raise WriteRefused(CHANGED)
    except OSError as error:
        raise WriteRefused(f"cannot write: {error.strerror or error}") from None


def _replaced(path: str, descriptor: int) -> bool:
    """Whether ``path`` now names another file than the open ``descriptor``."""
    try:
        now, ours = os.stat(path), os.fstat(descriptor)
    except OSError:  # deleted meanwhile: the user's doing, nothing of theirs was written over
        return True
    return (now.st_dev, now.st_ino) != (ours.st_dev, ours.st_ino)


def unified_diff(fix: FileFix) -> str:
    # Python's lines (\n, \r\n, \r): str.splitlines would also cut at form feeds and
    # U+2028, and mark those pieces "No newline at end of file" in the middle of a diff
    before = split_lines(fix.before)
    after = split_lines(fix.after)
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
            try:
                write(fix)
            except WriteRefused as error:
                fixes[-1] = attrs.evolve(fix, refused=str(error))
            else:
                fixes[-1] = attrs.evolve(fix, written=True)
    return fixes


def apply_fixes(
    files, selection, result, args, out: TextIO, err: TextIO
) -> tuple[int | None, bool]:
    """Run ``--fix`` / ``--unsafe-fixes`` / ``--diff`` / ``--fix-only`` for ``check``.

    Only files with findings are opened. ``--diff`` prints the diffs, writes nothing and
    returns 1 when there is any diff (0 otherwise); ``--fix-only`` writes, says how many
    fixes it applied, and returns 0; plain ``--fix`` writes and returns None so that
    ``check`` re-lints and reports what is left. The second value says whether a file
    could not be written (reported here; ``check`` then exits 1 at least).
    """
    from .statistics import plural

    wanted = {report.path for report in result.reports if report.findings}
    todo = [source_file for source_file in files if source_file.path in wanted]
    unsafe = bool(args.unsafe_fixes)
    fixes = fix_files(
        todo, selection, unsafe=unsafe, apply=not args.diff, diff_stream=out if args.diff else None
    )
    for fix in fixes:
        for problem in fix.problems:
            if problem.kind in ("internal-error", FIXER_BUG):
                err.write(f"{fix.path}: {problem.message}\n")
        if fix.refused:
            err.write(
                f"{fix.path}: {fix.refused} (left unfixed: {plural(len(fix.applied), 'finding')})\n"
            )
    if args.diff:
        count = sum(len(fix.applied) for fix in fixes)
        changed = sum(1 for fix in fixes if fix.changed)
        err.write(
            f"Would fix {plural(count, 'finding')} in {plural(changed, 'file')}.\n"
            if changed
            else "No fixes available.\n"
        )
        return (1 if changed else 0), False
    written = [fix for fix in fixes if fix.written]
    refused = [fix for fix in fixes if fix.refused]
    count = sum(len(fix.applied) for fix in written)
    err.write(f"Fixed {plural(count, 'finding')}.\n" if count else "No fixes applied.\n")
    if refused:  # never half-applied without saying which half
        names = ", ".join(fix.path for fix in written) or "none"
        err.write(f"{plural(len(refused), 'file')} could not be written; files changed: {names}.\n")
    if args.fix_only:
        return (1 if refused else 0), bool(refused)
    return None, bool(refused)
