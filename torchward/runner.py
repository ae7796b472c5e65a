"""Checks many files: cache first, then the rest in a process pool or in process.

The warm path is what users feel on every save and in CI, so it is kept to one
``stat`` per file and one cache read: no file is opened unless its stat changed, and
nothing is parsed unless its content changed. Files that need analysis go to a pool
of worker processes, largest first so that the one 27,000-line file does not start
last; a worker reads the file itself (only the path crosses the process boundary) and
sends back JSON-able data, which is also exactly what the cache stores. Files travel
in batches of about equal size (:func:`batches`), not one message each.

A pool costs tens of milliseconds to start, more than checking a handful of files, so
small runs stay in process (:data:`POOL_MIN_FILES`, :data:`POOL_MIN_BYTES`).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import attrs

from .analysis import (
    FileReport,
    Finding,
    LintSettings,
    Problem,
    Span,
    analyze_source,
    decode_source,
)
from .cache import Cache, content_digest
from .discovery import SourceFile
from .estimator import dependencies
from .selection import RuleSelection

POOL_MIN_FILES = 8
POOL_MIN_BYTES = 256 * 1024  # about 6,000 lines: below this a pool's start-up is the larger cost
BATCHES_PER_JOB = 8


@attrs.frozen
class RunResult:
    reports: tuple[FileReport, ...]  # sorted by path, one per checked file
    files_cached: int = 0

    @property
    def files_checked(self) -> int:
        return len(self.reports)


def report_to_data(report: FileReport) -> dict:
    """A report as the JSON-able value the cache stores and workers send back."""
    return {
        "findings": [finding.to_dict() for finding in report.findings],
        "problems": [
            {
                "kind": problem.kind,
                "message": problem.message,
                "span": attrs.astuple(problem.span) if problem.span else None,
            }
            for problem in report.problems
        ],
    }


def report_from_data(path: str, data: dict) -> FileReport:
    findings = []
    for item in data["findings"]:
        if item["path"] != path:  # cached under another spelling of the same file
            old = item["path"]
            item = {
                **item,
                "path": path,
                "evidence": [
                    {**e, "path": path if e["path"] == old else e["path"]} for e in item["evidence"]
                ],
            }
        findings.append(Finding.from_dict(item))
    problems = tuple(
        Problem(p["kind"], p["message"], Span(*p["span"]) if p["span"] else None)
        for p in data["problems"]
    )
    return FileReport(path, tuple(findings), problems)


def check_one(path: str, absolute: str, settings: LintSettings) -> tuple[str | None, dict]:
    """Read, decode and analyse one file: (content digest or None when unreadable, data).

    ``data["reads"]`` lists what the analysis read besides the file (a ``cfg.json``, a
    sibling module, a requirement file...), so the cache can tell when those changed.
    """
    with dependencies.recording() as reads:
        digest, data = _check_one(path, absolute, settings)
    data["reads"] = [dependency.to_data() for dependency in reads.dependencies()]
    return digest, data


def reads_still_hold(data: dict, seen: dict) -> bool:
    """Whether every file a cached result read is as it was (``seen``: one run's memo)."""
    try:
        recorded = [dependencies.Dependency.from_data(item) for item in data["reads"]]
    except (KeyError, TypeError, ValueError, IndexError):
        return False  # an entry from before reads were recorded: analyse again
    return dependencies.still_hold(recorded, seen)


def _check_one(path: str, absolute: str, settings: LintSettings) -> tuple[str | None, dict]:
    try:
        with open(absolute, "rb") as handle:
            data = handle.read()
    except OSError as error:
        problem = Problem("unreadable", f"cannot read file: {error.strerror or error}")
        return None, report_to_data(FileReport(path, (), (problem,)))
    digest = content_digest(data)
    try:
        source = decode_source(data)
    except (UnicodeDecodeError, ValueError) as error:
        reason = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else str(error)
        problem = Problem("encoding", f"cannot decode file: {reason}")
        return digest, report_to_data(FileReport(path, (), (problem,)))
    if absolute.endswith(".ipynb"):  # code cells as one program, in program coordinates
        from .notebook import analyze_notebook

        return digest, report_to_data(analyze_notebook(source, path, settings))
    return digest, report_to_data(analyze_source(source, path, settings))


def _pool_context():
    # fork starts workers in milliseconds and they inherit the imported engine; it is
    # safe here because the CLI process has started no threads. Elsewhere the default.
    if sys.platform == "linux":
        return multiprocessing.get_context("fork")
    return None


def check_many(tasks: list[tuple[str, str, LintSettings]]) -> list[tuple[str | None, dict]]:
    """One worker task: several files, so that a message crosses processes per batch, not per file."""
    return [check_one(path, absolute, settings) for path, absolute, settings in tasks]


def batches(sizes: list[int], jobs: int) -> list[list[int]]:
    """Indices grouped into batches of about equal bytes, largest files first.

    About :data:`BATCHES_PER_JOB` batches per worker: few enough that the per-message
    cost vanishes (it was ~15% of a 318-file run with one message per file), many enough
    that the last, small batches even out the workers' finishing times.
    """
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    target = max(sum(sizes) // (jobs * BATCHES_PER_JOB), 1)
    groups: list[list[int]] = []
    current: list[int] = []
    current_bytes = 0
    for index in order:
        current.append(index)
        current_bytes += sizes[index]
        if current_bytes >= target:
            groups.append(current)
            current, current_bytes = [], 0
    if current:
        groups.append(current)
    return groups


def _analyse(
    todo: list[tuple[SourceFile, os.stat_result]], selection: RuleSelection, jobs: int
) -> list[tuple[str | None, dict]]:
    sizes = [stat.st_size for _, stat in todo]
    tasks = [(f.path, f.absolute, selection.settings_for(f.absolute)) for f, _ in todo]
    if jobs <= 1 or len(todo) < POOL_MIN_FILES or sum(sizes) < POOL_MIN_BYTES:
        return check_many(tasks)
    groups = batches(sizes, jobs)
    results: list = [None] * len(todo)
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(groups)), mp_context=_pool_context()
    ) as pool:
        futures = [(group, pool.submit(check_many, [tasks[i] for i in group])) for group in groups]
        for group, future in futures:
            for index, result in zip(group, future.result()):
                results[index] = result
    return results


