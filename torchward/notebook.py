"""Jupyter notebooks: the code cells checked as one program, in file order.

A notebook's code cells run top to bottom as one program (the model built in cell 2 is
trained in cell 5), so they are analysed as one: :func:`program` joins them, each
preceded by a marker comment line, into a Python text whose line numbers map back to
(cell, line). Cells are numbered as editors show them: 1-based over all cells of the
file, markdown included. IPython syntax is not Python: a line magic or shell escape
(``%time``, ``!pip``, ``ls?``) becomes ``pass`` with a marker comment (same line count,
valid in any block), and a cell magic (``%%bash``) cell is left out.

Findings travel in program coordinates (the runner and cache need nothing special);
:func:`present` turns them into ``notebook.ipynb:cell 3`` paths with cell-relative
lines just before reporting, and reporters print ``notebook.ipynb:cell 3:line 4``.

Fixes run on the program (:func:`fix_notebook`); only cells whose text changed are
written back, each into the exact bytes of its ``"source"`` value in the JSON text
(:mod:`torchward.notebook_json` finds them), in the style that value had (a list of
lines or one string, its indentation, escaping): everything else — other cells,
outputs, metadata, the file's formatting — stays byte for byte.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable

import attrs

from .analysis import Edit, Evidence, FileReport, Fix, LintSettings, Problem, Span, analyze_source

MARKER = "# torchward-cell {}\n"
MAGIC_PLACEHOLDER = "pass  # torchward-magic"
_MAGIC = re.compile(r"^(\s*)(?:[%!]|\S.*\?$)")
_MARKER = re.compile(r"^# torchward-cell (\d+)\r?\n?$")
_CELL_PATH = re.compile(r"^(.*\.ipynb):cell (\d+)$")


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Python's lines with their endings (\\n, \\r\\n, \\r; not form feeds or U+2028)."""
    return _LINE.findall(text)


class NotebookError(ValueError):
    """The file is not a notebook this tool can read (bad JSON, no cells, odd cells)."""


def split_cell(path: str) -> tuple[str, int | None]:
    """``("nb.ipynb", 3)`` for ``"nb.ipynb:cell 3"``; ``(path, None)`` for anything else."""
    match = _CELL_PATH.match(path)
    return (match.group(1), int(match.group(2))) if match else (path, None)


def location(path: str, line: int, column: int) -> str:
    """How a person reads a position: ``nb.ipynb:cell 3:line 4`` or ``train.py:4:5``."""
    return f"{path}:line {line}" if split_cell(path)[1] is not None else f"{path}:{line}:{column}"


def cells_of(text: str) -> list[dict]:
    try:
        document = json.loads(text)
    except ValueError as error:
        raise NotebookError(f"not valid JSON: {error}") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise NotebookError("no list of cells (is this an nbformat 4 notebook?)")
    for number, cell in enumerate(cells, 1):
        source = cell.get("source", "")
        if not isinstance(source, str) and not (
            isinstance(source, list) and all(isinstance(s, str) for s in source)
        ):
            raise NotebookError(
                f"cell {number}: 'source' is neither a string nor a list of strings"
            )
    return cells


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


@attrs.frozen
class Program:
    text: str
    numbers: tuple[int, ...]  # cell number of each code cell in the program
    starts: tuple[int, ...]  # program line of each such cell's first line
    sources: tuple[str, ...]  # each such cell's original source

    def cell_at(self, line: int) -> tuple[int, int]:
        """(cell number, line within the cell) of a program line."""
        index = max(bisect.bisect_right(self.starts, line) - 1, 0)
        return self.numbers[index], line - self.starts[index] + 1


def _is_code(cell: dict) -> bool:
    return cell.get("cell_type") == "code"


def is_cell_magic(source: str) -> bool:
    """A cell magic (``%%bash``) makes the whole cell another language: left out."""
    return source.lstrip().startswith("%%")


def to_python(source: str) -> str:
    """A cell's source with IPython-only lines made ``pass`` (same line count); a magic
    whose line ends with a backslash (``!python prepare.py \\``) goes on over the next
    lines, which are made ``pass`` at its indentation too."""
    lines = split_lines(source)  # Python's lines: not at form feeds or U+2028
    out = []
    continued: str | None = None  # the indentation of a magic that goes on
    for line in lines:
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        match = _MAGIC.match(line)
        if continued is not None:
            out.append(continued + MAGIC_PLACEHOLDER + ending)
        elif match and not line.lstrip().startswith("#"):
            out.append(match.group(1) + MAGIC_PLACEHOLDER + ending)
            continued = match.group(1)
        else:
            out.append(line)
            continue
        if not body.endswith("\\"):
            continued = None
    return "".join(out)


def program(text: str) -> Program:
    """The program of a notebook's JSON text (its code cells, numbered over all cells)."""
    cells = cells_of(text)
    return join_cells(
        (number, cell_source(cell)) for number, cell in enumerate(cells, 1) if _is_code(cell)
    )


def join_cells(cells: Iterable[tuple[int, str]]) -> Program:
    """The program of code cells given as ``(number, source)`` in run order: the one
    cell→program mapping, shared by the CLI (a file's JSON) and the language server
    (cells an editor synchronises one by one). Cell magics are left out."""
    parts, numbers, starts, sources = [], [], [], []
    line = 1
    for number, source in cells:
        if is_cell_magic(source):
            continue
        body = to_python(source)
        if not body.endswith("\n"):
            body += "\n"
        parts.append(MARKER.format(number) + body)
        numbers.append(number)
        starts.append(line + 1)
        sources.append(source)
        line += 1 + body.count("\n")
    return Program("".join(parts), tuple(numbers), tuple(starts), tuple(sources))


