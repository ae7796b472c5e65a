"""Notebooks over LSP 3.17: the code cells analysed in order as one program.

Protocol model: a client that speaks notebook sync (VS Code's ``jupyter-notebook``
through vscode-languageclient, JupyterLab through jupyterlab-lsp) opens a notebook with
``notebookDocument/didOpen`` — its cells in order, each with its own text document —
and then sends ``notebookDocument/didChange``: cells inserted, deleted or moved
(``structure``), and the edits inside a cell's text (``textContent``, incremental like
any document). Requests (hover, code actions, lenses, hints) then name a *cell's* URI,
and diagnostics are *pushed* per cell (``publishDiagnostics``) to every client, pull
clients included: vscode-languageclient 9 never pulls a notebook's cells (its pull
follows text tabs only), so a pulled cell would show nothing; a cell's pull is answered
empty, so a client that does both shows each finding once.

A notebook runs top to bottom as one program (the model built in cell 1 is trained in
cell 2), so the server analyses it as one: the Python cells are joined by
:func:`torchward.notebook.join_cells`, the CLI's own cell→program mapping (a marker line
before each cell, IPython magics made ``pass``, cell magics left out), into one
document in the :class:`~.documents.DocumentStore` under the *notebook's* URI. The
scheduler, the analysis, the estimate, fixes and hovers work on that document as on a
file; this module and :mod:`.notebook_model` (the cells and the mapping of positions)
are the one place that moves positions between a cell and the program. A cell's lines are the program's lines from the cell's start, column for
column (a magic line, made ``pass``, has no findings of its own), so a position maps by
its line alone.

The program's version is the server's own counter, bumped on every change: LSP lets a
notebook's version stay put while a cell's text changes. Published diagnostics carry
each cell's own version. A finding whose range runs into the next cell is cut at the
end of its first line; an edit that spans cells (or touches a marker line, as an import
added above the first cell would) cannot be said as a cell edit, so that action is not
offered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

from .documents import Document, PositionOutOfRange
from .encoding import ColumnCodec
from .notebook_model import CELL_LANGUAGE, Cell, Notebook

if TYPE_CHECKING:
    from .server import TorchwardServer

log = logging.getLogger(__name__)

NOTEBOOK_TYPE = "jupyter-notebook"
SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithNotebook(
            notebook=NOTEBOOK_TYPE, cells=[types.NotebookCellLanguage(CELL_LANGUAGE)]
        )
    ],
    save=True,
)


# -- synchronisation ------------------------------------------------------------------------
def _cell_document(item: types.TextDocumentItem) -> Document:
    return Document(item.uri, item.text, item.version, item.language_id)


def on_did_open(server: TorchwardServer, params: types.DidOpenNotebookDocumentParams) -> None:
    from .results import AnalysisState

    texts = {item.uri: item for item in params.cell_text_documents}
    cells = []
    for cell in params.notebook_document.cells:
        item = texts.get(cell.document)
        cells.append(Cell(cell.document, cell.kind, _cell_document(item) if item else None))
    notebook = Notebook(params.notebook_document.uri, cells)
    for synced in cells:  # a client that also synced a cell as a text document: one analysis
        if server.documents.close(synced.uri) is not None:
            server.states.pop(synced.uri, None)
            server.scheduler.forget(synced.uri)
    server.notebooks.add(notebook)
    server.documents.open(notebook.uri, notebook.program_text(), notebook.revision, CELL_LANGUAGE)
    server.states[notebook.uri] = AnalysisState()
    server.schedule(notebook.uri, immediate=True)


def _apply_structure(
    notebook: Notebook, structure: types.NotebookDocumentCellChangeStructure
) -> list[str]:
    """Splice the cell array; returns the URIs of cells that left the notebook."""
    opened = {item.uri: item for item in structure.did_open or []}
    array = structure.array
    removed = notebook.cells[array.start : array.start + array.delete_count]
    existing = {cell.uri: cell for cell in notebook.cells}
    added = []
    for new in array.cells or []:
        item = opened.get(new.document)
        if item is not None:
            added.append(Cell(new.document, new.kind, _cell_document(item)))
        else:  # a moved cell keeps its text
            kept = existing.get(new.document)
            added.append(kept if kept is not None else Cell(new.document, new.kind))
    notebook.cells[array.start : array.start + array.delete_count] = added
    present = {cell.uri for cell in notebook.cells}
    return [cell.uri for cell in removed if cell.uri not in present]


def on_did_change(server: TorchwardServer, params: types.DidChangeNotebookDocumentParams) -> None:
    notebook = server.notebooks.get(params.notebook_document.uri)
    document = server.documents.get(params.notebook_document.uri)
    changes = params.change.cells
    if notebook is None or document is None or changes is None:
        return
    gone: list[str] = []
    if changes.structure is not None:
        gone = _apply_structure(notebook, changes.structure)
        server.notebooks.reindex(notebook)
    for content in changes.text_content or []:
        cell = notebook.cell(content.document.uri)
        if cell is None or cell.document is None:
            continue
        try:
            cell.document.apply_changes(content.changes, content.document.version, server.codec)
        except PositionOutOfRange as error:
            server.log(
                f"torchward: {cell.uri}: an edit does not fit the server's copy of the cell "
                f"({error.reason}); the notebook is analysed from the text as it stands",
                types.MessageType.Error,
            )
    notebook.revision += 1
    shifts = document.apply_changes(
        [types.TextDocumentContentChangeWholeDocument(notebook.program_text())],
        notebook.revision,
        server.codec,
    )
    from .results import AnalysisState

    server.states.setdefault(notebook.uri, AnalysisState()).follow(shifts)
    server.schedule(notebook.uri)
    for uri in gone:  # a deleted cell keeps no squiggles
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))


def on_did_save(server: TorchwardServer, params: types.DidSaveNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    state = server.states.get(uri)
    if server.documents.get(uri) is not None and not server.is_current(
        uri, state.result if state else None
    ):
        server.schedule(uri, immediate=True)


def on_did_close(server: TorchwardServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    notebook = server.notebooks.remove(uri)
    server.documents.close(uri)
    server.states.pop(uri, None)
    server.last_fit.pop(uri, None)
    server.scheduler.forget(uri)
    if notebook is not None:
        for cell in notebook.cells:
            server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(cell.uri, []))


# -- results, per cell ----------------------------------------------------------------------
def _moved_diagnostic(
    notebook: Notebook, diagnostic: types.Diagnostic, codec: ColumnCodec
) -> tuple[Cell, types.Diagnostic] | None:
    placed = notebook.range_to_cell(diagnostic.range, codec)
    if placed is None:
        return None
    cell, range_ = placed
    related = None
    if diagnostic.related_information:
        related = []
        for item in diagnostic.related_information:
            location = item.location
            if location.uri == notebook.uri:
                where = notebook.range_to_cell(location.range, codec)
                if where is None:
                    continue
                location = types.Location(where[0].uri, where[1])
            related.append(types.DiagnosticRelatedInformation(location, item.message))
    fields: dict[str, Any] = {"range": range_, "related_information": related or None}
    if hasattr(diagnostic, "wire"):
        fields["wire"] = None  # its precomputed JSON holds program positions
    return cell, attrs.evolve(diagnostic, **fields)


def cell_diagnostics(
    server: TorchwardServer, notebook: Notebook, result: Any
) -> dict[str, list[types.Diagnostic]]:
    """The program's diagnostics split by cell URI (every cell present, most with none)."""
    from .diagnostics import diagnostics_for

    document = server.documents.get(notebook.uri)
    by_cell: dict[str, list[types.Diagnostic]] = {cell.uri: [] for cell in notebook.cells}
    if document is None or result is None:
        return by_cell
    for diagnostic in diagnostics_for(document, result, server.codec, by_key=True):
        moved = _moved_diagnostic(notebook, diagnostic, server.codec)
        if moved is not None:
            by_cell[moved[0].uri].append(moved[1])
    return by_cell


