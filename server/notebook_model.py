"""An open notebook as the server holds it: its cells in order, the one program they make,
and the mapping of positions between a cell and that program (the protocol and the
handlers are in :mod:`.notebooks`). A cell's lines are the program's lines from the cell's
start, column for column, so a position maps by its line alone."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import attrs
from lsprotocol import types

from .documents import Document
from .encoding import ColumnCodec

if TYPE_CHECKING:
    from torchward.notebook import Program

CELL_LANGUAGE = "python"


@attrs.define(eq=False)
class Cell:
    uri: str
    kind: types.NotebookCellKind
    document: Document | None = None  # its text, when the client sent it (code cells)

    @property
    def is_python(self) -> bool:
        return (
            self.kind == types.NotebookCellKind.Code
            and self.document is not None
            and self.document.language_id == CELL_LANGUAGE
        )


@attrs.define(eq=False)
class Notebook:
    """One open notebook: its cells in order and how they make one program."""

    uri: str
    cells: list[Cell]
    revision: int = 0  # the program document's version (see the module docstring)
    layout: Program | None = None

    def program_text(self) -> str:
        """Join the Python cells (numbered 1-based over all cells) and keep the layout."""
        from torchward.notebook import join_cells

        self.layout = join_cells(
            (number, cell.document.text)
            for number, cell in enumerate(self.cells, 1)
            if cell.is_python and cell.document is not None
        )
        return self.layout.text

    def cell(self, uri: str) -> Cell | None:
        return next((cell for cell in self.cells if cell.uri == uri), None)

    def _start(self, cell: Cell) -> int | None:
        """0-based program line of ``cell``'s first line, None when it is not in the program."""
        layout = self.layout
        if layout is None or cell not in self.cells:
            return None
        number = self.cells.index(cell) + 1
        try:
            return layout.starts[layout.numbers.index(number)] - 1
        except ValueError:
            return None

    def to_program(self, cell: Cell, position: types.Position) -> types.Position | None:
        start = self._start(cell)
        return None if start is None else types.Position(start + position.line, position.character)

    def to_cell(self, line: int) -> tuple[Cell, int] | None:
        """The cell and 0-based cell line of 0-based program ``line``; None on a marker line."""
        layout = self.layout
        if layout is None or not layout.starts:
            return None
        index = bisect.bisect_right(layout.starts, line + 1) - 1
        if index < 0:
            return None
        cell_line = line + 1 - layout.starts[index]
        cell = self.cells[layout.numbers[index] - 1]
        if cell.document is None or cell_line >= len(cell.document.lines):
            return None  # the next cell's marker line (or past the end)
        return cell, cell_line

    def range_to_cell(
        self, range_: types.Range, codec: ColumnCodec, *, cut: bool = True
    ) -> tuple[Cell, types.Range] | None:
        """A program range in one cell's coordinates; a range that ends in another cell is
        cut at the end of its first line (``cut``) or refused."""
        start = self.to_cell(range_.start.line)
        if start is None and range_.start.line == 0 and range_.start.character == 0:
            first = self.to_cell(1)  # a problem without a place: the first cell's start
            if first is not None:
                return first[0], types.Range(types.Position(0, 0), types.Position(0, 0))
        if start is None:
            return None
        cell, line = start
        end = self.to_cell(range_.end.line)
        if end is not None and end[0] is cell:
            return cell, types.Range(
                types.Position(line, range_.start.character),
                types.Position(end[1], range_.end.character),
            )
        if not cut or cell.document is None:
            return None
        width = codec.units(cell.document.line_text(line))
        return cell, types.Range(
            types.Position(line, range_.start.character), types.Position(line, width)
        )


class NotebookStore:
    """Open notebooks by URI, and which notebook each cell belongs to."""

    def __init__(self) -> None:
        self._notebooks: dict[str, Notebook] = {}
        self._owners: dict[str, str] = {}  # cell URI → notebook URI

    def add(self, notebook: Notebook) -> None:
        self._notebooks[notebook.uri] = notebook
        self.reindex(notebook)

    def reindex(self, notebook: Notebook) -> None:
        for uri, owner in list(self._owners.items()):
            if owner == notebook.uri:
                del self._owners[uri]
        for cell in notebook.cells:
            self._owners[cell.uri] = notebook.uri

    def get(self, uri: str) -> Notebook | None:
        return self._notebooks.get(uri)

    def remove(self, uri: str) -> Notebook | None:
        notebook = self._notebooks.pop(uri, None)
        if notebook is not None:
            for cell in notebook.cells:
                self._owners.pop(cell.uri, None)
        return notebook

    def owner(self, cell_uri: str) -> tuple[Notebook, Cell] | None:
        """The notebook and cell of a cell URI; None for any other document."""
        notebook = self._notebooks.get(self._owners.get(cell_uri, ""))
        cell = notebook.cell(cell_uri) if notebook is not None else None
        return (notebook, cell) if notebook is not None and cell is not None else None

    def __iter__(self):
        return iter(list(self._notebooks.values()))
