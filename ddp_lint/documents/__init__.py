"""What a checked file is, apart from any analysis: `python` (a `.py` file or stdin) and `notebook`
(a `.ipynb` whose code cells make one program). A document gives the engine its program text, maps
a program line back to what the reader sees (`cell 3`, line 2), and rebuilds the file from a fixed
program. No engine, no modes and no output in here."""
from __future__ import annotations

from typing import Optional, Union

from .notebook import NotebookDocument
from .python import InputError, PythonDocument, decode, read_source

Document = Union[PythonDocument, NotebookDocument]


def load(path: str, raw: Optional[bytes] = None) -> Document:
    """The document at `path` (or made of `raw`, for stdin); InputError when it cannot be read."""
    source = decode(raw) if raw is not None else read_source(path)
    if path.endswith(".ipynb"):
        return NotebookDocument(path, source)
    return PythonDocument(path, source)


__all__ = ["Document", "InputError", "NotebookDocument", "PythonDocument", "load"]