def publish(server: TorchwardServer, notebook: Notebook) -> None:
    """Push the notebook's last result to each of its cells, with each cell's version."""
    state = server.states.get(notebook.uri)
    if state is None or state.result is None:
        return
    for uri, diagnostics in cell_diagnostics(server, notebook, state.result).items():
        cell = notebook.cell(uri)
        version = cell.document.version if cell is not None and cell.document else None
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri, diagnostics, version)
        )


# -- requests on a cell ---------------------------------------------------------------------
def program_range(notebook: Notebook, cell: Cell, range_: types.Range) -> types.Range | None:
    start = notebook.to_program(cell, range_.start)
    end = notebook.to_program(cell, range_.end)
    return None if start is None or end is None else types.Range(start, end)


def program_diagnostic(
    notebook: Notebook, cell: Cell, diagnostic: types.Diagnostic
) -> types.Diagnostic:
    """A diagnostic the client sent for a cell, in program coordinates (its ``data``
    names the finding, whose spans are the program's already)."""
    range_ = program_range(notebook, cell, diagnostic.range) or diagnostic.range
    fields: dict[str, Any] = {"range": range_}
    if hasattr(diagnostic, "wire"):
        fields["wire"] = None
    return attrs.evolve(diagnostic, **fields)


def cell_edit(
    server: TorchwardServer, notebook: Notebook, edit: types.WorkspaceEdit
) -> types.WorkspaceEdit | None:
    """A workspace edit on the program as edits of its cells; None when an edit does not
    lie inside one cell (it cannot be said in the cells' coordinates)."""
    edits: list[types.TextEdit] = []
    for change in edit.document_changes or []:
        if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == notebook.uri:
            edits.extend(e for e in change.edits if isinstance(e, types.TextEdit))
        else:
            return None
    for uri, text_edits in (edit.changes or {}).items():
        if uri != notebook.uri:
            return None
        edits.extend(text_edits)
    per_cell: dict[str, list[types.TextEdit]] = {}
    for text_edit in edits:
        placed = notebook.range_to_cell(text_edit.range, server.codec, cut=False)
        if placed is None:
            return None
        per_cell.setdefault(placed[0].uri, []).append(types.TextEdit(placed[1], text_edit.new_text))
    if edit.document_changes:
        changes: list[Any] = []
        for uri, text_edits in per_cell.items():
            cell = notebook.cell(uri)
            version = cell.document.version if cell is not None and cell.document else None
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            changes.append(types.TextDocumentEdit(identifier, list(text_edits)))
        return types.WorkspaceEdit(document_changes=changes)
    return types.WorkspaceEdit(changes=per_cell)


