"""Notebooks over LSP 3.17: cells analysed in order as one program, results per cell.

Real engine (TW005 needs the model defined in one cell and the loss in the next).
"""

from __future__ import annotations

import asyncio

import pytest
from harness import REAL_SERVER, TIMEOUT_S, session
from lsprotocol import types
from torchward.analysis import rule_by_code

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(rule_by_code("TW005") is None, reason="TW005 is not implemented yet"),
]

NOTEBOOK = "file:///work/project/explore.ipynb"
MODEL_CELL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(16, 4)

    def forward(self, x):
        return F.softmax(self.body(x), dim=-1)

model = Classifier()
"""
NOTES_CELL = "The loss below is computed from the model above."
LOSS_CELL = """\
%matplotlib inline
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
loss = F.cross_entropy(model(x), y)
loss.backward()
"""


def cell_uri(n: int) -> str:
    return f"vscode-notebook-cell:/work/project/explore.ipynb#W{n}sZmlsZQ%3D%3D"


def open_notebook(editor, cells: list[tuple[types.NotebookCellKind, str, str]]) -> None:
    """Open a notebook of ``(kind, language, text)`` cells, each cell's text at version 1."""
    items = []
    notebook_cells = []
    for index, (kind, language, text) in enumerate(cells):
        uri = cell_uri(index)
        editor.texts[uri] = text
        editor.versions[uri] = 1
        notebook_cells.append(types.NotebookCell(kind=kind, document=uri))
        items.append(types.TextDocumentItem(uri, language, 1, text))
    editor.client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            types.NotebookDocument(NOTEBOOK, "jupyter-notebook", 1, notebook_cells), items
        )
    )


def edit_cell(editor, index: int, edit: types.TextEdit, notebook_version: int) -> None:
    uri = cell_uri(index)
    text = editor.texts[uri]
    start = editor._offset(uri, edit.range.start)
    end = editor._offset(uri, edit.range.end)
    editor.texts[uri] = text[:start] + edit.new_text + text[end:]
    editor.versions[uri] += 1
    editor.client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            types.VersionedNotebookDocumentIdentifier(notebook_version, NOTEBOOK),
            types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            types.VersionedTextDocumentIdentifier(
                                version=editor.versions[uri], uri=uri
                            ),
                            [types.TextDocumentContentChangePartial(edit.range, edit.new_text)],
                        )
                    ]
                )
            ),
        )
    )


async def cell_diagnostics(editor, index: int) -> list[types.Diagnostic]:
    """The diagnostics pushed for a cell at its current version (cells are pushed to
    every client, pull clients too: VS Code's client never pulls a notebook's cells)."""
    uri = cell_uri(index)
    version = editor.versions[uri]

    async def published():
        while True:
            params = editor.client.published.get(uri)
            if params is not None and params.version == version:
                return list(params.diagnostics)
            await asyncio.sleep(0.005)

    return await asyncio.wait_for(published(), TIMEOUT_S)


CODE, MARKUP = types.NotebookCellKind.Code, types.NotebookCellKind.Markup


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
async def test_a_softmax_model_in_one_cell_and_its_loss_in_the_next_is_flagged_on_the_loss_cell(
    client,
):
    async with session(client, server=REAL_SERVER, notebooks=True) as editor:
        sync = editor.result.capabilities.notebook_document_sync
        assert sync is not None, "the server advertises notebook sync"
        selector = sync.notebook_selector[0]
        assert selector.notebook == "jupyter-notebook"
        assert [c.language for c in selector.cells] == ["python"]
        open_notebook(
            editor,
            [
                (CODE, "python", MODEL_CELL),
                (MARKUP, "markdown", NOTES_CELL),
                (CODE, "python", LOSS_CELL),
            ],
        )
        loss_cell = [d for d in await cell_diagnostics(editor, 2) if d.code == "TW005"]
        assert loss_cell, "the model's softmax (cell 1) reaches the loss in cell 3"
        diagnostic = loss_cell[0]
        # mapped back to the cell: line 2 of the loss cell is the cross_entropy call
        assert diagnostic.range.start.line == 2
        line = LOSS_CELL.splitlines()[2]
        assert line[diagnostic.range.start.character :].startswith("F.cross_entropy")
        assert not [d for d in await cell_diagnostics(editor, 0) if d.code == "TW005"]
        # evidence in the model cell points at that cell's URI
        related = {r.location.uri for r in diagnostic.related_information or []}
        assert related <= {cell_uri(0), cell_uri(2)}

        hover = await editor.hover(cell_uri(2), diagnostic.range.start)
        assert hover is not None and "TW005" in hover.contents.value
        assert hover.range is not None and hover.range.start.line == 2

        actions = await editor.code_actions(cell_uri(2), [diagnostic])
        suppress = [a for a in actions if a.title.startswith("Suppress TW005")]
        assert suppress, "suppression is offered on the cell"
        edit = suppress[0].edit
        edits = (
            {c.text_document.uri: c.edits for c in edit.document_changes}
            if edit.document_changes
            else edit.changes
        )
        assert list(edits) == [cell_uri(2)]
        assert all(e.range.start.line == 2 for e in edits[cell_uri(2)])
        if edit.document_changes:
            assert edit.document_changes[0].text_document.version == editor.versions[cell_uri(2)]
        assert any(a.title == "Explain TW005" for a in actions)


async def test_an_edit_in_an_earlier_cell_moves_the_finding_of_a_later_one():
    async with session("vscode-1.96", server=REAL_SERVER, notebooks=True) as editor:
        open_notebook(editor, [(CODE, "python", MODEL_CELL), (CODE, "python", LOSS_CELL)])
        assert [d for d in await cell_diagnostics(editor, 1) if d.code == "TW005"]
        # the model stops ending in softmax: the finding in the next cell goes away
        line = MODEL_CELL.splitlines().index("        return F.softmax(self.body(x), dim=-1)")
        text = MODEL_CELL.splitlines()[line]
        edit = types.TextEdit(
            types.Range(types.Position(line, 0), types.Position(line, len(text))),
            "        return self.body(x)",
        )
        edit_cell(editor, 0, edit, notebook_version=1)

        async def tw005_gone():
            while any(d.code == "TW005" for d in editor.client.published[cell_uri(1)].diagnostics):
                await asyncio.sleep(0.02)

        await asyncio.wait_for(tw005_gone(), TIMEOUT_S)
        # a pull of a cell is answered empty: its findings come pushed, never twice
        assert list((await editor.pull(cell_uri(1))).items) == []


async def test_closing_the_notebook_clears_its_cells():
    async with session("neovim-0.7", server=REAL_SERVER, notebooks=True) as editor:
        open_notebook(editor, [(CODE, "python", MODEL_CELL), (CODE, "python", LOSS_CELL)])
        assert [d for d in await cell_diagnostics(editor, 1) if d.code == "TW005"]
        editor.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                types.NotebookDocumentIdentifier(NOTEBOOK),
                [
                    types.TextDocumentIdentifier(cell_uri(0)),
                    types.TextDocumentIdentifier(cell_uri(1)),
                ],
            )
        )

        async def cleared():
            while editor.client.published[cell_uri(1)].diagnostics:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(cleared(), TIMEOUT_S)
