"""Documents too large to analyse as you type: analysed when opened and saved.

The analysis of one keystroke is linear in the document (parsing the edited statements,
indexing the module, replaying the cached function analyses, running the rules): 0.6 s
at 50,000 lines of training code on a quiet 2-core machine (``bench/bench_lsp_size.py``),
so somewhere past 80,000 lines it no longer fits the 1 s a keystroke may take. Above the ``largeFileLines`` setting (default
:data:`~.configuration.DEFAULT_LARGE_FILE_LINES`; 0: never) a document is therefore
analysed when it is opened, when it is saved and when the settings change — never
because of an edit:

- each edit moves the last findings with the lines they point at (as while a syntax
  error stops analysis, :mod:`.results`) and shows them at once for the new version:
  pushed with ``publishDiagnostics``, or as the current report to a client that pulls.
  The report is current, so no pull ever waits for an analysis that typing no longer
  starts;
- an analysis that an edit overtook (the one started by opening or saving) is not
  thrown away: its findings are moved through the edits since its version
  (:class:`~.documents.EditLog`) and shown for the current version;
- saving analyses the saved text;
- the user is told: one ``window/showMessage`` per document, and an Information
  diagnostic on line 1 for as long as the document is over the limit.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

from .results import DocumentResult

if TYPE_CHECKING:
    from torchward.analysis import Problem

    from .documents import Document
    from .scheduler import Outcome
    from .server import TorchwardServer

ON_SAVE = "analysed-on-save"  # the problem kind of the Information diagnostic


def is_large(line_count: int, limit: int) -> bool:
    """Whether a document of ``line_count`` lines is analysed on save only."""
    return limit > 0 and line_count > limit


def notice(line_count: int, limit: int) -> Problem:
    """The Information diagnostic shown on line 1 of a document analysed on save."""
    from torchward.analysis import Problem, Span

    return Problem(
        ON_SAVE,
        f"torchward: this file has {line_count:,} lines, more than largeFileLines "
        f"({limit:,}): it is analysed when you save it, not as you type; until then the "
        "findings of the last analysis move with your edits",
        Span(1, 0, 1, 0),
    )


def defer(server: TorchwardServer, uri: str) -> bool:
    """Called for an edit: True when the document is analysed on save only. Its last
    result, moved with the edit already, is then shown for the current version."""
    from . import reporting

    document = server.documents.get(uri)
    if document is None:
        return False
    limit = server.settings_for(document.path).large_file_lines
    line_count = len(document.lines)
    if not is_large(line_count, limit):
        return False
    tell_once(server, uri, line_count, limit)
    state = server.states.get(uri)
    if state is None or state.result is None or state.result.generation != server.generation:
        return True  # the first analysis still runs: it catches up when it lands
    result = state.result
    state.result = DocumentResult(
        document.version, result.generation, result.findings, result.problems, carried=True
    )
    reporting.publish(server, uri)
    return True


def snapshot_fields(document: Document, limit: int) -> dict:
    """What a snapshot of ``document`` carries for this module: the notice when it is
    analysed on save only, and its edit log (to catch an overtaken analysis up)."""
    line_count = len(document.lines)
    return {
        "on_save": notice(line_count, limit) if is_large(line_count, limit) else None,
        "edits": document.edits,
    }


def catch_up(outcome: Outcome, current: tuple[int, int] | None) -> Outcome | None:
    """An overtaken analysis of a document analysed on save only, moved through the
    edits since its version and dated to the current one; None when it cannot be."""
    from .results import shift_findings

    snapshot = outcome.snapshot
    if snapshot.on_save is None or snapshot.edits is None or current is None:
        return None
    if current[1] != snapshot.generation:
        return None  # the settings changed: their own analysis follows
    shifts = snapshot.edits.shifts_after(snapshot.version)
    if shifts is None:
        return None
    report = outcome.report
    return attrs.evolve(
        outcome,
        snapshot=attrs.evolve(snapshot, version=current[0]),
        report=attrs.evolve(report, findings=shift_findings(report.findings, shifts)),
        estimate=None,
        carried=True,
    )


def tell_once(server: TorchwardServer, uri: str, line_count: int, limit: int) -> None:
    from lsprotocol import types

    from .documents import path_of

    name = os.path.basename(path_of(uri)) or uri
    message = (
        f"torchward: {name} has {line_count:,} lines (more than largeFileLines, {limit:,}): "
        "it is analysed when you save it, not as you type."
    )
    key = f"on-save:{uri}"
    if key in server.told:
        return
    server.told.add(key)
    server.log(message, types.MessageType.Info)
    try:
        server.window_show_message(types.ShowMessageParams(types.MessageType.Info, message))
    except Exception:  # no client yet (unit tests) or the pipe is gone
        pass