def analyze_notebook(text: str, path: str, settings: LintSettings = LintSettings()) -> FileReport:
    """The report of a notebook, in program coordinates; a malformed one is a problem."""
    try:
        built = program(text)
    except NotebookError as error:
        return FileReport(path, (), (Problem("malformed-notebook", str(error)),))
    return analyze_source(built.text, path, settings)


def _cell_span(built: Program, span: Span) -> tuple[int, Span]:
    cell, line = built.cell_at(span.line)
    other, end_line = built.cell_at(span.end_line)
    if other != cell:
        end_line, end = line, span.column
    else:
        end = span.end_column
    return cell, Span(line, span.column, end_line, end)


def _present_report(report: FileReport, built: Program) -> FileReport:
    findings = []
    for finding in report.findings:
        cell, span = _cell_span(built, finding.span)
        evidence = []
        for item in finding.evidence:
            if item.path is not None:
                evidence.append(item)
                continue
            where, item_span = _cell_span(built, item.span)
            evidence.append(
                Evidence(
                    item_span,
                    item.message,
                    None if where == cell else f"{report.path}:cell {where}",
                )
            )
        fixes = []
        for fix in finding.fixes:
            placed = [(_cell_span(built, edit.span), edit.text) for edit in fix.edits]
            if all(where == cell for (where, _), _ in placed):
                fixes.append(
                    Fix(fix.title, fix.applicability, tuple(Edit(s, t) for (_, s), t in placed))
                )
            else:  # edits in several cells cannot be said with one path: `--fix` applies them
                fixes.append(Fix(fix.title, fix.applicability.__class__("display-only"), ()))
        findings.append(
            attrs.evolve(
                finding,
                path=f"{report.path}:cell {cell}",
                span=span,
                evidence=tuple(evidence),
                fixes=tuple(fixes),
            )
        )
    problems = []
    for problem in report.problems:
        if problem.span is None:
            problems.append(problem)
            continue
        # the span would read as a line of the JSON file: the place goes into the message
        cell, span = _cell_span(built, problem.span)
        place = f"cell {cell}, line {span.line}, column {span.column + 1}"
        problems.append(Problem(problem.kind, f"{place}: {problem.message}"))
    return FileReport(report.path, tuple(findings), tuple(problems))


def present(result):
    """``result`` with notebook findings in cell coordinates (see the module docstring)."""
    reports = []
    for report in result.reports:
        if report.path.endswith(".ipynb") and (
            report.findings or any(p.span for p in report.problems)
        ):
            try:
                with open(report.path, encoding="utf-8-sig") as handle:
                    report = _present_report(report, program(handle.read()))
            except (OSError, ValueError):
                pass  # the file changed or vanished since: report program lines
        reports.append(report)
    return attrs.evolve(result, reports=tuple(reports))


def cell_lines(path: str) -> list[str]:
    """The lines of cell ``nb.ipynb:cell N`` (for showing a finding's source line)."""
    notebook, number = split_cell(path)
    if number is None:
        return []
    try:
        with open(notebook, encoding="utf-8-sig") as handle:
            cells = cells_of(handle.read())
        return [line.rstrip("\r\n") for line in split_lines(cell_source(cells[number - 1]))]
    except (OSError, ValueError, IndexError, TypeError):
        return []


def fix_notebook(text: str, path: str, settings: LintSettings, *, unsafe: bool):
    """(new JSON text, applied fixes, problems); only the changed cells are rewritten."""
    from .analysis.fixes import fix_source
    from .notebook_json import replace_sources

    try:
        built = program(text)
    except NotebookError as error:
        return text, (), (Problem("malformed-notebook", str(error)),)
    outcome = fix_source(built.text, path, settings, unsafe=unsafe)
    if not outcome.changed:
        return text, (), outcome.problems
    new_sources = _split_program(outcome.text, built)
    changed = {
        number: source
        for number, old, source in zip(built.numbers, built.sources, new_sources)
        if source != old
    }
    return replace_sources(text, changed), outcome.applied, outcome.problems


def _split_program(text: str, built: Program) -> list[str]:
    chunks: list[list[str]] = []
    above: list[str] = []  # lines a fix put above the first marker belong to the first cell
    for line in split_lines(text):
        if _MARKER.match(line):
            chunks.append(above if not chunks else [])
        elif chunks:
            chunks[-1].append(line)
        else:
            above.append(line)
    sources = []
    for old, lines in zip(built.sources, chunks):
        new = "".join(lines)
        if not old.endswith("\n") and new.endswith("\n"):
            new = new[:-1]
        sources.append(_restore_magics(old, new))
    return sources


def _restore_magics(old: str, new: str) -> str:
    """The magic lines of ``old`` put back over their placeholders in ``new`` (a fixed
    program), at the placeholders' indentation: a fix may have indented them; a magic's
    continuation lines keep their indentation relative to it."""
    magics = []
    for line, python in zip(split_lines(old), split_lines(to_python(old))):
        if line != python:
            base = python[: len(python) - len(python.lstrip())]  # the magic's indentation
            text = line.rstrip("\r\n")
            magics.append(text[len(base) :] if text.startswith(base) else text.strip())
    if not magics:
        return new
    magic_lines = iter(magics)
    out = []
    for line in split_lines(new):
        body = line.rstrip("\r\n")
        if body.strip() == MAGIC_PLACEHOLDER:
            indent = body[: len(body) - len(body.lstrip())]
            line = indent + next(magic_lines, "") + line[len(body) :]
        out.append(line)
    return "".join(out)
