"""`--output-format pylint`: `path:line: [CODE] summary`, one line per finding, as ruff's pylint format
(and pylint's `parseable` one) prints them, for editors and CI parsers that read that shape.

A notebook finding's line is a line of a cell, which the format cannot say: the line is 1 (as ruff
writes it) and the cell and line start the text. A file that could not be checked is one line too."""
from __future__ import annotations

from .model import RunResult


def render(result: RunResult) -> str:
    out = []
    for f in result.findings:
        text = f.summary or f.message
        if f.cell is not None:
            out.append(f"{f.path}:1: [{f.code}] cell {f.cell}, line {f.line}: {text}")
        else:
            out.append(f"{f.path}:{f.line}: [{f.code}] {text}")
    for path, message in result.errors:
        out.append(f"{path}:1: [error] {message}")
    return "\n".join(out)