def check_files(
    files: Sequence[SourceFile], selection: RuleSelection, jobs: int, cache: Cache | None
) -> RunResult:
    """Reports for ``files`` (cached where unchanged), in the order given."""
    data_by_index: dict[int, dict] = {}
    todo: list[tuple[SourceFile, os.stat_result]] = []
    todo_index: list[int] = []
    cached = 0
    observed: dict = {}  # what the dependencies of cached results look like now
    for index, source_file in enumerate(files):
        try:
            stat = os.stat(source_file.absolute)
        except OSError as error:
            problem = Problem("unreadable", f"cannot read file: {error.strerror or error}")
            data_by_index[index] = report_to_data(FileReport(source_file.path, (), (problem,)))
            continue
        hit = cache.lookup_stat(source_file.absolute, stat) if cache else None
        if hit is None and cache is not None and source_file.absolute in cache.entries:
            hit = _lookup_by_content(cache, source_file.absolute, stat)
        if hit is not None and not reads_still_hold(hit, observed):
            hit = None  # a config, sibling module or requirement file it read has changed
        if hit is not None:
            data_by_index[index] = hit
            cached += 1
        else:
            todo.append((source_file, stat))
            todo_index.append(index)
    for index, (source_file, stat), (digest, data) in zip(
        todo_index, todo, _analyse(todo, selection, jobs)
    ):
        data_by_index[index] = data
        if cache is not None and digest is not None:
            cache.store(source_file.absolute, stat, digest, data)
    if cache is not None:
        cache.save()
    reports = tuple(report_from_data(f.path, data_by_index[i]) for i, f in enumerate(files))
    return RunResult(reports, cached)


def _lookup_by_content(cache: Cache, absolute: str, stat: os.stat_result) -> dict | None:
    try:
        with open(absolute, "rb") as handle:
            digest = content_digest(handle.read())
    except OSError:
        return None
    return cache.lookup_digest(absolute, stat, digest)
