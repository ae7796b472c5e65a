"""``torchward check [PATHS...]``: lint files and directories, report, and set the exit status.

The pipeline, each step in its own module: configuration (:mod:`torchward.config`),
which files (:mod:`torchward.discovery`), which rules per file
(:mod:`torchward.selection`), cached or parallel analysis (:mod:`torchward.runner`,
:mod:`torchward.cache`), output (:mod:`torchward.reporters`). Exit status: 0 when
nothing is at or above ``--fail-on``, 1 when something is (or a file could not be
analysed), 2 for usage, configuration and internal errors. Hints never fail a run:
``--fail-on`` stops at ``note``, and the human-readable formats list hints only with
``--show-hints`` (JSON and SARIF always carry them).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..arguments import positive_int

NAME = "check"
HELP = "Check Python files for silent PyTorch training bugs."
ORDER = 10


def configure(parser: argparse.ArgumentParser) -> None:
    from ..config import FAIL_ON

    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or directories (default: .)"
    )
    parser.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="only these codes or prefixes (comma-separated or repeated); replaces the configured select",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        metavar="CODES",
        help="skip these codes or prefixes (comma-separated or repeated); adds to the configured ignore",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="lowest severity that makes the exit status 1 (default: error); hints never do",
    )
    parser.add_argument(
        "--show-hints",
        action="store_true",
        help="list hints too in the terminal and grouped formats (JSON and SARIF always hold them)",
    )
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when there are findings"
    )
    parser.add_argument(
        "--all-notes",
        action="store_true",
        help="show every note of a file (default: only its first; warnings and errors are never capped)",
    )
    parser.add_argument(
        "--jobs", "-j", type=positive_int, metavar="N", help="worker processes (default: CPU count)"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="neither read nor write .torchward_cache/"
    )
    parser.add_argument(
        "--statistics", action="store_true", help="print the number of findings per code instead"
    )
    parser.add_argument(
        "--format",
        choices=("terminal", "json", "github", "sarif", "junit", "grouped"),
        default="terminal",
        help="output format",
    )
    parser.add_argument(
        "--config", metavar="PATH", help="the pyproject.toml to read (default: the nearest one)"
    )
    fixing = parser.add_argument_group("fixes")
    fixing.add_argument(
        "--fix", action="store_true", help="apply safe fixes, then report what is left"
    )
    fixing.add_argument(
        "--unsafe-fixes", action="store_true", help="apply unsafe fixes too (implies --fix)"
    )
    fixing.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes as a unified diff and change nothing; exit 1 if there is any",
    )
    fixing.add_argument(
        "--fix-only", action="store_true", help="apply fixes and report nothing else; exit 0"
    )
    parser.add_argument(
        "--target-gpu",
        metavar="GPU",
        help="the GPU the memory rules project onto; replaces the configured target-gpu",
    )
    parser.add_argument(
        "--report-unused-suppressions",
        action="store_true",
        help="also report suppression comments that suppress nothing (TW100)",
    )


def parse_selectors(values: list[str] | None) -> tuple[str, ...]:
    from ..config import normalize_selectors
    from ..errors import UsageError

    items = [item for value in values or () for item in value.split(",") if item.strip()]
    try:
        return normalize_selectors(items)
    except ValueError as error:
        raise UsageError(str(error)) from None


def exit_status(result, fail_on: str, exit_zero: bool) -> int:
    """2 when the engine broke on a file; else 1 for findings at or above ``fail-on`` or unanalysable files."""
    problems = [problem for report in result.reports for problem in report.problems]
    if any(problem.kind == "internal-error" for problem in problems):
        return 2
    if exit_zero:
        return 0
    from ..analysis import Severity

    threshold = Severity(fail_on).rank
    failing = any(
        finding.severity.rank >= threshold
        for report in result.reports
        for finding in report.findings
    )
    return 1 if failing or problems else 0


def run(args: argparse.Namespace) -> int:
    from .. import analysis
    from ..cache import Cache, cache_key, default_cache_dir, engine_fingerprint
    from ..config import resolve_config
    from ..discovery import SourceFile, discover
    from ..errors import UsageError
    from ..patterns import PatternList
    from ..reporters import FORMATS
    from ..reporters.terminal import should_colour
    from ..runner import check_files
    from ..selection import RuleSelection

    paths = args.paths or ["."]
    select, ignore = parse_selectors(args.select), parse_selectors(args.ignore)
    config = resolve_config(args.config, paths[0])
    if args.target_gpu:
        import attrs

        from ..config import _gpu_name

        try:
            config = attrs.evolve(config, target_gpu=_gpu_name(args.target_gpu))
        except ValueError as error:
            raise UsageError(f"--target-gpu: {error}") from None
    exclude = PatternList.parse("", list(config.exclude) + list(config.extend_exclude))
    # a mistyped path among others is reported as a file that cannot be read (exit 1)
    # and the others are still checked; only when no given path exists is it a usage error
    missing = [path for path in paths if not os.path.lexists(path)]
    if missing and len(missing) == len(paths):
        raise UsageError(f"{missing[0]}: no such file or directory")
    files = discover([path for path in paths if path not in missing], exclude, config.root)
    files = sorted(
        files + [SourceFile(os.path.normpath(path), os.path.abspath(path)) for path in missing],
        key=lambda source_file: source_file.path,
    )
    if not files:
        print(f"torchward: warning: no Python files found under {' '.join(paths)}", file=sys.stderr)
        return 0
    selection = RuleSelection(config, select or None, ignore, all_notes=args.all_notes)
    cache = None
    if not args.no_cache:
        from .. import estimator  # TW010's numbers come from the estimator's code and data

        engine_dirs = list(analysis.__path__) + list(estimator.__path__)
        key = cache_key(selection.identity(), engine_fingerprint(engine_dirs))
        cache = Cache.open(default_cache_dir(config.root), key)
    result = check_files(files, selection, args.jobs or os.cpu_count() or 1, cache)
    refused = False
    if args.fix or args.unsafe_fixes or args.diff or args.fix_only:
        from ..fixing import apply_fixes

        status, refused = apply_fixes(files, selection, result, args, sys.stdout, sys.stderr)
        if status is not None:
            return status
        result = check_files(files, selection, args.jobs or os.cpu_count() or 1, cache)
    from ..presentation import collector_paused, prepare

    with collector_paused():
        result = prepare(
            result,
            files,
            format=args.format,
            selection=selection,
            unused_suppressions=args.report_unused_suppressions,
        )
        FORMATS[args.format](
            result,
            sys.stdout,
            errors=sys.stderr,
            statistics=args.statistics,
            colour=should_colour(sys.stdout),
            show_hints=args.show_hints,
        )
    status = exit_status(result, args.fail_on or config.fail_on, args.exit_zero)
    if args.fix or args.unsafe_fixes:
        status = max(status, 1 if refused else 0)  # a fixed file that could not be written
    return status