def code_actions_back(
    server: TorchwardServer,
    notebook: Notebook,
    cell: Cell,
    actions: Iterable[types.CodeAction],
    originals: dict[int, types.Diagnostic],
) -> list[types.CodeAction]:
    """Actions computed on the program, for the cell: the client's own diagnostics back,
    edits in cell coordinates; an action whose edit spans cells is not offered."""
    out = []
    for action in actions:
        if action.edit is not None:
            moved = cell_edit(server, notebook, action.edit)
            if moved is None:
                continue
            action.edit = moved
        if action.diagnostics:  # the client's own diagnostics, as it sent them
            action.diagnostics = [originals.get(id(d), d) for d in action.diagnostics]
        if isinstance(action.data, dict) and action.data.get("uri") == notebook.uri:
            action.data = {**action.data, "cell": cell.uri}
        out.append(action)
    return out


def _identifier(notebook: Notebook) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(notebook.uri)


def _in_cell(notebook: Notebook, cell: Cell, range_: types.Range | None, codec: ColumnCodec):
    placed = notebook.range_to_cell(range_, codec) if range_ is not None else None
    return placed[1] if placed is not None and placed[0] is cell else None


async def hover(server: TorchwardServer, params: types.HoverParams, notebook, cell, answer):
    """``answer`` (the hover of a document) asked of the program at the cell's position."""
    position = notebook.to_program(cell, params.position)
    if position is None:
        return None
    result = await answer(server, types.HoverParams(_identifier(notebook), position))
    if result is not None and result.range is not None:
        result.range = _in_cell(notebook, cell, result.range, server.codec)
    return result


async def code_actions(
    server: TorchwardServer, params: types.CodeActionParams, notebook, cell, answer
):
    """``answer`` (a document's code actions) asked of the program, mapped back to the cell."""
    range_ = program_range(notebook, cell, params.range)
    if range_ is None:
        return None
    originals: dict[int, types.Diagnostic] = {}
    moved = []
    for diagnostic in params.context.diagnostics:
        translated = program_diagnostic(notebook, cell, diagnostic)
        originals[id(translated)] = diagnostic
        moved.append(translated)
    context = attrs.evolve(params.context, diagnostics=moved)
    actions = await answer(
        server,
        types.CodeActionParams(_identifier(notebook), range_, context),
    )
    return code_actions_back(server, notebook, cell, actions or [], originals)


def resolved_action(server: TorchwardServer, action: types.CodeAction) -> types.CodeAction:
    """A resolved action on a notebook's program with its edit in cell coordinates (or none)."""
    data = action.data if isinstance(action.data, dict) else {}
    notebook = (
        server.notebooks.get(data.get("uri", "")) if isinstance(data.get("uri"), str) else None
    )
    if notebook is not None and action.edit is not None:
        action.edit = cell_edit(server, notebook, action.edit)
    return action


def code_lenses(server: TorchwardServer, params: types.CodeLensParams, notebook, cell, answer):
    """The program's lenses that lie in this cell, in its coordinates."""
    out = []
    for lens in answer(server, types.CodeLensParams(_identifier(notebook))) or []:
        range_ = _in_cell(notebook, cell, lens.range, server.codec)
        if range_ is not None:
            lens.range = range_
            out.append(lens)
    return out


def inlay_hints(server: TorchwardServer, params: types.InlayHintParams, notebook, cell, answer):
    """The program's hints that lie in the asked range of this cell, in its coordinates."""
    range_ = program_range(notebook, cell, params.range)
    if range_ is None:
        return []
    out = []
    for hint in answer(server, types.InlayHintParams(_identifier(notebook), range_)) or []:
        placed = _in_cell(notebook, cell, types.Range(hint.position, hint.position), server.codec)
        if placed is not None:
            hint.position = placed.start
            out.append(hint)
    return out


def register(server: TorchwardServer) -> None:
    server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)(lambda params: on_did_open(server, params))
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)(lambda params: on_did_change(server, params))
    server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)(lambda params: on_did_save(server, params))
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)(lambda params: on_did_close(server, params))
