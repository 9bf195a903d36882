"""`--output-format github`: GitHub Actions workflow commands, one annotation per finding."""
from __future__ import annotations

from .model import RunResult

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render(result: RunResult) -> str:
    out = []
    for f in result.findings:
        if f.cell is not None:
            # A notebook finding's line is a line of a cell: GitHub would point at that line of the JSON file.
            out.append(
                f"::{_LEVEL[f.severity]} title={_escape_property(f'{f.code} {f.name}')},file={_escape_property(f.path)}"
                f"::{_escape(f'{f.code} cell {f.cell}, line {f.line}: {f.message}')}"
            )
            continue
        out.append(
            f"::{_LEVEL[f.severity]} title={_escape_property(f'{f.code} {f.name}')},file={_escape_property(f.path)},"
            f"line={f.line},col={f.column},endLine={f.end_line},endColumn={f.end_column}::{_escape(f'{f.code} {f.message}')}"
        )
    for path, message in result.errors:
        out.append(f"::error file={_escape_property(path)}::{_escape(message)}")
    return "\n".join(out)
