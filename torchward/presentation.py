"""The last step of ``check`` before a reporter: what each format needs added.

- Notebook findings move from program to cell coordinates (:func:`torchward.notebook.present`).
- JSON and SARIF carry fixes. Findings leave the analysis without them (linting never
  parses LibCST), so here, for the files that have findings and only for these two
  formats, the fixes are built (:func:`torchward.analysis.fixes.with_fixes`). A finding
  whose rule hands its fixer a payload (TW003's reset) gets its edit written from it, a
  cost in proportion to the edit; the others share one LibCST parse of their file, only
  when the file has such a finding.
- ``--report-unused-suppressions`` adds a finding per suppression comment that
  suppressed nothing (:mod:`torchward.suppression_audit`).
"""

from __future__ import annotations

import contextlib
import gc

import attrs

from .analysis import FileReport, decode_source

FORMATS_WITH_FIXES = ("json", "sarif")


def _with_fixes(report: FileReport, absolute: str) -> FileReport:
    from .analysis.fixes import with_fixes

    try:
        with open(absolute, "rb") as handle:
            text = decode_source(handle.read())
        if absolute.endswith(".ipynb"):
            from .notebook import program

            text = program(text).text
    except (OSError, UnicodeDecodeError, ValueError):
        return report
    with collector_paused():
        findings = with_fixes(text, report.findings)
    return attrs.evolve(report, findings=findings)


@contextlib.contextmanager
def collector_paused():
    """The cyclic garbage collector off while one file's fixes are built, and while
    ``check`` presents and writes its report.

    A LibCST tree with its position and parent maps is millions of objects, and each
    full collection during its build walked all of them again: the build grew faster
    than the file (a third of its time at 20,000 lines). The same holds for the report:
    the analysis leaves its trees and caches alive, and the collections that building a
    JSON report's thousands of dictionaries set off walked all of them again (half of
    what JSON cost over terminal output on a 20,000-line file). A report makes no
    garbage cycles; those made meanwhile are collected when the collector resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def prepare(result, files, *, format: str, selection=None, unused_suppressions: bool = False):
    from .notebook import present

    absolute = {source_file.path: source_file.absolute for source_file in files}
    reports = list(result.reports)
    if unused_suppressions:
        from .suppression_audit import unused_suppressions as audit

        reports = [
            attrs.evolve(
                r,
                findings=tuple(
                    sorted(
                        r.findings + audit(absolute.get(r.path, r.path), r.path, selection),
                        key=lambda f: (f.span, f.code),
                    )
                ),
            )
            for r in reports
        ]
    if format in FORMATS_WITH_FIXES:
        reports = [
            _with_fixes(r, absolute.get(r.path, r.path)) if r.findings else r for r in reports
        ]
    return present(attrs.evolve(result, reports=tuple(reports)))
