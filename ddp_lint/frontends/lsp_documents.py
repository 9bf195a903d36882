"""What the language server checks: an editor buffer frozen at one version, as a document the pipeline
reads, and where each of its findings lands in the editor.

A buffer is a Python text document or an LSP notebook document (its cells are separate text documents,
each with its own URI). A notebook becomes the nbformat 4 JSON that `documents/notebook.py` reads,
cells in the editor's order, so a finding's `cell` (1-based among all cells) names the cell document it
is on, and a fixed notebook's JSON gives each cell's new text back. The server reads the editor's
buffers into a `Snapshot` on its event loop and hands the snapshot to a worker thread: a snapshot never
changes, whatever the editor sends meanwhile.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

from pygls.uris import from_fs_path, to_fs_path

from ..documents import Document, NotebookDocument, PythonDocument
from ..documents.python import SourceText
from ..findings import Edit

# How the parser, and so every finding's line number, splits a text into lines (LSP counts the same
# three line ends; str.splitlines would also split on form feeds and U+2028).
LINE_BREAK = re.compile(r"\r\n|\r|\n")

PYTHON_SUFFIXES = (".py", ".pyi")


def split_lines(text: str) -> List[str]:
    return LINE_BREAK.split(text)


@lru_cache(maxsize=16)
def lines_of(text: str) -> Tuple[str, ...]:
    """A buffer's lines, split once for all the positions of one publication (a str keeps its hash)."""
    return tuple(split_lines(text))


def path_of(uri: str, root: str, suffix: str) -> str:
    """The file a buffer stands for: its path for a `file:` URI; an unsaved buffer is taken as a file
    in the workspace's root (its configuration governs it)."""
    path = to_fs_path(uri)
    if path:
        return os.path.normpath(path)
    name = os.path.basename(unquote(urlparse(uri).path)) or "untitled"
    return os.path.join(root, name if name.endswith(suffix) else name + suffix)


def file_uri(path: str) -> str:
    return from_fs_path(os.path.abspath(path))


@dataclass(frozen=True)
class Cell:
    uri: str
    version: Optional[int]
    code: bool  # a code cell (markdown and cells the editor does not sync are not)
    text: str


@dataclass(frozen=True)
class Place:
    """Where a program line is in the editor: a document's URI and 0-based line, with that line's text
    when the server holds the document (to count columns in the client's units)."""

    uri: str
    line: int
    text: Optional[str]


@dataclass(frozen=True)
class Snapshot:
    """One buffer as it was when a check began: a Python text (`text`) or a notebook (`cells`)."""

    uri: str  # the text document's, or the notebook's
    path: str
    version: Optional[int]
    text: Optional[str] = None
    cells: Tuple[Cell, ...] = ()

    @property
    def is_notebook(self) -> bool:
        return self.text is None

    def document(self) -> Document:
        if self.is_notebook:
            return NotebookDocument(self.path, source_text(notebook_json(self.cells)))
        return PythonDocument(self.path, source_text(self.text or ""))

    def texts(self) -> Dict[str, Tuple[str, Optional[int]]]:
        """Each editor document of the buffer: URI -> (text, version)."""
        if not self.is_notebook:
            return {self.uri: (self.text or "", self.version)}
        return {cell.uri: (cell.text, cell.version) for cell in self.cells}

    def place(self, path: str, cell: Optional[int], line: int) -> Optional[Place]:
        """The editor position of a finding's (or related location's) `path`, `cell` and 1-based `line`;
        None for a line the editor does not show (a notebook line outside every cell)."""
        if os.path.abspath(path) != os.path.abspath(self.path):
            return Place(file_uri(path), line - 1, None)
        if not self.is_notebook:
            return Place(self.uri, line - 1, _line(self.text or "", line))
        if cell is None or not 1 <= cell <= len(self.cells):
            return None
        target = self.cells[cell - 1]
        return Place(target.uri, line - 1, _line(target.text, line))

    def changed_cells(self, fixed_json: str) -> Dict[str, str]:
        """The new text of each cell a fixed notebook (the JSON `notebook_json` gave, fixed) changed."""
        cells = json.loads(fixed_json)["cells"]
        changed = {}
        for cell, fixed in zip(self.cells, cells):
            source = fixed.get("source", "")
            text = source if isinstance(source, str) else "".join(source)
            if cell.code and text != cell.text:
                changed[cell.uri] = text
        return changed


def _line(text: str, line: int) -> Optional[str]:
    lines = lines_of(text)
    return lines[line - 1] if 1 <= line <= len(lines) else None


def source_text(text: str) -> SourceText:
    """An editor buffer as the documents' source: already text (a coding cookie does not apply)."""
    return SourceText(text, "utf-8", False, text.encode("utf-8", "surrogatepass"))


def notebook_json(cells: Tuple[Cell, ...]) -> str:
    """The nbformat 4 notebook of these cells, in order (what `NotebookDocument` reads)."""
    document = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": cell.text}
            if cell.code
            else {"cell_type": "markdown", "metadata": {}, "source": cell.text}
            for cell in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1)


def apply_line_edit(text: str, edit: Edit) -> str:
    """A fix's `edit` (lines `line`..`end_line`, 1-based and inclusive, replaced by `content`) applied
    to the text it was computed on."""
    lines = text.splitlines(keepends=True)  # as the edit was computed (fixer/apply.py)
    return "".join(lines[: edit.line - 1]) + edit.content + "".join(lines[edit.end_line:])
